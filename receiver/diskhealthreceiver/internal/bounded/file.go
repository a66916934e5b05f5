package bounded

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Size caps, one per kind of file the receiver reads. A kernel file is far below its cap; a file that
// never ends (a FUSE file, a device node at a path under root_path) stops at it with ErrTooLarge instead
// of growing memory until the process is killed.
const (
	// Attr is a sysfs attribute: the kernel fills at most one page (up to 64 KiB on arm64).
	Attr = 64 << 10
	// Pressure is a PSI file: two lines.
	Pressure = 64 << 10
	// ProcStatus is /proc/self/status.
	ProcStatus = 64 << 10
	// ProcStat is /proc/stat: a line per CPU and the interrupt counts.
	ProcStat = 4 << 20
	// CgroupStat is a cgroup's io.stat or blkio file: 60 000 devices of short lines fit.
	CgroupStat = 4 << 20
	// Diskstats is /proc/diskstats: 10 000 devices are about 1.5 MB.
	Diskstats = 64 << 20
	// Mountinfo is a mount table: 200 000 mounts are about 30 MB.
	Mountinfo = 64 << 20
)

var (
	// ErrNotRegular is wrapped by the error for a path that is not a regular file: a FIFO, socket or
	// device node would block a read or never end. Kernel files in /proc, /sys and cgroupfs are regular.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is wrapped by the error for a file longer than its cap.
	ErrTooLarge = errors.New("longer than its size cap")
)

// DirFS is os.DirFS whose file reads go through ReadFile with one cap: fs.ReadFile(DirFS{…}, name) is
// bounded, and Open refuses what is not a regular file. Directory listings, links and stats are
// os.DirFS's.
type DirFS struct {
	Root  string
	Limit int
}

// NewDirFS returns a DirFS over root whose files are read up to limit bytes.
func NewDirFS(root string, limit int) DirFS { return DirFS{Root: root, Limit: limit} }

func (d DirFS) join(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return filepath.Join(d.Root, filepath.FromSlash(name)), nil
}

// Open opens a regular file (see OpenFD).
func (d DirFS) Open(name string) (fs.File, error) {
	path, err := d.join("open", name)
	if err != nil {
		return nil, err
	}
	return Open(path)
}

// ReadFile reads a regular file of at most d.Limit bytes.
func (d DirFS) ReadFile(name string) ([]byte, error) {
	path, err := d.join("read", name)
	if err != nil {
		return nil, err
	}
	b, err := ReadFile(path, d.Limit, nil)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// ReadDir lists a directory.
func (d DirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	return os.DirFS(d.Root).(fs.ReadDirFS).ReadDir(name)
}

// Stat stats a path, following links.
func (d DirFS) Stat(name string) (fs.FileInfo, error) { return os.DirFS(d.Root).(fs.StatFS).Stat(name) }

// ReadLink reads a symbolic link.
func (d DirFS) ReadLink(name string) (string, error) {
	return os.DirFS(d.Root).(fs.ReadLinkFS).ReadLink(name)
}

// Lstat stats a path without following a final link.
func (d DirFS) Lstat(name string) (fs.FileInfo, error) {
	return os.DirFS(d.Root).(fs.ReadLinkFS).Lstat(name)
}

package cgroupio

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// DirFS reads a mounted cgroup hierarchy (or a fixture tree) below a directory.
type DirFS struct {
	root   string
	dirent []byte // getdents buffer, reused
}

// NewDirFS returns an FS rooted at dir, e.g. /sys/fs/cgroup or /sys/fs/cgroup/blkio. Not safe for
// concurrent use.
func NewDirFS(dir string) *DirFS { return &DirFS{root: dir} }

// Root is the directory the FS reads below.
func (d *DirFS) Root() string { return d.root }

// ReadFile reads name with open, fstat, read and close and nothing else (bounded.ReadFile): no poller
// registration (os.Open tries one for every file), and no read to see EOF when the first read did not
// fill the buffer — kernfs hands out a whole seq_file in one read when it fits, as the kernel builds it in
// one pass. That matters when a scrape reads a thousand cgroups. A FIFO or device node is refused and a
// file past bounded.CgroupStat is an error, so a hostile tree can neither block nor grow a read.
func (d *DirFS) ReadFile(name string, buf []byte) ([]byte, error) {
	if cap(buf) < 4096 {
		buf = make([]byte, 0, 4096)
	}
	return bounded.ReadFile(filepath.Join(d.root, name), bounded.CgroupStat, buf)
}

// SubDirs lists child directories with getdents and the entries' d_type, so the dozens of control files
// in every cgroup directory cost neither an lstat nor an allocation each. Most cgroups are leaves, and
// cgroupfs (kernfs) and tmpfs count subdirectories in a directory's link count (2 + subdirectories), so
// one stat answers for them instead of an open, two getdents and a close.
func (d *DirFS) SubDirs(name string, dst []string) ([]string, error) {
	path := filepath.Join(d.root, name)
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return dst, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	if st.Nlink == 2 {
		return dst, nil
	}
	fd, err := open(path, syscall.O_RDONLY|syscall.O_DIRECTORY)
	if err != nil {
		return dst, err
	}
	defer func() { _ = syscall.Close(fd) }()
	if d.dirent == nil {
		d.dirent = make([]byte, 32<<10)
	}
	for {
		n, err := syscall.ReadDirent(fd, d.dirent)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return dst, &os.PathError{Op: "getdents", Path: path, Err: err}
		}
		if n <= 0 {
			return dst, nil
		}
		dst = appendDirs(d.dirent[:n], dst, func(child string) bool {
			// DT_UNKNOWN (filesystems without d_type): ask.
			fi, err := os.Lstat(filepath.Join(path, child))
			return err == nil && fi.IsDir()
		})
	}
}

func open(path string, flags int) (int, error) {
	for {
		fd, err := syscall.Open(path, flags|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// linux_dirent64: ino u64, off s64, reclen u16, type u8, name NUL-terminated.
const (
	direntReclen = 16
	direntType   = 18
	direntName   = 19
	dtUnknown    = 0
	dtDir        = 4
)

func appendDirs(buf []byte, dst []string, isDir func(string) bool) []string {
	for len(buf) >= direntName {
		reclen := int(binary.NativeEndian.Uint16(buf[direntReclen:]))
		if reclen < direntName || reclen > len(buf) {
			return dst
		}
		rec := buf[:reclen]
		buf = buf[reclen:]
		nameBytes := rec[direntName:]
		if i := bytes.IndexByte(nameBytes, 0); i >= 0 {
			nameBytes = nameBytes[:i]
		}
		if len(nameBytes) == 0 || string(nameBytes) == "." || string(nameBytes) == ".." {
			continue
		}
		switch rec[direntType] {
		case dtDir:
			dst = append(dst, string(nameBytes))
		case dtUnknown:
			if n := string(nameBytes); isDir(n) {
				dst = append(dst, n)
			}
		}
	}
	return dst
}

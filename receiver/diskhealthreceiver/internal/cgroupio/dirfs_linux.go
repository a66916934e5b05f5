package cgroupio

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

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

// ReadFile reads name with open, fstat, read and close and nothing else (bounded.ReadFD): no poller
// registration (os.Open tries one for every file), and no read to see EOF when the first read did not
// fill the buffer — kernfs hands out a whole seq_file in one read when it fits, as the kernel builds it in
// one pass. That matters when a scrape reads a thousand cgroups. A FIFO or device node is refused and a
// file past bounded.CgroupStat is an error, so a hostile tree can neither block nor grow a read.
func (d *DirFS) ReadFile(name string, buf []byte) ([]byte, error) {
	if cap(buf) < 4096 {
		buf = make([]byte, 0, 4096)
	}
	path := filepath.Join(d.root, name)
	dirfd, rel, err := at(path)
	if err != nil {
		return buf[:0], err
	}
	defer closeDir(dirfd)
	fd, err := bounded.OpenAtFD(dirfd, rel, path)
	if err != nil {
		return buf[:0], err
	}
	defer func() { _ = unix.Close(fd) }() // read-only: a failed close loses nothing
	return bounded.ReadFD(fd, path, bounded.CgroupStat, buf)
}

// SubDirs lists child directories with getdents and the entries' d_type, so the dozens of control files
// in every cgroup directory cost neither an lstat nor an allocation each. Most cgroups are leaves, and
// cgroupfs (kernfs) and tmpfs count subdirectories in a directory's link count (2 + subdirectories), so
// one stat answers for them instead of an open, two getdents and a close.
func (d *DirFS) SubDirs(name string, dst []string) ([]string, error) {
	path := filepath.Join(d.root, name)
	dirfd, rel, err := at(path)
	if err != nil {
		return dst, err
	}
	defer closeDir(dirfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return dst, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	if st.Nlink == 2 {
		return dst, nil
	}
	fd, err := openat(dirfd, rel, path, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return dst, err
	}
	defer func() { _ = unix.Close(fd) }()
	if d.dirent == nil {
		d.dirent = make([]byte, 32<<10)
	}
	for {
		n, err := unix.ReadDirent(fd, d.dirent)
		if err == unix.EINTR {
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
			var st unix.Stat_t
			return unix.Fstatat(fd, child, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
		})
	}
}

// pathMax is the kernel's PATH_MAX: a longer path is refused by every system call with ENAMETOOLONG.
const pathMax = 4096

// at returns a directory and a name relative to it that together are path: AT_FDCWD and path itself
// when it is shorter than PATH_MAX; else (a branch max_depth deep of long cgroup names) a directory
// opened piece by piece, each piece shorter than PATH_MAX and relative to the one before (openat), so
// that no cgroup is lost to its depth. closeDir closes the directory.
func at(path string) (dirfd int, rel string, err error) {
	dirfd, rel = unix.AT_FDCWD, path
	for len(rel) >= pathMax {
		cut := strings.LastIndexByte(rel[:pathMax-1], '/')
		if cut <= 0 {
			closeDir(dirfd)
			return -1, "", &os.PathError{Op: "open", Path: path, Err: unix.ENAMETOOLONG}
		}
		next, err := openat(dirfd, rel[:cut], path, unix.O_PATH|unix.O_DIRECTORY)
		closeDir(dirfd)
		if err != nil {
			return -1, "", err
		}
		dirfd, rel = next, rel[cut+1:]
	}
	return dirfd, rel, nil
}

func closeDir(dirfd int) {
	if dirfd != unix.AT_FDCWD {
		_ = unix.Close(dirfd)
	}
}

// openat opens name relative to dirfd; path names it in errors.
func openat(dirfd int, name, path string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
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

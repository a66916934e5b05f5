package cgroupio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
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

// maxFile bounds a read: io.stat of a cgroup with a thousand devices stays far below it.
const maxFile = 4 << 20

// ReadFile reads name with open, read and close; cgroup files report size 0, so there is no stat.
func (d *DirFS) ReadFile(name string, buf []byte) ([]byte, error) {
	f, err := os.Open(filepath.Join(d.root, name))
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	if cap(buf) < 4096 {
		buf = make([]byte, 0, 4096)
	}
	buf = buf[:0]
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) {
			if cap(buf) >= maxFile {
				return buf, fmt.Errorf("%s: larger than %d bytes", filepath.Join(d.root, name), maxFile)
			}
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// SubDirs lists child directories with getdents and the entries' d_type, so the dozens of control files
// in every cgroup directory cost neither an lstat nor an allocation each.
func (d *DirFS) SubDirs(name string, dst []string) ([]string, error) {
	f, err := os.Open(filepath.Join(d.root, name))
	if err != nil {
		return dst, err
	}
	defer f.Close()
	fd := int(f.Fd())
	if d.dirent == nil {
		d.dirent = make([]byte, 32<<10)
	}
	for {
		n, err := syscall.ReadDirent(fd, d.dirent)
		if err != nil {
			return dst, &os.PathError{Op: "getdents", Path: filepath.Join(d.root, name), Err: err}
		}
		if n <= 0 {
			return dst, nil
		}
		dst = appendDirs(d.dirent[:n], dst, func(child string) bool {
			// DT_UNKNOWN (filesystems without d_type): ask.
			fi, err := os.Lstat(filepath.Join(d.root, name, child))
			return err == nil && fi.IsDir()
		})
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

//go:build unix

package bounded

import (
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// OpenFD opens path read-only without blocking (opening a FIFO waits for a writer otherwise) and
// refuses anything but a regular file. The caller closes the descriptor. Errors are *fs.PathError.
func OpenFD(path string) (int, error) { return OpenAtFD(unix.AT_FDCWD, path, path) }

// OpenAtFD is OpenFD of name relative to the directory dirfd (openat(2)); path names the file in errors.
func OpenAtFD(dirfd int, name, path string) (int, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return -1, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(fd)
		return -1, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (mode %#o)", ErrNotRegular, st.Mode&unix.S_IFMT)}
	}
	return fd, nil
}

// Open is OpenFD returning an *os.File.
func Open(path string) (*os.File, error) {
	fd, err := OpenFD(path)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ReadFile reads the whole of path, at most limit bytes, into buf[:0] (grown when it does not fit) and
// returns it. The file is opened as OpenFD does; a longer file is an error wrapping ErrTooLarge.
func ReadFile(path string, limit int, buf []byte) ([]byte, error) {
	fd, err := OpenFD(path)
	if err != nil {
		return buf[:0], err
	}
	defer func() { _ = unix.Close(fd) }() // read-only: a failed close loses nothing
	return ReadFD(fd, path, limit, buf)
}

// ReadRecords is ReadFile for a file of many seq_file records (/proc/<pid>/mountstats, mountinfo,
// kallsyms): the kernel fills each read with the records that fit in its page-sized buffer, so a read
// short of the caller's buffer is no end of file there. It reads until a read returns nothing.
func ReadRecords(path string, limit int, buf []byte) ([]byte, error) {
	fd, err := OpenFD(path)
	if err != nil {
		return buf[:0], err
	}
	defer func() { _ = unix.Close(fd) }() // read-only: a failed close loses nothing
	return readFD(fd, path, limit, buf, true)
}

// ReadFD reads fd from its offset to the end, at most limit bytes, into buf[:0]. Reading stops when a
// read does not fill the buffer: kernfs, procfs and sysfs hand out a whole file in one read when it
// fits, as the kernel builds it in one pass (not a file of many seq_file records: ReadRecords).
func ReadFD(fd int, path string, limit int, buf []byte) ([]byte, error) {
	return readFD(fd, path, limit, buf, false)
}

// readFD is ReadFD; toEOF: only a read that returns nothing ends the file.
func readFD(fd int, path string, limit int, buf []byte, toEOF bool) ([]byte, error) {
	if cap(buf) == 0 {
		buf = make([]byte, 0, min(4096, limit+1))
	}
	buf = buf[:0]
	for {
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return buf, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return buf[:0], &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w of %d bytes", ErrTooLarge, limit)}
		}
		if n == 0 || (!toEOF && len(buf) < cap(buf)) {
			return buf, nil
		}
		if len(buf) == cap(buf) {
			buf = grow(buf, limit)
		}
	}
}

// grow doubles buf's capacity, to at most limit+1 (one byte past the cap tells a file at the cap from
// a longer one).
func grow(buf []byte, limit int) []byte {
	next := make([]byte, len(buf), min(2*cap(buf), limit+1))
	copy(next, buf)
	return next
}

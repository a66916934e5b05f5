//go:build !unix

package bounded

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Open opens path read-only and refuses anything but a regular file. The receiver runs on Linux only;
// this keeps the module building elsewhere.
func Open(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	return f, nil
}

// ReadFile reads the whole of path, at most limit bytes, into buf[:0]; a longer file is an error
// wrapping ErrTooLarge.
func ReadFile(path string, limit int, buf []byte) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return buf[:0], err
	}
	defer func() { _ = f.Close() }() // read-only: a failed close loses nothing
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return buf[:0], &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if len(b) > limit {
		return buf[:0], &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w of %d bytes", ErrTooLarge, limit)}
	}
	return append(buf[:0], b...), nil
}

// ReadRecords is ReadFile: it reads to the end of the file (on Unix it differs for seq_file files).
func ReadRecords(path string, limit int, buf []byte) ([]byte, error) {
	return ReadFile(path, limit, buf)
}

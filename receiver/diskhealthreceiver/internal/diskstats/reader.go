package diskstats

import (
	"errors"
	"fmt"
	"io"
	"os"
)

const (
	initialReadBuffer = 64 << 10
	// maxFileSize stops a misconfigured path (say, a device node) from
	// growing the buffer without bound. /proc/diskstats with 10,000 devices
	// is about 1.5 MB.
	maxFileSize = 64 << 20
)

// FileReader reads a whole small file, such as /proc/diskstats, into a buffer
// it reuses, so steady-state reads allocate nothing.
//
// The file stays open between calls and is read with pread at offset 0:
// procfs regenerates the content on each such read, and a reopen would cost
// allocations and two more syscalls every scrape. The flip side: a file
// replaced by rename is not noticed (rewrite fixtures in place, or use a new
// FileReader). Call Close when done. A FileReader is not safe for concurrent
// use; its zero value is ready to use.
type FileReader struct {
	path string
	f    *os.File
	buf  []byte
}

// Read returns the whole content of the file at path. The slice is valid
// until the next call. Errors name the path.
func (r *FileReader) Read(path string) ([]byte, error) {
	if r.f == nil || r.path != path {
		_ = r.Close() // read-only: a failed close loses nothing
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("diskstats: %w", err)
		}
		r.f, r.path = f, path
	}
	if r.buf == nil {
		r.buf = make([]byte, initialReadBuffer)
	}
	for {
		// One read for the whole file: seq_file content read in chunks
		// could mix two kernel snapshots.
		n, err := r.f.ReadAt(r.buf, 0)
		if errors.Is(err, io.EOF) || (err == nil && n < len(r.buf)) {
			return r.buf[:n], nil
		}
		if err != nil {
			// Reopen next time: the error may be tied to this open file.
			_ = r.Close()
			return nil, fmt.Errorf("diskstats: %w", err)
		}
		if len(r.buf) >= maxFileSize {
			return nil, fmt.Errorf("diskstats: %s: larger than %d bytes", path, maxFileSize)
		}
		r.buf = make([]byte, 2*len(r.buf))
	}
}

// Close closes the file kept open by Read. The buffer is kept for reuse.
func (r *FileReader) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f, r.path = nil, ""
	if err != nil {
		return fmt.Errorf("diskstats: %w", err)
	}
	return nil
}

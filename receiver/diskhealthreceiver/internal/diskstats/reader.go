package diskstats

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

const (
	initialReadBuffer = 64 << 10
	// maxFileSize stops a file that never ends from growing the buffer
	// without bound (a device node or FIFO is refused at open).
	maxFileSize = bounded.Diskstats
)

// FileReader reads a whole small file, such as /proc/diskstats, into a buffer
// it reuses, so steady-state reads allocate nothing.
//
// The file stays open between calls and is read with pread at offset 0:
// procfs regenerates the content on each such read, and a reopen would cost
// allocations and two more syscalls every scrape. A file replaced by rename
// (a new inode at the path: a fixture tree, a bind mount remounted) would
// then be read forever from the old inode, its values frozen, so every read
// checks that the open file still has a name (fstat, no allocation: a file
// renamed over or removed has none, and is reopened at once), and every
// checkEvery-th read stats the path and reopens it when it is another file
// (a mount over it) or gone (a gone file is then an error naming the path);
// a read error reopens at once. Call Close when done. A FileReader is not safe for
// concurrent use; its zero value is ready to use.
type FileReader struct {
	// Open opens the file; nil means bounded.Open (a FIFO or device is refused). Tests count the reads
	// through it.
	Open func(name string) (File, error)

	path  string
	f     File
	fi    os.FileInfo // f's, at open: what the path must still name
	reads int         // reads of f since it was opened
	buf   []byte
}

// checkEvery is how often (in reads) the path is checked for a new file: a
// stat costs a few allocations, so not every scrape, yet a replaced file is
// noticed within a few scrapes.
const checkEvery = 4

// Read returns the whole content of the file at path. The slice is valid
// until the next call. Errors name the path.
func (r *FileReader) Read(path string) ([]byte, error) {
	if r.f != nil && r.path == path {
		r.reads++
		if unlinked(r.f) || r.reads%checkEvery == 0 && r.replaced() {
			_ = r.Close()
		}
	}
	if r.f == nil || r.path != path {
		_ = r.Close() // read-only: a failed close loses nothing
		f, err := r.open(path)
		if err != nil {
			return nil, fmt.Errorf("diskstats: %w", err)
		}
		fi, err := f.Stat()
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("diskstats: %w", err)
		}
		r.f, r.fi, r.path, r.reads = f, fi, path, 0
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

// File is what FileReader uses of an open file (an *os.File).
type File interface {
	io.ReaderAt
	io.Closer
	Stat() (fs.FileInfo, error)
}

func (r *FileReader) open(path string) (File, error) {
	if r.Open != nil {
		return r.Open(path)
	}
	f, err := bounded.Open(path)
	if err != nil {
		return nil, err // a nil *os.File in the interface would not be nil
	}
	return f, nil
}

// replaced reports whether the path no longer names the open file: renamed
// over, or removed.
func (r *FileReader) replaced() bool {
	fi, err := os.Stat(r.path)
	return err != nil || !os.SameFile(fi, r.fi)
}

// Close closes the file kept open by Read. The buffer is kept for reuse.
func (r *FileReader) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f, r.fi, r.path = nil, nil, ""
	if err != nil {
		return fmt.Errorf("diskstats: %w", err)
	}
	return nil
}

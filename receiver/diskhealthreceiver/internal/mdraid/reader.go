package mdraid

import (
	"context"
	"io/fs"
	"sync"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// DefaultTimeout bounds one array's read. A healthy array answers in
// microseconds; one that takes seconds is stuck on its reconfiguration lock.
const DefaultTimeout = 2 * time.Second

// Result is one array's outcome of a Read.
type Result struct {
	Array Array
	// Err is a listing or attribute error (Array is partly filled), an
	// error wrapping bounded.ErrTimeout or bounded.ErrInFlight (only
	// Array.Name is set), or the context's error.
	Err error
}

// Reader reads every array with a deadline each. Safe for concurrent use.
type Reader struct {
	sys     fs.FS
	timeout time.Duration
	guard   bounded.Guard
}

// NewReader returns a Reader of the sysfs tree sys (rooted at /sys).
// timeout <= 0 takes DefaultTimeout.
func NewReader(sys fs.FS, timeout time.Duration) *Reader {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Reader{sys: sys, timeout: timeout}
}

// Read lists the arrays and reads each in its own goroutine. The listing
// error (sysfs has no block directory) is returned on its own; results
// are sorted by name.
func (r *Reader) Read(ctx context.Context) ([]Result, error) {
	names, err := bounded.Do(ctx, &r.guard, "list", r.timeout, func() ([]string, error) { return ListArrays(r.sys) })
	if err != nil {
		return nil, err
	}
	results := make([]Result, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			a, err := bounded.Do(ctx, &r.guard, name, r.timeout, func() (Array, error) { return ReadArray(r.sys, name) })
			if a.Name == "" {
				a.Name = name
			}
			results[i] = Result{Array: a, Err: err}
		})
	}
	wg.Wait()
	return results, nil
}

// Wait blocks until every read this Reader abandoned has returned (tests,
// shutdown).
func (r *Reader) Wait() { r.guard.Wait() }

package dm

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

const guardKey = "dm-control"

// DefaultTimeout bounds one scrape's ioctls. A DM_TABLE_STATUS answers in
// microseconds; a pool whose metadata device hangs can take as long as its
// I/O does.
const DefaultTimeout = 2 * time.Second

// ReaderConfig configures a Reader. Zero values take the defaults.
type ReaderConfig struct {
	ControlPath string        // default ControlPath
	Timeout     time.Duration // default DefaultTimeout
	// Open replaces OpenControl (tests).
	Open func(path string) (*Client, func() error, error)
}

// Reader lists dm devices and reads their status, all through one
// bounded.Guard key: the ioctls share the control node and the dm
// locks, so one stuck call makes the next scrape report
// bounded.ErrInFlight instead of queuing behind it.
type Reader struct {
	cfg   ReaderConfig
	guard bounded.Guard

	mu      sync.Mutex
	client  *Client
	close   func() error
	closing atomic.Bool // Close was called while a read was in flight
}

// NewReader returns a Reader; the control node is opened on first Read.
func NewReader(cfg ReaderConfig) *Reader {
	if cfg.ControlPath == "" {
		cfg.ControlPath = ControlPath
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Open == nil {
		cfg.Open = func(path string) (*Client, func() error, error) {
			c, err := OpenControl(path)
			if err != nil {
				return nil, nil, err
			}
			return c.Client, c.Close, nil
		}
	}
	return &Reader{cfg: cfg}
}

// Read returns every dm device with its targets' status and table lines.
// A device that vanished between the listing and its status read is left
// out; any other per-device error is returned joined with the devices
// that were read. Errors to expect: *PermissionError (errors.Is
// ErrPermission), ErrUnsupported, bounded.ErrTimeout / ErrInFlight.
func (r *Reader) Read(ctx context.Context) ([]Device, error) {
	return bounded.Do(ctx, &r.guard, guardKey, r.cfg.Timeout, r.read)
}

func (r *Reader) read() ([]Device, error) {
	r.mu.Lock()
	defer func() {
		if r.closing.Load() {
			_ = r.closeLocked() // Close asked while the read ran; the read's own result is what matters here
		}
		r.mu.Unlock()
	}()
	if r.client == nil {
		c, closeFn, err := r.cfg.Open(r.cfg.ControlPath)
		if err != nil {
			return nil, err
		}
		if _, err := c.Version(); err != nil {
			_ = closeFn()
			return nil, err
		}
		r.client, r.close = c, closeFn
	}
	devs, err := r.client.List()
	if err != nil {
		return nil, err
	}
	out := devs[:0]
	var errs []error
	for i := range devs {
		d := devs[i]
		if err := r.client.Status(&d); err != nil {
			if isNoDevice(err) {
				continue
			}
			errs = append(errs, err)
			continue
		}
		out = append(out, d)
	}
	return out, joinErrors(errs)
}

// Close releases the control node. It never waits for a stuck ioctl: a
// read in flight closes the node itself when it returns.
func (r *Reader) Close() error {
	if r.guard.Busy(guardKey) {
		r.closing.Store(true)
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closeLocked()
}

func (r *Reader) closeLocked() error {
	r.closing.Store(false)
	if r.close == nil {
		return nil
	}
	err := r.close()
	r.client, r.close = nil, nil
	return err
}

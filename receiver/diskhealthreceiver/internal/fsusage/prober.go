package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import "time"

// Prober defaults.
const (
	DefaultTimeout         = 2 * time.Second
	DefaultRemoteTimeout   = 5 * time.Second
	DefaultConcurrency     = 4
	DefaultReprobeInterval = 30 * time.Second
)

// ProberConfig configures a Prober. Zero values take the defaults.
type ProberConfig struct {
	// Timeout bounds a statfs of a local or memory filesystem. A local
	// statfs takes microseconds; one that takes seconds is a hung device.
	Timeout time.Duration
	// RemoteTimeout bounds a statfs of a ClassRemote filesystem, whose
	// answer is a round trip to a server or a FUSE daemon.
	RemoteTimeout time.Duration
	// Concurrency is the number of statfs calls a scrape runs at once. A
	// call that times out gives its slot back at once.
	Concurrency int
	// ReprobeInterval is how often a stuck mount is tried again in the
	// background, once its outstanding call has returned.
	ReprobeInterval time.Duration
	// Statfs replaces unix.Statfs.
	Statfs StatfsFunc
	// OnStateChange is called once for each change of a mount's status,
	// never for a status repeated scrape after scrape, nor for a first
	// success. Calls are serialised but may come from a background
	// goroutine (a stuck mount recovering between scrapes).
	OnStateChange func(StateChange)
}

// StateChange is a mount's status moving from one value to another.
type StateChange struct {
	Mount    Mount
	From, To Status
	Err      error // the error behind To; nil for StatusOK
}

// Result is one mount's outcome in a scrape.
type Result struct {
	Mount  *Mount // points into the slice given to Probe
	Status Status
	// Err is the cause of a non-OK status: a *fs.PathError for a failed
	// statfs, ErrTimeout, ErrStuck, or the context's error.
	Err   error
	Usage Usage // valid when Status is StatusOK
	// ReadOnly is Mount.ReadOnly or, when statfs answered for a mount the
	// collector sees directly (Path == MountPoint), its live ST_RDONLY
	// flag. Under root_path that flag describes the container's bind of
	// the host filesystem, typically read-only on purpose, so it is not
	// used there.
	ReadOnly bool
	// Domain and Forecast are set by Collector.Collect.
	Domain   Domain
	Forecast Forecast
}

package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// StatfsFunc is the statfs system call; tests inject doubles.
type StatfsFunc func(path string, st *unix.Statfs_t) error

var (
	// ErrTimeout means this scrape's statfs exceeded the timeout; the mount is
	// now stuck.
	ErrTimeout = errors.New("statfs did not return within the timeout")
	// ErrStuck means this scrape did not call statfs because an earlier call has
	// not returned, or timed out and no re-probe has succeeded since.
	ErrStuck = errors.New("statfs skipped: an earlier call is outstanding or timed out without a successful re-probe since")
)

// StatusOf maps a statfs error to a Status.
func StatusOf(err error) Status {
	switch {
	case err == nil:
		return StatusOK
	case errors.Is(err, ErrTimeout), errors.Is(err, ErrStuck):
		return StatusTimeout
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return StatusPermission
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return StatusNotFound
	case errors.Is(err, unix.EIO), errors.Is(err, unix.ESTALE), errors.Is(err, unix.ENOTCONN),
		errors.Is(err, unix.ETIMEDOUT), errors.Is(err, unix.EREMOTEIO), errors.Is(err, unix.EHOSTDOWN):
		return StatusIOError
	}
	return StatusError
}

// Prober runs statfs on mounts with deadlines, so that a hung filesystem
// never holds up a scrape:
//
//   - A scrape runs at most Concurrency calls at once. A call that passes
//     its timeout is abandoned: the scrape reports StatusTimeout for it
//     without waiting, hands its slot to a new worker, and marks the mount
//     stuck. (A system call cannot be cancelled; its goroutine stays
//     blocked in the kernel until the call returns.)
//   - A mount never has more than one outstanding call. While it is stuck,
//     scrapes report StatusTimeout without calling statfs.
//   - Once the abandoned call has returned, the same goroutine re-probes
//     the mount at once and then every ReprobeInterval. Only a re-probe that succeeds
//     within the timeout un-sticks it; an error (say EIO after an NFS
//     soft timeout) keeps it stuck, so a sick mount does not hang every
//     other scrape.
//
// Mounts are keyed by Path. A Prober is safe for concurrent use.
type Prober struct {
	cfg    ProberConfig
	statfs StatfsFunc
	tick   time.Duration

	mu     sync.Mutex
	states map[string]*mountState
	gen    uint64

	cbMu      sync.Mutex
	quit      chan struct{}
	closeOnce sync.Once
}

type mountState struct {
	path    string
	mount   Mount // latest copy, for StateChange
	timeout time.Duration
	status  Status
	gen     uint64 // last Probe that listed the mount
	first   int    // its index in that Probe, for duplicate paths

	inflight bool // a statfs for path has not returned
	stuck    bool
	bg       bool // a goroutine owns the mount's re-probing
	gone     bool // no longer listed; forget once nothing runs for it
}

// NewProber validates cfg and fills in defaults.
func NewProber(cfg ProberConfig) (*Prober, error) {
	if cfg.Timeout < 0 || cfg.RemoteTimeout < 0 || cfg.Concurrency < 0 || cfg.ReprobeInterval < 0 {
		return nil, fmt.Errorf("statfs prober: negative timeout, concurrency or re-probe interval: %+v", cfg)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.RemoteTimeout == 0 {
		cfg.RemoteTimeout = DefaultRemoteTimeout
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.ReprobeInterval == 0 {
		cfg.ReprobeInterval = DefaultReprobeInterval
	}
	p := &Prober{
		cfg:    cfg,
		statfs: cfg.Statfs,
		states: make(map[string]*mountState),
		quit:   make(chan struct{}),
	}
	if p.statfs == nil {
		p.statfs = unix.Statfs
	}
	// The watchdog's period bounds how late a timeout is noticed: 5 %.
	p.tick = max(min(cfg.Timeout, cfg.RemoteTimeout)/20, time.Millisecond)
	return p, nil
}

// Close stops background re-probes. A goroutine blocked in statfs ends
// when the call returns. Probe must not be called after Close.
func (p *Prober) Close() {
	p.closeOnce.Do(func() { close(p.quit) })
}

// scrape is one Probe call.
type scrape struct {
	p       *Prober
	mounts  []Mount
	results []Result
	states  []*mountState // by mount index
	jobs    []int         // mount indices to statfs
	next    int           // next job to start
	slots   []*slot
	left    int // jobs without a result
	done    chan struct{}
	ended   bool // cancelled: start nothing more
	changes []StateChange
}

// slot is one worker's current call.
type slot struct {
	busy      bool
	idx       int
	deadline  time.Time
	abandoned bool
	// st is the worker's statfs buffer, reused across its calls (it would
	// escape to the heap on every call through the function value).
	st unix.Statfs_t
}

// Probe runs statfs on every mount and returns their results in order.
// It returns within about the largest timeout after the last call could
// start, whatever the filesystems do: with k mounts hanging at once for the
// first time, ceil(k/Concurrency) timeouts. A ctx that ends first ends the
// scrape: calls still running or not started report StatusTimeout with
// ctx's error, without marking anything stuck. Mounts not listed are
// forgotten.
func (p *Prober) Probe(ctx context.Context, mounts []Mount) []Result {
	sc := &scrape{
		p:       p,
		mounts:  mounts,
		results: make([]Result, len(mounts)),
		states:  make([]*mountState, len(mounts)),
		done:    make(chan struct{}),
	}
	var dups [][2]int

	p.mu.Lock()
	p.gen++
	gen := p.gen
	for i := range mounts {
		m := &mounts[i]
		r := &sc.results[i]
		r.Mount, r.ReadOnly = m, m.ReadOnly
		ms := p.states[m.Path]
		if ms == nil {
			ms = &mountState{path: m.Path}
			p.states[m.Path] = ms
		} else if ms.gen == gen {
			dups = append(dups, [2]int{i, ms.first})
			continue
		}
		ms.gen, ms.first, ms.gone = gen, i, false
		ms.mount = *m
		ms.timeout = p.timeoutFor(m)
		sc.states[i] = ms
		if ms.stuck || ms.inflight {
			r.Status, r.Err = StatusTimeout, ErrStuck
			continue
		}
		sc.jobs = append(sc.jobs, i)
	}
	sc.left = len(sc.jobs)
	if sc.left == 0 {
		close(sc.done)
	}
	for range min(p.cfg.Concurrency, len(sc.jobs)) {
		sc.startWorker()
	}
	p.mu.Unlock()

	sc.watch(ctx)

	p.mu.Lock()
	for path, ms := range p.states {
		if ms.gen != gen {
			ms.gone = true
			p.forget(path, ms)
		}
	}
	changes := sc.changes
	sc.changes = nil
	p.mu.Unlock()

	for _, d := range dups {
		r := sc.results[d[1]]
		r.Mount = &mounts[d[0]]
		r.ReadOnly = r.ReadOnly || mounts[d[0]].ReadOnly
		sc.results[d[0]] = r
	}
	p.notify(changes...)
	return sc.results
}

func (p *Prober) timeoutFor(m *Mount) time.Duration {
	if m.Class == ClassRemote {
		return p.cfg.RemoteTimeout
	}
	return p.cfg.Timeout
}

// startWorker runs a worker on a fresh slot. Called with p.mu held.
func (sc *scrape) startWorker() {
	s := &slot{}
	sc.slots = append(sc.slots, s)
	go sc.work(s)
}

func (sc *scrape) work(s *slot) {
	p := sc.p
	for {
		p.mu.Lock()
		if sc.ended || sc.next >= len(sc.jobs) {
			p.mu.Unlock()
			return
		}
		i := sc.jobs[sc.next]
		sc.next++
		ms := sc.states[i]
		ms.inflight = true
		s.busy, s.idx, s.deadline = true, i, time.Now().Add(ms.timeout)
		path := ms.path
		p.mu.Unlock()

		err := p.statfs(path, &s.st)

		p.mu.Lock()
		ms.inflight = false
		if s.abandoned {
			// The scrape has moved on. If the mount was marked stuck, this
			// goroutine, whose call just returned, becomes its re-prober.
			own := ms.stuck && !ms.bg && !ms.gone
			if own {
				ms.bg = true
			}
			p.forget(path, ms)
			p.mu.Unlock()
			if own {
				p.reprobe(ms)
			}
			return
		}
		s.busy = false
		r := &sc.results[i]
		if err != nil {
			r.Err = &fs.PathError{Op: "statfs", Path: path, Err: err}
		} else {
			r.Usage = UsageFromStatfs(&s.st)
			r.ReadOnly = r.ReadOnly || (r.Usage.ReadOnly && r.Mount.Path == r.Mount.MountPoint)
		}
		r.Status = StatusOf(err)
		sc.setStatus(ms, r.Status, r.Err)
		sc.left--
		if sc.left == 0 {
			close(sc.done)
		}
		p.mu.Unlock()
	}
}

// watch waits for every job's result, abandoning calls that pass their
// deadline and ending everything when ctx does.
func (sc *scrape) watch(ctx context.Context) {
	p := sc.p
	t := time.NewTicker(p.tick)
	defer t.Stop()
	for {
		select {
		case <-sc.done:
			return
		case now := <-t.C:
			p.mu.Lock()
			sc.expire(now)
			p.mu.Unlock()
		case <-ctx.Done():
			p.mu.Lock()
			sc.cancel(ctx.Err())
			p.mu.Unlock()
			return
		}
	}
}

// expire abandons calls past their deadline. Called with p.mu held.
func (sc *scrape) expire(now time.Time) {
	for _, s := range sc.slots {
		if !s.busy || s.abandoned || now.Before(s.deadline) {
			continue
		}
		s.abandoned = true
		ms := sc.states[s.idx]
		ms.stuck = true
		sc.results[s.idx].Status, sc.results[s.idx].Err = StatusTimeout, ErrTimeout
		sc.setStatus(ms, StatusTimeout, ErrTimeout)
		sc.left--
		if sc.left == 0 {
			close(sc.done)
		} else if sc.next < len(sc.jobs) {
			// Give the slot back: a hung call must not starve the others.
			sc.startWorker()
		}
	}
}

// cancel ends the scrape early. Called with p.mu held.
func (sc *scrape) cancel(err error) {
	sc.ended = true
	for _, s := range sc.slots {
		if s.busy && !s.abandoned {
			s.abandoned = true
			sc.results[s.idx].Status, sc.results[s.idx].Err = StatusTimeout, err
		}
	}
	for _, i := range sc.jobs[sc.next:] {
		sc.results[i].Status, sc.results[i].Err = StatusTimeout, err
	}
	sc.next = len(sc.jobs)
}

// setStatus records a mount's status and queues a StateChange if it
// changed. Called with p.mu held.
func (sc *scrape) setStatus(ms *mountState, to Status, err error) {
	if c, ok := ms.transition(to, err); ok {
		sc.changes = append(sc.changes, c)
	}
}

func (ms *mountState) transition(to Status, err error) (StateChange, bool) {
	from := ms.status
	ms.status = to
	if from == to || (from == StatusUnknown && to == StatusOK) {
		return StateChange{}, false
	}
	return StateChange{Mount: ms.mount, From: from, To: to, Err: err}, true
}

// reprobe retries a stuck mount until a statfs succeeds within the
// timeout, the mount is no longer listed, or the Prober is closed. It runs
// once the hung call has returned, which often means the server is back, so
// the first retry is at once and later ones every ReprobeInterval.
func (p *Prober) reprobe(ms *mountState) {
	t := time.NewTimer(0)
	defer t.Stop()
	var st unix.Statfs_t
	for {
		select {
		case <-p.quit:
			p.mu.Lock()
			ms.bg = false
			p.forget(ms.path, ms)
			p.mu.Unlock()
			return
		case <-t.C:
		}
		p.mu.Lock()
		if ms.gone {
			ms.bg = false
			p.forget(ms.path, ms)
			p.mu.Unlock()
			return
		}
		ms.inflight = true
		timeout := ms.timeout
		p.mu.Unlock()

		start := time.Now()
		err := p.statfs(ms.path, &st)
		healthy := err == nil && time.Since(start) <= timeout

		p.mu.Lock()
		ms.inflight = false
		if healthy && !ms.gone {
			ms.stuck, ms.bg = false, false
			c, changed := ms.transition(StatusOK, nil)
			p.mu.Unlock()
			if changed {
				p.notify(c)
			}
			return
		}
		p.mu.Unlock()
		t.Reset(p.cfg.ReprobeInterval)
	}
}

// forget drops the state of a mount that is no longer listed once nothing
// runs for it; until then it stays, so that a mount listed again cannot
// get a second outstanding call. Called with p.mu held.
func (p *Prober) forget(path string, ms *mountState) {
	if ms.gone && !ms.inflight && !ms.bg && p.states[path] == ms {
		delete(p.states, path)
	}
}

func (p *Prober) notify(changes ...StateChange) {
	if p.cfg.OnStateChange == nil || len(changes) == 0 {
		return
	}
	p.cbMu.Lock()
	defer p.cbMu.Unlock()
	for _, c := range changes {
		p.cfg.OnStateChange(c)
	}
}

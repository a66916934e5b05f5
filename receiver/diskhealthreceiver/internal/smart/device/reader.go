package device

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// Standby says which sleeping ATA disks are left alone, as smartctl's
// --nocheck does.
type Standby uint8

// Standby policies.
const (
	// StandbyStandby: skip disks in standby or sleep. The zero value, so a
	// Config that says nothing never wakes a disk.
	StandbyStandby Standby = iota
	// StandbyNever: never check the power mode; read every disk (may spin
	// up a sleeping one).
	StandbyNever
	// StandbyIdle: also skip idle disks, for drives whose spin-down timer
	// restarts on any SMART read.
	StandbyIdle
)

// ParseStandby reads a policy name: never, standby or idle.
func ParseStandby(s string) (Standby, error) {
	switch s {
	case "never":
		return StandbyNever, nil
	case "standby", "":
		return StandbyStandby, nil
	case "idle":
		return StandbyIdle, nil
	}
	return 0, fmt.Errorf("standby %q: want never, standby or idle", s)
}

func (p Standby) String() string {
	return [...]string{"standby", "never", "idle"}[p]
}

// skip reports whether a disk in power mode m must be left alone.
func (p Standby) skip(m ata.PowerMode) bool {
	switch p {
	case StandbyStandby:
		return !m.Spinning()
	case StandbyIdle:
		return m != ata.PowerActiveOrIdle && m != ata.PowerActiveNVCache
	}
	return false
}

// Config configures a Reader.
type Config struct {
	// Root is the host root: sysfs under Root/sys, nodes under Root/dev.
	Root string
	// Timeout bounds each disk's read.
	Timeout time.Duration
	Standby Standby
	// Match selects disks by Disk.Name; nil selects all.
	Match func(name string) bool
	// Open opens device nodes; nil means OpenNode, the ioctl layer.
	Open Opener
	// Library does the reads smart.go covers; nil means SmartGo (Linux).
	// Tests set the fakes of devicetest, which answer from the same disks as
	// Open.
	Library Library
	// Discover lists the disks; nil means Discover(Root). Tests replace it
	// to read disks that exist only as doubles.
	Discover func(root string) ([]Disk, error)
	// DriveDB names and decodes ATA attributes; nil is smart.go's built-in names (what its
	// ReadSMARTData returns), as smartctl falls back to its own table.
	DriveDB *ata.DriveDB
	// Clock stamps each Result's Time; nil means time.Now. Tests set it to replay reads a scrape
	// interval apart, which the rates computed from two reads need (deadlines keep the real clock).
	Clock func() time.Time
}

// Reader reads every disk in its own goroutine. A disk whose previous read
// has not finished (a hung ioctl) is not read again until it does: it is
// reported as timed out instead, and never costs another disk anything.
type Reader struct {
	cfg Config

	mu    sync.Mutex
	disks map[string]*diskState
	// inflight counts the read goroutines still running.
	inflight atomic.Int64
}

func (r *Reader) now() time.Time {
	if r.cfg.Clock != nil {
		return r.cfg.Clock()
	}
	return time.Now()
}

// diskState is kept per disk between reads. cache is touched only by the
// goroutine that holds busy.
type diskState struct {
	busy  atomic.Bool
	cache identityCache
}

// identityCache holds what is read once per disk: identities and the
// answers to "does this drive have X".
type identityCache struct {
	ata *ata.Identity
	// ataDev is the drive opened through the library, kept open between
	// reads; nil until the first read and after a failed library call.
	ataDev     ataReads
	noDevStats bool
	// noErrorLog and noSelfTestLog: the drive refused SMART READ LOG 01h /
	// 06h once; they are not asked for again.
	noErrorLog    bool
	noSelfTestLog bool
	nvme          *NVMeData
	// nvmePlan is which optional logs the controller is asked for, decided
	// once from Identify Controller and the Supported Log Pages log.
	nvmePlan *nvme.Plan
	// nvmeErrEntries is how many error entries a read asks for: the plan's
	// count until the controller refuses it, then the size that worked; -1
	// once every size was refused (each refusal is an error the drive
	// counts, so it is not asked again).
	nvmeErrEntries int
	// nvmeErrRefused is why, once nvmeErrEntries is -1, repeated as the
	// log's outcome on every read.
	nvmeErrRefused error
	// nvmeNotOCP: C0h came back without the OCP GUID; neither OCP log is
	// asked for again, and this is the C0h outcome of every read.
	nvmeNotOCP error
	scsi       *SCSIData
	scsiPages  []uint8
	scsiProbed bool
}

// closeATA closes the library's device of the disk, if open.
func (c *identityCache) closeATA() {
	if c.ataDev != nil {
		_ = c.ataDev.Close()
		c.ataDev = nil
	}
}

var errInFlight = fmt.Errorf("%w: the previous read of this disk is still in flight", ErrTimeout)

// NewReader returns a Reader.
func NewReader(cfg Config) *Reader {
	if cfg.Open == nil {
		cfg.Open = OpenNode
	}
	if cfg.Library == nil {
		cfg.Library = defaultLibrary()
	}
	if cfg.Discover == nil {
		cfg.Discover = Discover
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Reader{cfg: cfg, disks: map[string]*diskState{}}
}

// Collect discovers the disks and reads each of them concurrently, returning
// one Result per disk (sorted by name) within the per-disk timeout. The
// error reports discovery problems; disks it could list are still read.
// ctx ends the wait early: unfinished disks then report a timeout.
func (r *Reader) Collect(ctx context.Context) ([]Result, error) {
	disks, derr := r.cfg.Discover(r.cfg.Root)
	var selected []Disk
	for _, d := range disks {
		if r.cfg.Match == nil || r.cfg.Match(d.Name) {
			selected = append(selected, d)
		}
	}
	states := r.states(selected)

	deadline := time.Now().Add(r.cfg.Timeout)
	results := make([]Result, len(selected))
	chans := make([]chan Result, len(selected))
	for i, d := range selected {
		st := states[i]
		if !st.busy.CompareAndSwap(false, true) {
			results[i] = Result{Disk: d, Status: StatusTimeout, Err: errInFlight, Time: r.now()}
			continue
		}
		ch := make(chan Result, 1)
		chans[i] = ch
		r.inflight.Add(1)
		go func() {
			defer r.inflight.Add(-1)
			res := r.readDisk(d, st, deadline)
			// Free the disk before handing over the result, so a Collect that
			// follows this one at once finds it idle.
			st.busy.Store(false)
			ch <- res
		}()
	}

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	expired := false
	for i, ch := range chans {
		if ch == nil {
			continue
		}
		if !expired {
			select {
			case results[i] = <-ch:
				continue
			case <-timer.C:
				expired = true
			case <-ctx.Done():
				expired = true
			}
		}
		select {
		case results[i] = <-ch:
		default:
			results[i] = Result{Disk: selected[i], Status: StatusTimeout, Time: r.now(),
				Err: fmt.Errorf("%w: no answer within %v", ErrTimeout, r.cfg.Timeout)}
		}
	}
	return results, derr
}

// states returns each disk's state, creating new ones and forgetting disks
// that are gone. The key (Disk.Key) includes the hw.id and the diskseq so
// that a different disk under a reused name starts afresh.
func (r *Reader) states(disks []Disk) []*diskState {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*diskState, len(disks))
	seen := make(map[string]bool, len(disks))
	for i, d := range disks {
		// Per controller answering: what is cached (Identify Controller, the error log's size) is that
		// controller's, so a subsystem read through another one starts afresh.
		key := d.Key() + "\x00" + d.Via
		seen[key] = true
		st := r.disks[key]
		if st == nil {
			st = &diskState{}
			r.disks[key] = st
		}
		out[i] = st
	}
	for k, st := range r.disks {
		// A busy state stays until its read ends, so a disk that comes back
		// meanwhile is still never read twice at once.
		if !seen[k] && !st.busy.Load() {
			st.cache.closeATA()
			delete(r.disks, k)
		}
	}
	return out
}

// Close waits for reads still in flight, until ctx ends, and closes the
// devices kept open between reads of disks no read holds. A read hung in the
// kernel cannot be stopped; Close says so instead of waiting forever.
func (r *Reader) Close(ctx context.Context) error {
	defer r.closeIdle()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for r.inflight.Load() > 0 {
		select {
		case <-tick.C:
		case <-ctx.Done():
			if n := r.inflight.Load(); n > 0 {
				return fmt.Errorf("%d disk reads still in flight: %w", n, ctx.Err())
			}
			return nil
		}
	}
	return nil
}

// closeIdle closes the library devices of the disks no read holds (a hung
// read keeps its own: closing it under the call would pull the descriptor
// from under the ioctl).
func (r *Reader) closeIdle() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.disks {
		if st.busy.CompareAndSwap(false, true) {
			st.cache.closeATA()
			st.busy.Store(false)
		}
	}
}

// readDisk reads one disk. A panic in any decoder or transport becomes
// this disk's error and nothing else.
func (r *Reader) readDisk(d Disk, st *diskState, deadline time.Time) (res Result) {
	res = Result{Disk: d}
	defer func() {
		if p := recover(); p != nil {
			res = Result{Disk: d, Status: StatusError, Time: r.now(),
				Err: fmt.Errorf("panic while reading %s: %v\n%s", d.Name, p, debug.Stack())}
		}
		res.Time = r.now()
	}()
	if d.Protocol == ProtocolNone {
		res.Status, res.Err = StatusUnsupported, fmt.Errorf("%w: no SMART interface for this kind of disk", ErrUnsupported)
		return res
	}
	t, err := r.cfg.Open(d.Node)
	if err != nil {
		err = classifyErrno(err)
		res.Status, res.Err = classify(err), err
		if d.Protocol == ProtocolNVMe {
			res.Snapshot = hwmonFallback(d)
		}
		return res
	}
	defer func() { _ = t.Close() }()
	c := NewConn(t, deadline)
	switch d.Protocol {
	case ProtocolATA:
		r.readATA(c, d, st, deadline, &res)
	case ProtocolNVMe:
		r.readNVMe(c, d, st, deadline, &res)
	case ProtocolSCSI:
		readSCSI(c, st, &res)
	}
	if res.Err != nil && res.Status == StatusOK {
		res.Status = classify(res.Err)
	}
	return res
}

// classify maps an error onto a Status.
func classify(err error) Status {
	switch {
	case err == nil:
		return StatusOK
	case errors.Is(err, ErrPermission):
		return StatusPermissionDenied
	case errors.Is(err, ErrUnsupported):
		return StatusUnsupported
	case errors.Is(err, ErrTimeout):
		return StatusTimeout
	}
	return StatusError
}

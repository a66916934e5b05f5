// Package clientstate judges how a network or FUSE filesystem's client is doing, from values read
// elsewhere: the outcome of the mount's statfs (with its deadline), the NFS RPC counters over the
// last interval, the kernel's "server … not responding" and "OK" lines, and the FUSE connection's
// waiting requests. It takes values and time and returns a
// state and, when the state changes, the evidence; it reads nothing itself.
package clientstate // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/clientstate"

import (
	"fmt"
	"strings"
	"time"
)

// State is a mount's client state.
type State uint8

// States, from best to worst but stale, which is a different kind of bad: the server or daemon is
// gone for good rather than late.
const (
	// Unknown is the state before the first observation.
	Unknown State = iota
	// OK: answers in time.
	OK
	// Slow: answers, but late (round trips above the threshold), or with retransmissions or major
	// timeouts (NFS).
	Slow
	// Unresponsive: no answer: statfs passed its deadline or failed with a timeout, RPCs go out or
	// time out with none completing, or FUSE requests have not drained for StallAfter.
	Unresponsive
	// Stale: the mount is there but its other end is gone: ESTALE from the server, or a FUSE
	// connection aborted (its daemon died: ENOTCONN) or removed.
	Stale
)

// States lists the states a mount can report, in the order of the state set.
var States = [...]State{OK, Slow, Unresponsive, Stale}

func (s State) String() string {
	switch s {
	case OK:
		return "ok"
	case Slow:
		return "slow"
	case Unresponsive:
		return "unresponsive"
	case Stale:
		return "stale"
	}
	return "unknown"
}

// Statfs is the outcome of the mount's statfs in this observation.
type Statfs uint8

// Statfs outcomes.
const (
	// StatfsNone: not probed (nothing known from statfs).
	StatfsNone Statfs = iota
	// StatfsOK answered in time.
	StatfsOK
	// StatfsTimeout passed its deadline, or an earlier call is still outstanding.
	StatfsTimeout
	// StatfsFailed failed with an error that means no answer (EIO, ETIMEDOUT, EHOSTDOWN …).
	StatfsFailed
	// StatfsStale failed with ESTALE or ENOTCONN: the other end is gone.
	StatfsStale
)

func (s Statfs) String() string {
	return [...]string{"not probed", "ok", "timeout", "failed", "stale"}[s]
}

// RPC is an NFS mount's RPC activity over the interval since the previous observation.
type RPC struct {
	Interval time.Duration
	// Completed operations, RPC sends and replies received, retransmissions and major timeouts.
	Completed, Sent, Received, Retransmissions, MajorTimeouts uint64
	// RTT is the mean round trip of the completed operations (valid when Completed > 0).
	RTT time.Duration
}

// FUSE is a FUSE mount's connection as read now.
type FUSE struct {
	// Connected: the connection's directory exists under /sys/fs/fuse/connections.
	Connected bool
	// Waiting is the connection's requests not yet answered by the daemon.
	Waiting uint64
}

// KernelLine is one of the kernel's lines about an NFS mount's server, logged since the previous
// observation: "nfs: server X not responding, still trying" (or "timed out"), or "nfs: server X OK".
type KernelLine struct {
	NotResponding bool
	Text          string
}

// Observation is what is known of one mount at one time.
type Observation struct {
	At        time.Time
	Statfs    Statfs
	StatfsErr error // the statfs error behind a non-OK outcome, for the evidence
	RPC       *RPC  // nil: not an NFS mount, or no previous reading of this instance
	FUSE      *FUSE // nil: not a FUSE mount, or its connections are not readable
	// Kernel are the kernel's lines about the mount's server since the previous observation, in
	// order (none when the kernel log is not readable).
	Kernel []KernelLine
}

// Config sets the thresholds.
type Config struct {
	// SlowRTT: a mean NFS round trip at or above it is slow.
	SlowRTT time.Duration
	// StallAfter: FUSE requests that have not drained for this long (and over at least three
	// observations) are unresponsive.
	StallAfter time.Duration
}

// Change is a state change with its evidence.
type Change struct {
	From, To State
	Evidence string
}

// Tracker follows one mount instance. The zero value needs a Config: use NewTracker.
type Tracker struct {
	cfg   Config
	state State
	// FUSE drain tracking: the waiting count seen last, and since when requests have been waiting
	// without the count going down (zero: not stalled).
	lastWaiting uint64
	stallSince  time.Time
	stallSeen   int // observations since stallSince
	// rpcStalled is when the server was first seen not answering; zero once an operation completes.
	// A hard mount waiting on a dead server sends nothing between its retransmissions (timeo, 60 s
	// over TCP), so an interval without traffic proves nothing: only a completion ends the stall.
	rpcStalled time.Time
	// kernelDown is the kernel's last "not responding" line for the server, until its "OK" line or
	// an operation completing in a later interval (the OK line is rate-limited and may be missed).
	kernelDown string
	// kernelOK is the kernel's last "OK" line while the mount is still judged unresponsive or stale
	// (the statfs re-probe may answer a scrape after it): the recovery's evidence when it comes.
	kernelOK string
}

// NewTracker returns a tracker in state Unknown.
func NewTracker(cfg Config) *Tracker { return &Tracker{cfg: cfg} }

// Observe judges o and returns the new state and, when it differs from the previous one (a first
// OK is no change), the change with its evidence.
func (t *Tracker) Observe(o Observation) (State, *Change) {
	state, evidence := t.judge(o)
	from := t.state
	t.state = state
	if state < Unresponsive {
		t.kernelOK = ""
	}
	if state == from || (from == Unknown && state == OK) {
		return state, nil
	}
	return state, &Change{From: from, To: state, Evidence: evidence}
}

// judge returns the worst state the observation shows, and every finding behind it.
func (t *Tracker) judge(o Observation) (State, string) {
	state := OK
	var why []string
	worse := func(s State, format string, args ...any) {
		if s > state {
			state = s
		}
		why = append(why, fmt.Sprintf(format, args...))
	}
	switch o.Statfs {
	case StatfsStale:
		worse(Stale, "statfs: %v", o.StatfsErr)
	case StatfsTimeout, StatfsFailed:
		worse(Unresponsive, "statfs: %v", o.StatfsErr)
	}
	// The kernel's lines, in order: the last one says how the server was when it was printed.
	fresh := false
	for _, k := range o.Kernel {
		if k.NotResponding {
			t.kernelDown, t.kernelOK, fresh = k.Text, "", true
		} else {
			t.kernelDown, t.kernelOK, fresh = "", k.Text, false
		}
	}
	if t.kernelOK != "" {
		why = append(why, "kernel: "+t.kernelOK)
	}
	if r := o.RPC; r != nil {
		// Completions in the interval of a fresh "not responding" line may have come before it.
		if r.Completed > 0 && !fresh {
			t.kernelDown = ""
		}
		t.judgeRPC(o.At, r, worse)
	}
	if t.kernelDown != "" {
		worse(Unresponsive, "kernel: %s", t.kernelDown)
	}
	if f := o.FUSE; f != nil {
		t.judgeFUSE(o.At, f, worse)
	}
	if len(why) == 0 {
		why = append(why, "statfs "+o.Statfs.String())
	}
	return state, strings.Join(why, "; ")
}

func (t *Tracker) judgeRPC(at time.Time, r *RPC, worse func(State, string, ...any)) {
	over := r.Interval.Round(time.Millisecond)
	if r.Completed == 0 {
		// Nothing completed: requests timing out, or going out unanswered, mean the server does
		// not answer. An idle mount sends nothing and is fine, unless it was already stalled.
		switch {
		case r.MajorTimeouts > 0 || (r.Sent > 0 && r.Received == 0):
			if t.rpcStalled.IsZero() {
				t.rpcStalled = at.Add(-r.Interval)
			}
			worse(Unresponsive, "rpc: no operation completed in %v; %d sent, %d replies, %d major timeouts",
				over, r.Sent, r.Received, r.MajorTimeouts)
		case !t.rpcStalled.IsZero():
			worse(Unresponsive, "rpc: no operation completed for %v", at.Sub(t.rpcStalled).Round(time.Millisecond))
		}
		return
	}
	// The kernel counts an operation's retransmissions and major timeouts when it completes: the
	// first completions after an outage bring the outage's own, already shown as unresponsive.
	recovering := !t.rpcStalled.IsZero() || t.state == Unresponsive
	t.rpcStalled = time.Time{}
	if t.cfg.SlowRTT > 0 && r.RTT >= t.cfg.SlowRTT {
		worse(Slow, "rpc: mean round trip %v over %d operations in %v (slow at %v)", r.RTT, r.Completed, over, t.cfg.SlowRTT)
	}
	if (r.MajorTimeouts > 0 || r.Retransmissions > 0) && !recovering {
		worse(Slow, "rpc: %d retransmissions and %d major timeouts beside %d completed operations in %v",
			r.Retransmissions, r.MajorTimeouts, r.Completed, over)
	}
}

func (t *Tracker) judgeFUSE(at time.Time, f *FUSE, worse func(State, string, ...any)) {
	if !f.Connected {
		t.lastWaiting, t.stallSince, t.stallSeen = 0, time.Time{}, 0
		worse(Stale, "fuse: the connection is aborted or gone")
		return
	}
	switch {
	case f.Waiting == 0:
		t.stallSince, t.stallSeen = time.Time{}, 0
	case t.stallSince.IsZero() || f.Waiting < t.lastWaiting:
		// New requests, or fewer than before: the daemon answers; watch from now.
		t.stallSince, t.stallSeen = at, 1
	default:
		t.stallSeen++
	}
	t.lastWaiting = f.Waiting
	// The kernel counts no FUSE completions, so a stall is judged from samples: never fewer requests
	// waiting for StallAfter, over at least stallSamples of them, so that a busy daemon whose count
	// merely did not fall between two scrapes is not called stalled.
	if stalled := at.Sub(t.stallSince); !t.stallSince.IsZero() && stalled >= t.cfg.StallAfter && t.stallSeen >= stallSamples {
		worse(Unresponsive, "fuse: %d requests waiting, not draining for %v", f.Waiting, stalled.Round(time.Millisecond))
	}
}

// stallSamples is how many observations, the first included, must show FUSE requests not draining.
const stallSamples = 3

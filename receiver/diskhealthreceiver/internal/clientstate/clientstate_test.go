package clientstate

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	t0  = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cfg = Config{SlowRTT: time.Second, StallAfter: 30 * time.Second}
)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestFirstOKIsNoChange(t *testing.T) {
	tr := NewTracker(cfg)
	s, c := tr.Observe(Observation{At: t0, Statfs: StatfsOK})
	assert.Equal(t, OK, s)
	assert.Nil(t, c)
}

func TestStatfs(t *testing.T) {
	for _, tc := range []struct {
		in   Statfs
		want State
	}{{StatfsNone, OK}, {StatfsOK, OK}, {StatfsTimeout, Unresponsive}, {StatfsFailed, Unresponsive}, {StatfsStale, Stale}} {
		s, _ := NewTracker(cfg).Observe(Observation{At: t0, Statfs: tc.in, StatfsErr: errors.New("x")})
		assert.Equal(t, tc.want, s, tc.in.String())
	}
}

// TestRPC: a server that stops answering (sends, no replies, no completions; or major timeouts) is
// unresponsive; one that answers late or with retransmissions is slow; an idle mount is ok.
func TestRPC(t *testing.T) {
	for name, tc := range map[string]struct {
		rpc  RPC
		want State
	}{
		"idle":                            {RPC{Interval: 10 * time.Second}, OK},
		"busy and fast":                   {RPC{Interval: 10 * time.Second, Completed: 500, Sent: 500, Received: 500, RTT: 2 * time.Millisecond}, OK},
		"slow round trip":                 {RPC{Interval: 10 * time.Second, Completed: 5, Sent: 5, Received: 5, RTT: 1500 * time.Millisecond}, Slow},
		"retransmissions":                 {RPC{Interval: 10 * time.Second, Completed: 50, Sent: 53, Received: 50, Retransmissions: 3, RTT: time.Millisecond}, Slow},
		"no replies":                      {RPC{Interval: 10 * time.Second, Sent: 4}, Unresponsive},
		"major timeouts":                  {RPC{Interval: 10 * time.Second, MajorTimeouts: 2}, Unresponsive},
		"sent, replied, nothing done yet": {RPC{Interval: 10 * time.Second, Sent: 1, Received: 1}, OK},
	} {
		r := tc.rpc
		s, _ := NewTracker(cfg).Observe(Observation{At: t0, Statfs: StatfsOK, RPC: &r})
		assert.Equal(t, tc.want, s, name)
	}
}

// TestFUSEStallAndDrain follows a daemon whose handler blocks: requests wait and never fall for
// StallAfter over three observations (unresponsive), then drain (ok), with one change each and the
// evidence.
func TestFUSEStallAndDrain(t *testing.T) {
	tr := NewTracker(cfg)
	steps := []struct {
		s       int
		waiting uint64
		want    State
		change  bool
	}{
		{0, 0, OK, false},
		{10, 1, OK, false},           // a request appeared: watched from now
		{20, 3, OK, false},           // more, none answered
		{30, 3, OK, false},           // 20s
		{40, 3, Unresponsive, true},  // 30s, four samples
		{50, 4, Unresponsive, false}, // more piling up
		{60, 2, OK, true},            // going down: the daemon answers again
		{70, 0, OK, false},
	}
	var changes []*Change
	for _, st := range steps {
		s, c := tr.Observe(Observation{At: at(st.s), Statfs: StatfsOK, FUSE: &FUSE{Connected: true, Waiting: st.waiting}})
		assert.Equal(t, st.want, s, "at %ds", st.s)
		assert.Equal(t, st.change, c != nil, "at %ds", st.s)
		if c != nil {
			changes = append(changes, c)
		}
	}
	require.Len(t, changes, 2)
	assert.Equal(t, "fuse: 3 requests waiting, not draining for 30s", changes[0].Evidence)
	assert.Equal(t, Change{From: Unresponsive, To: OK, Evidence: "statfs ok"}, *changes[1])
}

// TestFUSEStallNeedsSamples: two observations StallAfter apart (a scrape interval as long as
// stall_after) are not enough to call a busy daemon stalled; a third is.
func TestFUSEStallNeedsSamples(t *testing.T) {
	tr := NewTracker(cfg)
	s, _ := tr.Observe(Observation{At: at(0), Statfs: StatfsOK, FUSE: &FUSE{Connected: true, Waiting: 1}})
	assert.Equal(t, OK, s)
	s, _ = tr.Observe(Observation{At: at(30), Statfs: StatfsOK, FUSE: &FUSE{Connected: true, Waiting: 1}})
	assert.Equal(t, OK, s)
	s, _ = tr.Observe(Observation{At: at(60), Statfs: StatfsOK, FUSE: &FUSE{Connected: true, Waiting: 1}})
	assert.Equal(t, Unresponsive, s)
}

// TestRPCStallLastsUntilACompletion: after the server stopped answering, quiet intervals (a hard
// mount waits timeo between retransmissions) keep the mount unresponsive; a completion ends it.
func TestRPCStallLastsUntilACompletion(t *testing.T) {
	tr := NewTracker(cfg)
	iv := 10 * time.Second
	s, _ := tr.Observe(Observation{At: at(10), Statfs: StatfsOK, RPC: &RPC{Interval: iv, Completed: 40, Sent: 40, Received: 40}})
	assert.Equal(t, OK, s)
	s, c := tr.Observe(Observation{At: at(20), Statfs: StatfsOK, RPC: &RPC{Interval: iv, Sent: 3}})
	assert.Equal(t, Unresponsive, s)
	require.NotNil(t, c)
	s, c = tr.Observe(Observation{At: at(30), Statfs: StatfsOK, RPC: &RPC{Interval: iv}})
	assert.Equal(t, Unresponsive, s)
	assert.Nil(t, c)
	s, c = tr.Observe(Observation{At: at(40), Statfs: StatfsOK, RPC: &RPC{Interval: iv}})
	assert.Equal(t, Unresponsive, s)
	assert.Nil(t, c)
	s, c = tr.Observe(Observation{At: at(50), Statfs: StatfsOK, RPC: &RPC{Interval: iv, Completed: 1, Sent: 1, Received: 1}})
	assert.Equal(t, OK, s)
	require.NotNil(t, c)
	assert.Equal(t, Unresponsive, c.From)
}

// TestRecoveryBringsTheOutagesTimeouts: operations that waited through an outage (statfs past its
// deadline) complete with the major timeouts they took; that interval is the recovery (ok, one
// change), and timeouts in the next one are slow again.
func TestRecoveryBringsTheOutagesTimeouts(t *testing.T) {
	tr := NewTracker(cfg)
	iv := time.Second
	s, _ := tr.Observe(Observation{At: at(1), Statfs: StatfsOK, RPC: &RPC{Interval: iv, Completed: 4, Sent: 4, Received: 4}})
	assert.Equal(t, OK, s)
	s, c := tr.Observe(Observation{At: at(2), Statfs: StatfsTimeout, StatfsErr: errors.New("timeout"), RPC: &RPC{Interval: iv}})
	assert.Equal(t, Unresponsive, s)
	require.NotNil(t, c)
	s, c = tr.Observe(Observation{At: at(12), Statfs: StatfsOK, RPC: &RPC{Interval: iv, Completed: 2, Sent: 2, Received: 2, MajorTimeouts: 3}})
	assert.Equal(t, OK, s)
	require.NotNil(t, c)
	assert.Equal(t, Unresponsive, c.From)
	s, c = tr.Observe(Observation{At: at(13), Statfs: StatfsOK, RPC: &RPC{Interval: iv, Completed: 2, Sent: 3, Received: 2, Retransmissions: 1}})
	assert.Equal(t, Slow, s)
	require.NotNil(t, c)
}

func TestFUSEGone(t *testing.T) {
	tr := NewTracker(cfg)
	tr.Observe(Observation{At: t0, Statfs: StatfsOK, FUSE: &FUSE{Connected: true}})
	s, c := tr.Observe(Observation{At: at(10), Statfs: StatfsStale, StatfsErr: errors.New("statfs /mnt/x: transport endpoint is not connected"),
		FUSE: &FUSE{Connected: false}})
	assert.Equal(t, Stale, s)
	require.NotNil(t, c)
	assert.Equal(t, "statfs: statfs /mnt/x: transport endpoint is not connected; fuse: the connection is aborted or gone", c.Evidence)
}

// TestWorstWins: stale beats unresponsive beats slow, and the evidence lists every finding.
func TestWorstWins(t *testing.T) {
	s, c := NewTracker(cfg).Observe(Observation{At: t0, Statfs: StatfsTimeout, StatfsErr: errors.New("statfs did not return within the timeout"),
		RPC: &RPC{Interval: 10 * time.Second, Completed: 2, RTT: 3 * time.Second}})
	assert.Equal(t, Unresponsive, s)
	require.NotNil(t, c)
	assert.Contains(t, c.Evidence, "statfs did not return")
	assert.Contains(t, c.Evidence, "mean round trip 3s")
}

func TestStrings(t *testing.T) {
	var names []string
	for _, s := range States {
		names = append(names, s.String())
	}
	assert.Equal(t, []string{"ok", "slow", "unresponsive", "stale"}, names)
	assert.Equal(t, "unknown", Unknown.String())
}

// TestKernelLines: the kernel's "not responding" line makes the mount unresponsive with the line as
// evidence, until its "OK" line (the recovery's evidence) or, the OK line missed, an operation
// completing in a later interval; completions in the interval of the line itself do not clear it.
func TestKernelLines(t *testing.T) {
	down := KernelLine{NotResponding: true, Text: "nfs: server 10.0.0.1 not responding, still trying"}
	up := KernelLine{Text: "nfs: server 10.0.0.1 OK"}
	busy := &RPC{Interval: 10 * time.Second, Completed: 5, Sent: 5, Received: 5, RTT: time.Millisecond}
	idle := &RPC{Interval: 10 * time.Second}

	tr := NewTracker(cfg)
	s, _ := tr.Observe(Observation{At: at(0), Statfs: StatfsOK})
	require.Equal(t, OK, s)
	s, c := tr.Observe(Observation{At: at(10), Statfs: StatfsOK, RPC: busy, Kernel: []KernelLine{down}})
	assert.Equal(t, Unresponsive, s)
	require.NotNil(t, c)
	assert.Equal(t, "kernel: "+down.Text, c.Evidence)
	s, c = tr.Observe(Observation{At: at(20), Statfs: StatfsTimeout, StatfsErr: errors.New("deadline"), RPC: idle})
	assert.Equal(t, Unresponsive, s, "the line holds while nothing completes")
	assert.Nil(t, c)
	s, c = tr.Observe(Observation{At: at(30), Statfs: StatfsOK, RPC: busy, Kernel: []KernelLine{up}})
	assert.Equal(t, OK, s)
	require.NotNil(t, c)
	assert.Equal(t, "kernel: "+up.Text, c.Evidence)

	// Down and up again within one interval: the last line counts.
	s, c = tr.Observe(Observation{At: at(40), Statfs: StatfsOK, RPC: busy, Kernel: []KernelLine{down, up}})
	assert.Equal(t, OK, s)
	assert.Nil(t, c)

	// The OK line missed: a later interval's completions clear the line.
	s, _ = tr.Observe(Observation{At: at(50), Statfs: StatfsOK, RPC: idle, Kernel: []KernelLine{down}})
	require.Equal(t, Unresponsive, s)
	s, c = tr.Observe(Observation{At: at(60), Statfs: StatfsOK, RPC: busy})
	assert.Equal(t, OK, s)
	require.NotNil(t, c)
	assert.Equal(t, "statfs ok", c.Evidence)

	// The OK line read while statfs still waits out its deadline: the recovery a scrape later
	// carries it.
	s, _ = tr.Observe(Observation{At: at(70), Statfs: StatfsTimeout, StatfsErr: errors.New("deadline"), RPC: idle, Kernel: []KernelLine{down}})
	require.Equal(t, Unresponsive, s)
	s, c = tr.Observe(Observation{At: at(80), Statfs: StatfsTimeout, StatfsErr: errors.New("deadline"), RPC: idle, Kernel: []KernelLine{up}})
	require.Equal(t, Unresponsive, s)
	assert.Nil(t, c)
	s, c = tr.Observe(Observation{At: at(90), Statfs: StatfsOK, RPC: busy})
	assert.Equal(t, OK, s)
	require.NotNil(t, c)
	assert.Equal(t, "kernel: "+up.Text, c.Evidence)
	s, c = tr.Observe(Observation{At: at(100), Statfs: StatfsTimeout, StatfsErr: errors.New("deadline")})
	require.NotNil(t, c)
	assert.Equal(t, "statfs: deadline", c.Evidence, "the OK line was the last recovery's, not this outage's")
	assert.Equal(t, Unresponsive, s)

	// Beside a statfs past its deadline: both in the evidence.
	s, c = NewTracker(cfg).Observe(Observation{At: at(0), Statfs: StatfsTimeout, StatfsErr: errors.New("statfs /mnt: deadline 2s passed"), Kernel: []KernelLine{down}})
	assert.Equal(t, Unresponsive, s)
	require.NotNil(t, c)
	assert.Equal(t, "statfs: statfs /mnt: deadline 2s passed; kernel: "+down.Text, c.Evidence)
}

package nvmesubsys

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTrackerDropAndRecovery: nvme2 (one of two TCP paths) goes connecting, then is live again. Each
// namespace drops once, naming the path, stays quiet while nothing changes, and recovers once.
func TestTrackerDropAndRecovery(t *testing.T) {
	r, sys := fixture(t, "k6.18-tcp")
	tr := NewTracker()
	observe := func() Observation {
		t.Helper()
		s := subsystem(t, sys, "nvme-subsys1")
		return tr.Observe(&s)
	}
	o := observe()
	assert.Empty(t, o.Changes, "first sight sets the best, changes nothing")
	assert.Equal(t, []NamespaceStatus{{NamespacePaths{"nvme1n1", 2, 2, 2}, 2}, {NamespacePaths{"nvme1n2", 2, 2, 2}, 2}}, o.Namespaces)

	state := "sys/devices/virtual/nvme-fabrics/ctl/nvme2/state"
	r.Write(state, "connecting\n")
	o = observe()
	nvme2 := PathInfo{Path: "nvme1c2n1", Controller: "nvme2", Transport: TransportTCP, Address: "traddr=192.168.123.10,trsvcid=4420,src_addr=192.168.123.20", State: StateConnecting, ANA: ANAOptimized}
	require.Len(t, o.Changes, 2)
	assert.Equal(t, Change{Kind: Dropped, Namespace: "nvme1n1", Live: 1, Best: 2, Paths: []PathInfo{nvme2}}, o.Changes[0])
	assert.Equal(t, "nvme2 (tcp traddr=192.168.123.10,trsvcid=4420,src_addr=192.168.123.20) connecting", o.Changes[0].Paths[0].String())
	assert.Equal(t, 1, o.Namespaces[0].Live)
	assert.Equal(t, 2, o.Namespaces[0].Best)

	assert.Empty(t, observe().Changes, "still one path: nothing new")

	r.Write(state, "live\n")
	o = observe()
	require.Len(t, o.Changes, 2)
	nvme2.State = StateLive
	assert.Equal(t, Change{Kind: Recovered, Namespace: "nvme1n1", Live: 2, Best: 2, Paths: []PathInfo{nvme2}}, o.Changes[0])
	assert.Equal(t, map[PathKey]int{{StateLive, ANAOptimized, TransportTCP}: 4, {StateConnecting, ANAOptimized, TransportTCP}: 0}, o.Counts,
		"a combination the subsystem had stays, at 0")
}

// TestTrackerRemovedPathAndReset: a deleted controller's path is named as removed; a subsystem that
// disappears starts over, so its one path is then its best, not a drop.
func TestTrackerRemovedPathAndReset(t *testing.T) {
	r, sys := fixture(t, "k6.18-tcp")
	tr := NewTracker()
	s := subsystem(t, sys, "nvme-subsys1")
	tr.Observe(&s)
	require.NoError(t, os.Remove(r.Path("sys/devices/virtual/nvme-subsystem/nvme-subsys1/nvme1")))
	s = subsystem(t, sys, "nvme-subsys1")
	o := tr.Observe(&s)
	require.Len(t, o.Changes, 2)
	assert.Equal(t, "nvme1 (tcp traddr=192.168.122.10,trsvcid=4420,src_addr=192.168.122.20) removed", o.Changes[1].Paths[0].String())
	assert.Equal(t, 2, o.Namespaces[1].Best)

	tr.Keep(map[string]bool{"nvme-subsys0": true}) // nvme-subsys1 gone for a scrape
	o = tr.Observe(&s)
	assert.Empty(t, o.Changes)
	assert.Equal(t, 1, o.Namespaces[0].Best, "the best starts over with the subsystem")
}

func TestPathInfoString(t *testing.T) {
	assert.Equal(t, "nvme0 (pcie 0000:01:00.0) resetting", PathInfo{Controller: "nvme0", Transport: TransportPCIe, Address: "0000:01:00.0", State: StateResetting}.String())
	assert.Equal(t, "nvme3 (loop) ana inaccessible", PathInfo{Controller: "nvme3", Transport: TransportLoop, State: StateLive, ANA: ANAInaccessible}.String())
}

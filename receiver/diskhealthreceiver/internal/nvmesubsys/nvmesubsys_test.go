package nvmesubsys

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// fixture copies testdata/<scenario> (a sysfs tree as the kernel lays it out, ':' committed as %3A)
// into a root of the test's own and returns the root and its sys.
func fixture(t *testing.T, scenario string) (*testkit.Root, fs.FS) {
	t.Helper()
	r := testkit.NewRoot(t)
	r.CopyTree(filepath.Join("testdata", scenario), "", nil)
	return r, bounded.NewDirFS(r.Path("sys"), bounded.Attr)
}

func read(t *testing.T, sys fs.FS) []Result {
	t.Helper()
	res, omitted, err := NewReader(sys, time.Second, 100).Read(context.Background())
	require.NoError(t, err)
	require.Zero(t, omitted)
	return res
}

// TestGolden reads each fixture tree and compares every subsystem with testdata/<scenario>/golden.json:
// k6.1-pcie a single-port drive (no multipath head: its namespace hangs off its controller),
// k6.18-tcp that drive and an NVMe/TCP subsystem with two controllers and two multipath heads (6.18's
// queue_depth, numa_nodes, delayed_removal_secs and multipath/ links present and ignored), k6.1-ana one
// head over three controllers whose paths are ANA optimized, non-optimized and inaccessible,
// k6.1-tcp-connecting the QEMU guest's own sysfs (TestStackQEMU's nvme part, Debian 6.1: no multipath/
// links, hidden path disks listed in block/) with one path's controller connecting, k5.15-rdma-fc a 5.15
// layout built from that kernel's sources (its README): an array over NVMe/RDMA and FC, ANA change and
// persistent-loss, a resetting controller.
func TestGolden(t *testing.T) {
	scenarios, err := filepath.Glob("testdata/*/sys")
	require.NoError(t, err)
	require.Len(t, scenarios, 5)
	for _, sysDir := range scenarios {
		scenario := filepath.Base(filepath.Dir(sysDir))
		t.Run(scenario, func(t *testing.T) {
			_, sys := fixture(t, scenario)
			var got []Subsystem
			for _, r := range read(t, sys) {
				require.NoError(t, r.Err)
				got = append(got, r.Subsystem)
			}
			testkit.GoldenJSON(t, filepath.Join("testdata", scenario, "golden.json"), got)
		})
	}
}

func subsystem(t *testing.T, sys fs.FS, name string) Subsystem {
	t.Helper()
	s, err := ReadSubsystem(sys, name)
	require.NoError(t, err)
	return s
}

func TestCountAndNamespaces(t *testing.T) {
	_, sys := fixture(t, "k6.1-pcie")
	pcie := subsystem(t, sys, "nvme-subsys0")
	assert.Equal(t, map[PathKey]int{{StateLive, ANANone, TransportPCIe}: 1}, Count(&pcie))
	assert.Equal(t, []NamespacePaths{{Name: "nvme0n1", Total: 1, Live: 1, Optimized: 1}}, Namespaces(&pcie),
		"a namespace without ANA on a live controller serves I/O optimized, as the kernel treats it")

	_, sys = fixture(t, "k6.1-ana")
	ana := subsystem(t, sys, "nvme-subsys0")
	assert.Equal(t, map[PathKey]int{
		{StateLive, ANAOptimized, TransportTCP}: 1, {StateLive, ANANonOptimized, TransportRDMA}: 1, {StateLive, ANAInaccessible, TransportTCP}: 1,
	}, Count(&ana))
	assert.Equal(t, []NamespacePaths{{Name: "nvme0n1", Total: 3, Live: 2, Optimized: 1}}, Namespaces(&ana),
		"an inaccessible group is no live path though its controller is live")

	r, sys := fixture(t, "k6.18-tcp")
	r.Write("sys/devices/virtual/nvme-fabrics/ctl/nvme2/state", "connecting\n")
	tcp := subsystem(t, sys, "nvme-subsys1")
	assert.Equal(t, map[PathKey]int{{StateLive, ANAOptimized, TransportTCP}: 2, {StateConnecting, ANAOptimized, TransportTCP}: 2}, Count(&tcp))
	assert.Equal(t, []NamespacePaths{{Name: "nvme1n1", Total: 2, Live: 1, Optimized: 1}, {Name: "nvme1n2", Total: 2, Live: 1, Optimized: 1}}, Namespaces(&tcp))

	_, sys = fixture(t, "k5.15-rdma-fc")
	array := subsystem(t, sys, "nvme-subsys0")
	assert.Equal(t, map[PathKey]int{
		{StateLive, ANAOptimized, TransportRDMA}: 2, {StateLive, ANAChange, TransportRDMA}: 1, {StateLive, ANAPersistentLoss, TransportRDMA}: 1,
		{StateResetting, ANANonOptimized, TransportFC}: 2,
	}, Count(&array))
	assert.Equal(t, []NamespacePaths{{Name: "nvme0n1", Total: 3, Live: 1, Optimized: 1}, {Name: "nvme0n2", Total: 3, Live: 1, Optimized: 1}}, Namespaces(&array),
		"a group in change or persistent loss, or a resetting controller's path, is no live path")
}

// TestGuestConnecting: the tree copied from the QEMU guest (e2e/qemu TestStackQEMU, nvme part) after the
// target unlinked its subsystem from one of two NVMe/TCP ports: nvme2 is connecting, its path keeps its
// last ANA state, and nvme-cli's `nvme list-subsys` showed the same one live and one connecting path.
func TestGuestConnecting(t *testing.T) {
	_, sys := fixture(t, "k6.1-tcp-connecting")
	res := read(t, sys)
	require.Len(t, res, 2)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	pcie, tcp := res[0].Subsystem, res[1].Subsystem
	assert.Equal(t, map[PathKey]int{{StateLive, ANANone, TransportPCIe}: 1}, Count(&pcie))
	assert.Equal(t, "nqn.2026-12.io.diskhealth:e2e-mpath", tcp.NQN)
	assert.Equal(t, map[PathKey]int{{StateLive, ANAOptimized, TransportTCP}: 1, {StateConnecting, ANAOptimized, TransportTCP}: 1}, Count(&tcp))
	assert.Equal(t, []NamespacePaths{{Name: "nvme1n1", Total: 2, Live: 1, Optimized: 1}}, Namespaces(&tcp))
	assert.Equal(t, "traddr=127.0.0.1,trsvcid=4421", tcp.Controllers[1].Address, "a controller that lost its connection has no src_addr")
}

// TestBadFileCostsThatSubsystem: garbage in one controller's state, a multi-line ana_state or an
// unreadable subsysnqn is an error naming the file's owner for that subsystem; the other is read.
func TestBadFileCostsThatSubsystem(t *testing.T) {
	for name, edit := range map[string]func(r *testkit.Root){
		"state": func(r *testkit.Root) { r.Write("sys/devices/virtual/nvme-fabrics/ctl/nvme2/state", "sleeping\n") },
		"ana_state": func(r *testkit.Root) {
			r.Write("sys/devices/virtual/nvme-fabrics/ctl/nvme1/nvme1c1n2/ana_state", "optimized\nx\n")
		},
		"ana_grpid": func(r *testkit.Root) {
			r.Write("sys/devices/virtual/nvme-fabrics/ctl/nvme1/nvme1c1n2/ana_grpid", "-1\n")
		},
		"subsysnqn": func(r *testkit.Root) {
			require.NoError(t, os.Remove(r.Path("sys/devices/virtual/nvme-subsystem/nvme-subsys1/subsysnqn")))
		},
	} {
		t.Run(name, func(t *testing.T) {
			r, sys := fixture(t, "k6.18-tcp")
			edit(r)
			res := read(t, sys)
			require.Len(t, res, 2)
			require.NoError(t, res[0].Err)
			assert.Equal(t, "nvme-subsys0", res[0].Subsystem.Name)
			require.Error(t, res[1].Err)
			assert.Contains(t, res[1].Err.Error(), "nvme-subsys1")
		})
	}
}

// TestDeletedController: a controller removed after ctrl_loss_tmo leaves the subsystem (its link goes);
// the heads stay with the paths left.
func TestDeletedController(t *testing.T) {
	r, sys := fixture(t, "k6.18-tcp")
	require.NoError(t, os.Remove(r.Path("sys/devices/virtual/nvme-subsystem/nvme-subsys1/nvme2")))
	s := subsystem(t, sys, "nvme-subsys1")
	require.Len(t, s.Controllers, 1)
	assert.Equal(t, []NamespacePaths{{Name: "nvme1n1", Total: 1, Live: 1, Optimized: 1}, {Name: "nvme1n2", Total: 1, Live: 1, Optimized: 1}}, Namespaces(&s))
}

func TestNoNVMe(t *testing.T) {
	assert.Empty(t, read(t, bounded.NewDirFS(t.TempDir(), bounded.Attr)))
}

func TestParsers(t *testing.T) {
	for in, want := range map[string]State{"new\n": StateNew, "live\n": StateLive, "resetting\n": StateResetting, "connecting\n": StateConnecting,
		"deleting\n": StateDeleting, "deleting (no IO)\n": StateDeletingNoIO, "dead\n": StateDead, "unknown state\n": StateUnknown} {
		got, err := ParseState([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "\n", "Live\n", "live\nlive\n", "deleting (no io)\n"} {
		_, err := ParseState([]byte(bad))
		require.Error(t, err, bad)
	}
	for in, want := range map[string]Transport{"pcie\n": TransportPCIe, "tcp\n": TransportTCP, "rdma\n": TransportRDMA, "fc\n": TransportFC, "loop\n": TransportLoop, "apple-nvme\n": TransportOther} {
		got, err := ParseTransport([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseTransport([]byte("tcp rdma\n"))
	require.Error(t, err)
	for in, want := range map[string]ANAState{"optimized\n": ANAOptimized, "non-optimized\n": ANANonOptimized, "inaccessible\n": ANAInaccessible,
		"persistent-loss\n": ANAPersistentLoss, "change\n": ANAChange} {
		got, err := ParseANAState([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"none\n", "\n", "optimised\n"} {
		_, err := ParseANAState([]byte(bad))
		require.Error(t, err, bad)
	}
	g, err := ParseANAGroup([]byte("4294967295\n"))
	require.NoError(t, err)
	assert.Equal(t, uint32(1<<32-1), g)
	for _, bad := range []string{"4294967296\n", "-1\n", "0x1\n", ""} {
		_, err := ParseANAGroup([]byte(bad))
		require.Error(t, err, bad)
	}
}

// TestSanitized: a subsystem's strings leave valid UTF-8 and within their caps, whatever sysfs held.
func TestSanitized(t *testing.T) {
	r, sys := fixture(t, "k6.18-tcp")
	r.Write("sys/devices/virtual/nvme-subsystem/nvme-subsys1/model", "Lin\xffux\x1b[2J\n")
	long := make([]byte, 3000)
	for i := range long {
		long[i] = 'a'
	}
	r.Write("sys/devices/virtual/nvme-fabrics/ctl/nvme1/address", "traddr="+string(long)+"\n")
	s := subsystem(t, sys, "nvme-subsys1")
	assert.Equal(t, "Lin\uFFFDux\\x1b[2J", s.Model)
	assert.LessOrEqual(t, len(s.Controllers[0].Address), 512)
}

// TestCap: past the cap the highest-numbered subsystems are not read, and counted.
func TestCap(t *testing.T) {
	_, sys := fixture(t, "k6.18-tcp")
	res, omitted, err := NewReader(sys, time.Second, 1).Read(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.Equal(t, "nvme-subsys0", res[0].Subsystem.Name)
	assert.Equal(t, 1, omitted)
}

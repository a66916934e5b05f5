package stackscraper

import (
	"os"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/nvmesubsys"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
)

const (
	tcpNQN  = "nqn.2026-01.io.diskhealth:tcp-target"
	tcpCtrl = "sys/devices/virtual/nvme-fabrics/ctl/nvme2/state"
)

// nvmeRig is the stack source over a copy of one of nvmesubsys's fixture trees, NVMe part only.
func nvmeRig(t *testing.T, scenario string, cfg *Config) (*testRig, *dhtest.Root) {
	t.Helper()
	root := dhtest.NewRoot(t)
	root.CopyTree(libTestdata("nvmesubsys", scenario), "", nil)
	if cfg == nil {
		cfg = createDefaultConfig()
	}
	sys := bounded.NewDirFS(root.Path("sys"), bounded.Attr)
	return newRig(t, readers{sysRoot: root.Path("sys"), sys: sys, nvme: nvmesubsys.NewReader(sys, time.Second, cfg.NVMeMaxSubsystems)}, cfg), root
}

// TestGoldenNVMe: a PCIe drive and an NVMe/TCP subsystem of two controllers and two namespaces.
func TestGoldenNVMe(t *testing.T) {
	rig, root := nvmeRig(t, "k6.18-tcp", nil)
	md := rig.scrape(t)
	dhtest.AssertGolden(t, "nvme-tcp", md, pmetrictest.IgnoreStartTimestamp())

	// A namespace's points carry its block device's hw.id, the one blockdev gives its I/O and SMART
	// series, and its subsystem's as hw.parent.
	ident, err := blockdev.ReadIdentity(root.Path("sys"), "nvme1n1", 259, 1)
	require.NoError(t, err)
	live, ok := pointOf(t, md, "disk_health.nvme.namespace.paths.live", map[string]string{"hw.name": "nvme1n1"})
	require.True(t, ok)
	id, _ := live.Attributes().Get("hw.id")
	assert.Equal(t, blockdev.DiskID(&ident), id.Str())
	parent, _ := live.Attributes().Get("hw.parent")
	assert.Equal(t, tcpNQN, parent.Str())
}

// TestNVMePathDropAndRecovery: nvme2, one of the two TCP paths of both namespaces, goes connecting:
// one event per namespace naming it, none while it stays so, one per namespace when it is back; the
// series say 1 of 2 in between.
func TestNVMePathDropAndRecovery(t *testing.T) {
	rig, root := nvmeRig(t, "k6.18-tcp", nil)
	rig.scrape(t)
	require.Empty(t, records(rig.logs))

	root.Write(tcpCtrl, "connecting\n")
	md := rig.scrape(t)
	ns := map[string]string{"hw.name": "nvme1n1"}
	v, _ := point(t, md, "disk_health.nvme.namespace.paths.live", ns)
	assert.InDelta(t, 1, v, 0)
	v, _ = point(t, md, "disk_health.nvme.namespace.paths.live_max", ns)
	assert.InDelta(t, 2, v, 0)
	v, _ = point(t, md, "disk_health.nvme.subsystem.paths", map[string]string{"hw.id": tcpNQN, "disk_health.nvme.controller.state": "connecting"})
	assert.InDelta(t, 2, v, 0)
	evs := records(rig.logs)
	require.Len(t, evs, 2, "one per namespace")
	lr := evs[0]
	assert.Equal(t, plog.SeverityNumberWarn, lr.SeverityNumber())
	assert.Equal(t, "nvme1n1 (nvme-subsys1): 1 of 2 paths live; lost nvme2 (tcp traddr=192.168.123.10,trsvcid=4420,src_addr=192.168.123.20) connecting", lr.Body().Str())
	assert.Equal(t, EventNVMePathsLost, lr.EventName())
	ctrl, _ := lr.Attributes().Get("disk_health.nvme.controller.name")
	assert.Equal(t, []any{"nvme2"}, ctrl.Slice().AsRaw())
	addr, _ := lr.Attributes().Get("disk_health.nvme.controller.address")
	assert.Equal(t, []any{"traddr=192.168.123.10,trsvcid=4420,src_addr=192.168.123.20"}, addr.Slice().AsRaw())

	rig.scrape(t)
	require.Len(t, records(rig.logs), 2, "still connecting: nothing new")

	root.Write(tcpCtrl, "live\n")
	md = rig.scrape(t)
	evs = records(rig.logs)
	require.Len(t, evs, 4)
	assert.Equal(t, EventNVMePathsRestored, evs[2].EventName())
	assert.Equal(t, plog.SeverityNumberInfo, evs[2].SeverityNumber())
	assert.Equal(t, "nvme1n1 (nvme-subsys1): 2 of 2 paths live again; back nvme2 (tcp traddr=192.168.123.10,trsvcid=4420,src_addr=192.168.123.20)", evs[2].Body().Str())
	v, _ = point(t, md, "disk_health.nvme.subsystem.paths", map[string]string{"hw.id": tcpNQN, "disk_health.nvme.controller.state": "connecting"})
	assert.InDelta(t, 0, v, 0, "the connecting series stays, at 0")
}

// TestNVMeSubsystemVanishes: a subsystem gone for a scrape is forgotten; back with one path, that path is
// its best, and no event says it lost one.
func TestNVMeSubsystemVanishes(t *testing.T) {
	rig, root := nvmeRig(t, "k6.18-tcp", nil)
	rig.scrape(t)
	link := root.Path("sys/class/nvme-subsystem/nvme-subsys1")
	target, err := os.Readlink(link)
	require.NoError(t, err)
	require.NoError(t, os.Remove(link))
	md := rig.scrape(t)
	_, ok := point(t, md, "disk_health.nvme.namespace.paths.live", map[string]string{"hw.name": "nvme1n1"})
	assert.False(t, ok)
	_, ok = point(t, md, "disk_health.nvme.namespace.paths.live", map[string]string{"hw.name": "nvme0n1"})
	assert.True(t, ok, "the PCIe drive is still reported")

	require.NoError(t, os.Symlink(target, link))
	root.Write(tcpCtrl, "connecting\n")
	md = rig.scrape(t)
	v, _ := point(t, md, "disk_health.nvme.namespace.paths.live_max", map[string]string{"hw.name": "nvme1n1"})
	assert.InDelta(t, 1, v, 0)
	assert.Empty(t, records(rig.logs))
}

// TestNVMeANA: paths of one namespace in three ANA states.
func TestNVMeANA(t *testing.T) {
	rig, _ := nvmeRig(t, "k6.1-ana", nil)
	md := rig.scrape(t)
	ns := map[string]string{"hw.name": "nvme0n1"}
	v, _ := point(t, md, "disk_health.nvme.namespace.paths.live", ns)
	assert.InDelta(t, 2, v, 0, "the inaccessible group serves no I/O")
	v, _ = point(t, md, "disk_health.nvme.namespace.paths.optimized", ns)
	assert.InDelta(t, 1, v, 0)
	for _, c := range []struct{ ana, transport string }{{"optimized", "tcp"}, {"non_optimized", "rdma"}, {"inaccessible", "tcp"}} {
		v, ok := point(t, md, "disk_health.nvme.subsystem.paths", map[string]string{"disk_health.nvme.ana.state": c.ana, "disk_health.nvme.transport": c.transport})
		require.True(t, ok, c.ana)
		assert.InDelta(t, 1, v, 0, c.ana)
	}
}

// TestNVMeCap: past nvme_max_subsystems the highest-numbered subsystem is counted, not reported, and
// said once.
func TestNVMeCap(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.NVMeMaxSubsystems = 1
	rig, _ := nvmeRig(t, "k6.18-tcp", cfg)
	rig.scrape(t)
	md := rig.scrape(t)
	v, _ := point(t, md, "disk_health.nvme.subsystems.omitted", nil)
	assert.InDelta(t, 1, v, 0)
	_, ok := point(t, md, "disk_health.nvme.subsystem.paths", map[string]string{"hw.id": tcpNQN})
	assert.False(t, ok)
	assert.Len(t, rig.obs.FilterMessageSnippet("nvme_max_subsystems").All(), 1)
}

// TestNVMeBadSubsystem: garbage in one controller's state costs its subsystem (read status error, a
// partial scrape error naming it); the PCIe drive is still reported.
func TestNVMeBadSubsystem(t *testing.T) {
	rig, root := nvmeRig(t, "k6.18-tcp", nil)
	root.Write(tcpCtrl, "on fire\n")
	md, err := rig.s.scrape(t.Context())
	require.ErrorContains(t, err, "nvme-subsys1")
	v, _ := point(t, md, "disk_health.stack.read.status", map[string]string{"stack.part": "nvme", "stack.read.status": "error"})
	assert.InDelta(t, 1, v, 0)
	_, ok := point(t, md, "disk_health.nvme.subsystem.paths", map[string]string{"hw.id": tcpNQN})
	assert.False(t, ok)
	_, ok = point(t, md, "disk_health.nvme.namespace.paths.live", map[string]string{"hw.name": "nvme0n1"})
	assert.True(t, ok)
}

// TestNVMeAttributeValues: every value nvmesubsys can give is a member of the attribute's enum.
func TestNVMeAttributeValues(t *testing.T) {
	for s := range nvmesubsys.NumStates {
		assert.Contains(t, metadata.MapAttributeDiskHealthNvmeControllerState, s.String())
	}
	for a := range nvmesubsys.NumANAStates {
		assert.Contains(t, metadata.MapAttributeDiskHealthNvmeAnaState, a.String())
	}
	for tr := range nvmesubsys.NumTransports {
		assert.Contains(t, metadata.MapAttributeDiskHealthNvmeTransport, tr.String())
	}
}

// TestNVMePCIeResetting: the single-port PCIe drive (k6.1: no multipath head) resets: its one path is
// gone, which is an ERROR naming the controller and its PCI address; live again, an INFO.
func TestNVMePCIeResetting(t *testing.T) {
	rig, root := nvmeRig(t, "k6.1-pcie", nil)
	rig.scrape(t)
	state := "sys/devices/pci0000:00/0000:00:04.0/nvme/nvme0/state"
	root.Write(state, "resetting\n")
	md := rig.scrape(t)
	v, _ := point(t, md, "disk_health.nvme.namespace.paths.live", map[string]string{"hw.id": "eui.002538b111b2c3d4"})
	assert.InDelta(t, 0, v, 0)
	root.Write(state, "live\n")
	rig.scrape(t)
	evs := records(rig.logs)
	require.Len(t, evs, 2)
	assert.Equal(t, plog.SeverityNumberError, evs[0].SeverityNumber())
	assert.Equal(t, "nvme0n1 (nvme-subsys0): 0 of 1 paths live; lost nvme0 (pcie 0000:00:04.0) resetting", evs[0].Body().Str())
	assert.Equal(t, plog.SeverityNumberInfo, evs[1].SeverityNumber())
	assert.Equal(t, EventNVMePathsLost, evs[0].EventName())
}

func TestNVMeMaxSubsystemsValidated(t *testing.T) {
	c := createDefaultConfig()
	require.NoError(t, c.Validate("stack"))
	c.NVMeMaxSubsystems = 0
	require.ErrorContains(t, c.Validate("stack"), "stack.nvme_max_subsystems: must be positive, got 0")
}

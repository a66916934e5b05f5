package stackscraper

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/dm"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/errcount"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/mdraid"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
)

var testTime = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

// libTestdata is where the libraries keep the fixture trees this source reads.
func libTestdata(lib string, parts ...string) string {
	return filepath.Join(append([]string{"..", "..", lib, "testdata"}, parts...)...)
}

type testRig struct {
	s    *stackScraper
	logs *consumertest.LogsSink
	obs  *observer.ObservedLogs
	dm   *fakeDM
}

func newRig(t *testing.T, r readers, cfg *Config) *testRig {
	t.Helper()
	if cfg == nil {
		cfg = createDefaultConfig()
	}
	core, obs := observer.New(zapcore.InfoLevel)
	set := scrapertest.NewNopSettings(NewFactory().Type())
	set.Logger = zap.New(core)
	if r.sys == nil {
		r.sys = os.DirFS(t.TempDir())
	}
	if r.mountinfo == nil {
		r.mountinfo = func() ([]byte, error) { return nil, nil }
	}
	if r.errors && r.btrfs == nil {
		r.btrfs = errcount.NewBtrfsReader(r.sys, nil, time.Second)
	}
	sink := &consumertest.LogsSink{}
	rig := &testRig{logs: sink, obs: obs}
	if f, ok := r.dm.(*fakeDM); ok {
		rig.dm = f
	}
	rig.s = newScraper(set, cfg, r, sink, func() time.Time { return testTime })
	return rig
}

func (rig *testRig) scrape(t *testing.T) pmetric.Metrics {
	t.Helper()
	md, err := rig.s.scrape(context.Background())
	require.NoError(t, err)
	return md
}

// point finds the value of the one point of metric whose attributes include want.
func point(t *testing.T, md pmetric.Metrics, metric string, want map[string]string) (float64, bool) {
	t.Helper()
	p, ok := pointOf(t, md, metric, want)
	if !ok {
		return 0, false
	}
	if p.ValueType() == pmetric.NumberDataPointValueTypeDouble {
		return p.DoubleValue(), true
	}
	return float64(p.IntValue()), true
}

// pointOf finds the one point of metric whose attributes include want.
func pointOf(t *testing.T, md pmetric.Metrics, metric string, want map[string]string) (pmetric.NumberDataPoint, bool) {
	t.Helper()
	var out []pmetric.NumberDataPoint
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		if m.Name() != metric {
			return
		}
		pts := pdatawalk.NumberPoints(m)
	next:
		for i := range pts.Len() {
			p := pts.At(i)
			for k, v := range want {
				got, ok := p.Attributes().Get(k)
				if !ok || got.AsString() != v {
					continue next
				}
			}
			out = append(out, p)
		}
	})
	require.LessOrEqual(t, len(out), 1, "%s %v matches %d points", metric, want, len(out))
	if len(out) == 0 {
		return pmetric.NumberDataPoint{}, false
	}
	return out[0], true
}

// state is the hw.status state set to 1 for the logical disk id.
func state(t *testing.T, md pmetric.Metrics, id string) string {
	t.Helper()
	for _, s := range []string{"ok", "degraded", "predicted_failure", "failed"} {
		if v, _ := point(t, md, "hw.status", map[string]string{"hw.id": id, "hw.state": s}); v == 1 {
			return s
		}
	}
	return ""
}

// ---- md: every fixture tree of the mdraid library is a golden ----

func TestGoldenMD(t *testing.T) {
	want := map[string]string{
		"check": "ok", "clean": "ok", "degraded": "degraded", "delayed": "ok", "faulty": "degraded",
		"raid0": "ok", "recover": "degraded", "repair": "ok", "reshape": "ok", "resync": "ok", "spare": "ok",
	}
	cases, err := os.ReadDir(libTestdata("mdraid"))
	require.NoError(t, err)
	require.Len(t, cases, len(want), "a new mdraid fixture needs its verdict here")
	for _, c := range cases {
		t.Run(c.Name(), func(t *testing.T) {
			sys := os.DirFS(libTestdata("mdraid", c.Name(), "sys"))
			rig := newRig(t, readers{sys: sys, md: mdraid.NewReader(sys, time.Second)}, nil)
			md := rig.scrape(t)
			dhtest.AssertGolden(t, "md-"+c.Name(), md, pmetrictest.IgnoreStartTimestamp())
			arrays, err := mdraid.ListArrays(sys)
			require.NoError(t, err)
			for _, a := range arrays {
				assert.Equal(t, want[c.Name()], state(t, md, arrayID(t, sys, a)), a)
			}
		})
	}
}

// arrayID is the hw.id of the array named name in sys.
func arrayID(t *testing.T, sys fs.FS, name string) string {
	t.Helper()
	a, err := mdraid.ReadArray(sys, name)
	require.NoError(t, err)
	return mdID(&a)
}

// The values equal /proc/mdstat's (the administrator's view, which mdadm agrees with), case by case.
func TestMDAgreesWithMdstat(t *testing.T) {
	cases, err := os.ReadDir(libTestdata("mdraid"))
	require.NoError(t, err)
	for _, c := range cases {
		f, err := os.Open(libTestdata("mdraid", c.Name(), "mdstat"))
		require.NoError(t, err)
		stat, err := mdraid.ParseMdstat(f)
		require.NoError(t, f.Close())
		require.NoError(t, err)
		sys := os.DirFS(libTestdata("mdraid", c.Name(), "sys"))
		rig := newRig(t, readers{sys: sys, md: mdraid.NewReader(sys, time.Second)}, nil)
		md := rig.scrape(t)
		for _, a := range stat {
			id := map[string]string{"hw.id": arrayID(t, sys, a.Name)}
			if a.Blocks > 0 {
				limit, ok := point(t, md, "hw.logical_disk.limit", id)
				assert.True(t, ok, c.Name())
				assert.InDelta(t, float64(a.Blocks*1024), limit, 0, "%s: size = mdstat blocks", c.Name())
			}
			if a.RaidDisks > 0 {
				missing, _ := point(t, md, "disk_health.logical_disk.md.degraded", id)
				assert.InDelta(t, float64(a.RaidDisks-a.Working), missing, 0, "%s: degraded = [n/m]", c.Name())
			}
			if a.Action != "" && !a.Delayed && !a.Pending {
				var progress float64
				var ok bool
				for _, act := range []string{"resync", "recover", "check", "repair", "reshape"} {
					if v, found := point(t, md, "disk_health.logical_disk.md.sync.progress", map[string]string{"hw.id": id["hw.id"], "md.sync_action": act}); found {
						progress, ok = v, true
					}
				}
				assert.True(t, ok, "%s: progress while %s", c.Name(), a.Action)
				assert.InDelta(t, a.Ratio, progress, 0.002, "%s: progress = mdstat's percentage", c.Name())
			}
		}
	}
}

// The member that fails is named with its physical disk's hw.id, in one state change, and on the
// member points as hw.parent; its corrected read errors reach the signs board.
func TestMemberFailureEvent(t *testing.T) {
	root := t.TempDir()
	dhtest.RootAt(t, root).CopyTree(libTestdata("mdraid", "clean", "sys"), ".", nil)
	clean := readFixtureMembers(t, root)
	require.NotEmpty(t, clean)
	for i, m := range clean {
		addDisk(t, root, m.disk, fmt.Sprintf("8:%d", 16*i), fmt.Sprintf("0x5000c500000000%02d", i), m.part)
	}
	sys := os.DirFS(root)
	board := signs.New()
	cfg := createDefaultConfig()
	cfg.Signs = board
	rig := newRig(t, readers{sysRoot: root, sys: sys, md: mdraid.NewReader(sys, time.Second)}, cfg)
	md := rig.scrape(t)
	assert.Equal(t, "ok", state(t, md, "md:4b0017ff-b491-a63d-9b97-1365c2243e05"), "the clean fixture's md0, by its uuid")
	assert.Equal(t, 0, rig.logs.LogRecordCount())
	victim := clean[len(clean)-1]
	parent, ok := point(t, md, "disk_health.logical_disk.md.member.state", map[string]string{"md.member": victim.name, "disk_health.md.member_state": "in_sync", "hw.parent": victim.wwn})
	require.True(t, ok, "member points carry hw.parent")
	assert.InDelta(t, 1, parent, 0)

	// The kernel marks the member faulty and the array degraded; it counted 3 corrected read errors.
	dir := filepath.Join(root, "block", "md0", "md", "dev-"+victim.name)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state"), []byte("faulty\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "slot"), []byte("none\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "errors"), []byte("3\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "block", "md0", "md", "degraded"), []byte("1\n"), 0o644))
	md = rig.scrape(t)
	assert.Equal(t, "degraded", state(t, md, "md:4b0017ff-b491-a63d-9b97-1365c2243e05"), "the clean fixture's md0, by its uuid")
	faulty, _ := point(t, md, "disk_health.logical_disk.md.member.state", map[string]string{"md.member": victim.name, "disk_health.md.member_state": "faulty"})
	assert.InDelta(t, 1, faulty, 0)
	// The member's errors are the member's, as the semantic conventions' hardware model has it: the member
	// (its physical disk's hw.id, its block device's name) is the component, the array its parent.
	errs, ok := point(t, md, "hw.errors", map[string]string{"hw.id": victim.wwn, "hw.name": victim.name, "hw.type": "physical_disk",
		"hw.parent": "md:4b0017ff-b491-a63d-9b97-1365c2243e05", "error.type": "corrected_read"})
	require.True(t, ok, "a member's hw.errors point is the member's")
	assert.InDelta(t, 3, errs, 0)

	recs := records(rig.logs)
	var changes []plog.LogRecord
	for _, r := range recs {
		if r.EventName() == emit.EventStateChange {
			changes = append(changes, r)
		}
	}
	require.Len(t, changes, 1, "one state change")
	body := changes[0].Body().Str()
	assert.Contains(t, body, "md0 (raid1): health changed from ok to degraded")
	assert.Contains(t, body, victim.name+" (hw.id "+victim.wwn+")")
	st, _ := changes[0].Attributes().Get("hw.state")
	assert.Equal(t, "degraded", st.Str())
	assert.Contains(t, board.Counters(victim.wwn), signs.Counter{Kind: signs.KernelIOErrors, Subject: "md corrected read errors of " + victim.name + " in md0", Value: 3})

	// Nothing changes: nothing is said.
	n := rig.logs.LogRecordCount()
	rig.scrape(t)
	assert.Equal(t, n, rig.logs.LogRecordCount())
}

type fixtureMember struct{ name, disk, part, wwn string }

// readFixtureMembers lists md0's members and makes up a disk for each (sdb1 → sdb).
func readFixtureMembers(t *testing.T, root string) []fixtureMember {
	t.Helper()
	a, err := mdraid.ReadArray(os.DirFS(root), "md0")
	require.NoError(t, err)
	var out []fixtureMember
	for i, m := range a.Members {
		disk := strings.TrimRight(m.Name, "0123456789")
		part := m.Name
		if disk == m.Name {
			part = ""
		}
		out = append(out, fixtureMember{name: m.Name, disk: disk, part: part, wwn: fmt.Sprintf("0x5000c500000000%02d", i)})
	}
	return out
}

// addDisk makes a whole disk (with a wwid) and optionally one partition visible under class/block.
func addDisk(t *testing.T, root, disk, dev, wwid, part string) {
	t.Helper()
	ddir := filepath.Join(root, "devices", "pci0000:00", disk)
	require.NoError(t, os.MkdirAll(filepath.Join(ddir, "device"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ddir, "dev"), []byte(dev+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ddir, "wwid"), []byte(wwid+"\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "class", "block"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join("..", "..", "devices", "pci0000:00", disk), filepath.Join(root, "class", "block", disk)))
	if part != "" {
		pdir := filepath.Join(ddir, part)
		require.NoError(t, os.MkdirAll(pdir, 0o755))
		maj, minor, _ := strings.Cut(dev, ":")
		require.NoError(t, os.WriteFile(filepath.Join(pdir, "dev"), []byte(maj+":"+minor+"1\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(pdir, "partition"), []byte("1\n"), 0o644))
		require.NoError(t, os.Symlink(filepath.Join("..", "..", "devices", "pci0000:00", disk, part), filepath.Join(root, "class", "block", part)))
	}
}

func records(sink *consumertest.LogsSink) []plog.LogRecord {
	var out []plog.LogRecord
	for _, ld := range sink.AllLogs() {
		pdatawalk.ForEachLogRecord(ld, func(_ pcommon.Resource, lr plog.LogRecord) { out = append(out, lr) })
	}
	return out
}

// stuckSysfs blocks every open of one array's array_state until release is closed: an array stuck on
// its reconfiguration lock.
type stuckSysfs struct {
	fs.FS
	array   string
	release chan struct{}
}

func (s stuckSysfs) Open(name string) (fs.File, error) {
	if name == "block/"+s.array+"/md/array_state" {
		<-s.release
	}
	return s.FS.Open(name)
}

// An md array whose read times out makes the md part's read status timeout (logged once), not ok, while
// the other arrays are still reported; when the array answers again the status is ok again.
func TestTimedOutArrayReadStatus(t *testing.T) {
	release := make(chan struct{})
	sys := stuckSysfs{FS: os.DirFS(libTestdata("mdraid", "delayed", "sys")), array: "md1", release: release}
	reader := mdraid.NewReader(sys, 50*time.Millisecond)
	rig := newRig(t, readers{sys: sys, md: reader}, nil)
	mdStatus := func(md pmetric.Metrics) string {
		for _, st := range metadata.MapAttributeStackReadStatus {
			if v, _ := point(t, md, "disk_health.stack.read.status", map[string]string{"stack.part": "md", "stack.read.status": st.String()}); v == 1 {
				return st.String()
			}
		}
		return ""
	}
	for range 2 { // the read that times out, then the one that finds it still in flight
		md, err := rig.s.scrape(context.Background())
		require.ErrorContains(t, err, "md1: ")
		assert.True(t, scrapererror.IsPartialScrapeError(err))
		assert.Equal(t, "timeout", mdStatus(md))
		assert.Equal(t, "ok", state(t, md, "md:aacce1b0-fdeb-cef5-65eb-5a21d249ae1e"), "md0 is reported")
	}
	assert.Equal(t, 1, rig.obs.FilterMessageSnippet("Storage stack read failed").Len(), "logged once")

	close(release)
	reader.Wait()
	md := rig.scrape(t)
	assert.Equal(t, "ok", mdStatus(md))
	left, ok := point(t, md, "disk_health.stack.read.status", map[string]string{"stack.part": "md", "stack.read.status": "timeout"})
	assert.True(t, ok && left == 0, "the status left is said 0, once")
	assert.Equal(t, 1, rig.obs.FilterMessageSnippet("works again").Len())
	_, ok = point(t, rig.scrape(t), "disk_health.stack.read.status", map[string]string{"stack.part": "md", "stack.read.status": "timeout"})
	assert.False(t, ok, "then never again")
}

// ---- device-mapper: the dm library's recorded status and table lines ----

// fakeDM serves devices built from dm/testdata/lines.txt.
type fakeDM struct {
	devices []dm.Device
	err     error
	reads   int
}

func (f *fakeDM) Read(context.Context) ([]dm.Device, error) {
	f.reads++
	return f.devices, f.err
}
func (*fakeDM) Close() error { return nil }

// recordedLines reads dm/testdata/lines.txt: case → its parameter string.
func recordedLines(t testing.TB) map[string]string {
	t.Helper()
	f, err := os.Open(libTestdata("dm", "lines.txt"))
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		require.GreaterOrEqual(t, len(fields), 3, line)
		out[fields[0]] = strings.Join(fields[3:], " ")
	}
	require.NoError(t, sc.Err())
	return out
}

func dmDevices(t testing.TB) []dm.Device {
	t.Helper()
	l := recordedLines(t)
	pool := func(name, status string) dm.Device {
		return dm.Device{Name: "vg0-" + name + "-tpool", UUID: "LVM-vg0uuid" + name + "-tpool", Major: 253, Minor: uint32(len(name)),
			Targets: []dm.Target{{Length: 163840 * 128, Type: "thin-pool", Status: l[status], Table: l["pool-ok-table"]}}}
	}
	mpath := func(name, status string) dm.Device {
		return dm.Device{Name: name, UUID: "mpath-3600" + name, Major: 253, Minor: 40 + uint32(len(name)),
			Targets: []dm.Target{{Length: 2097152, Type: "multipath", Status: l[status]}}}
	}
	return []dm.Device{
		pool("ok", "pool-ok"), pool("full", "pool-ro-metadata-full"), pool("nospace", "pool-out-of-data-space"),
		pool("check", "pool-needs-check"), pool("fail", "pool-fail"), pool("err", "pool-error"),
		{Name: "vg0-thin1", UUID: "LVM-vg0uuidthin1", Major: 253, Minor: 20,
			Targets: []dm.Target{{Length: 4194304, Type: "thin", Status: l["thin-ok"], Table: l["thin-table"]}}},
		{Name: "vg0-root", UUID: "LVM-vg0uuidroot", Major: 253, Minor: 21, Targets: []dm.Target{{Length: 8, Type: "linear", Table: "8:2 2048"}}},
		mpath("mpatha", "mpath-ok"), mpath("mpathb", "mpath-one-failed"), mpath("mpathc", "mpath-all-failed"),
	}
}

func TestGoldenDM(t *testing.T) {
	rig := newRig(t, readers{dm: &fakeDM{devices: dmDevices(t)}}, nil)
	md := rig.scrape(t)
	dhtest.AssertGolden(t, "dm", md, pmetrictest.IgnoreStartTimestamp())
	for id, want := range map[string]string{
		"LVM-vg0uuidok-tpool": "ok", "LVM-vg0uuidfull-tpool": "failed", "LVM-vg0uuidnospace-tpool": "failed",
		"LVM-vg0uuidcheck-tpool": "failed", "LVM-vg0uuidfail-tpool": "failed", "LVM-vg0uuiderr-tpool": "failed",
		"mpath-3600mpatha": "ok", "mpath-3600mpathb": "degraded", "mpath-3600mpathc": "failed",
	} {
		assert.Equal(t, want, state(t, md, id), id)
	}
	_, ok := point(t, md, "hw.status", map[string]string{"hw.id": "LVM-vg0uuidroot"})
	assert.False(t, ok, "a linear volume has no verdict of its own")
	active, _ := point(t, md, "disk_health.logical_disk.multipath.paths", map[string]string{"hw.id": "mpath-3600mpathb", "multipath.path.state": "active"})
	failed, _ := point(t, md, "disk_health.logical_disk.multipath.paths", map[string]string{"hw.id": "mpath-3600mpathb", "multipath.path.state": "failed"})
	assert.InDelta(t, 1, active, 0)
	assert.InDelta(t, 1, failed, 0)
}

// Data and metadata usage equal what the status line says (`dmsetup status`), in bytes.
func TestThinPoolUsageEqualsStatus(t *testing.T) {
	l := recordedLines(t)
	st, err := dm.ParseThinPoolStatus(l["pool-ok"])
	require.NoError(t, err)
	tb, err := dm.ParseThinPoolTable(l["pool-ok-table"])
	require.NoError(t, err)
	rig := newRig(t, readers{dm: &fakeDM{devices: dmDevices(t)[:1]}}, nil)
	md := rig.scrape(t)
	id := "LVM-vg0uuidok-tpool"
	used, _ := point(t, md, "hw.logical_disk.usage", map[string]string{"hw.id": id, "hw.logical_disk.state": "used"})
	limit, _ := point(t, md, "hw.logical_disk.limit", map[string]string{"hw.id": id})
	mused, _ := point(t, md, "disk_health.logical_disk.metadata.usage", map[string]string{"hw.id": id, "hw.logical_disk.state": "used"})
	util, _ := point(t, md, "disk_health.logical_disk.metadata.utilization", map[string]string{"hw.id": id, "hw.logical_disk.state": "used"})
	assert.InDelta(t, float64(st.UsedDataBlocks*tb.DataBlockSectors*512), used, 0)
	assert.InDelta(t, float64(st.TotalDataBlocks*tb.DataBlockSectors*512), limit, 0)
	assert.InDelta(t, float64(st.UsedMetadataBlocks*4096), mused, 0)
	assert.InDelta(t, float64(st.UsedMetadataBlocks)/float64(st.TotalMetadataBlocks), util, 1e-12)
}

// Filling a pool past the threshold degrades it; running out of data space fails it; each step is one
// state change.
func TestThinPoolThreshold(t *testing.T) {
	line := func(used uint64, mode string) string {
		return fmt.Sprintf("1 196/4096 %d/1000 - %s discard_passdown queue_if_no_space - 1024", used, mode)
	}
	f := &fakeDM{}
	cfg := createDefaultConfig()
	cfg.ThinPoolThreshold = 0.8
	rig := newRig(t, readers{dm: f}, cfg)
	id := "LVM-pool"
	for _, step := range []struct {
		used  uint64
		mode  string
		state string
	}{{500, "rw", "ok"}, {799, "rw", "ok"}, {800, "rw", "degraded"}, {1000, "out_of_data_space", "failed"}, {100, "rw", "ok"}} {
		f.devices = []dm.Device{{Name: "vg-pool-tpool", UUID: id, Targets: []dm.Target{{Type: "thin-pool", Status: line(step.used, step.mode), Table: "253:1 253:2 128 0 0"}}}}
		assert.Equal(t, step.state, state(t, rig.scrape(t), id), "%d/1000 %s", step.used, step.mode)
	}
	var changes []string
	for _, r := range records(rig.logs) {
		if r.EventName() == emit.EventStateChange {
			s, _ := r.Attributes().Get("hw.state")
			changes = append(changes, s.Str())
		}
	}
	assert.Equal(t, []string{"degraded", "failed", "ok"}, changes)
}

// Without CAP_SYS_ADMIN the dm part reports permission_denied, logs it once, and md and the error
// counters are read as ever.
func TestPermissionDeniedOnce(t *testing.T) {
	sys := os.DirFS(libTestdata("mdraid", "degraded", "sys"))
	f := &fakeDM{err: &dm.PermissionError{Op: "open /dev/mapper/control", Err: os.ErrPermission}}
	rig := newRig(t, readers{sys: sys, md: mdraid.NewReader(sys, time.Second), dm: f, errors: true}, nil)
	for range 3 {
		md := rig.scrape(t)
		v, _ := point(t, md, "disk_health.stack.read.status", map[string]string{"stack.part": "device_mapper", "stack.read.status": "permission_denied"})
		assert.InDelta(t, 1, v, 0)
		v, _ = point(t, md, "disk_health.stack.read.status", map[string]string{"stack.part": "md", "stack.read.status": "ok"})
		assert.InDelta(t, 1, v, 0)
		assert.Equal(t, "degraded", state(t, md, "md:8f882718-1df7-322d-2ddc-4f065da20a36"), "md is read without the capability")
	}
	assert.Equal(t, 3, f.reads)
	assert.Equal(t, 1, rig.obs.FilterMessageSnippet("refused").Len(), "logged once")
	require.ErrorIs(t, f.err, dm.ErrPermission)

	f.err = nil
	rig.scrape(t)
	assert.Equal(t, 1, rig.obs.FilterMessageSnippet("works again").Len())
}

// ---- error counters: the errcount library's fixture tree ----

func TestGoldenErrors(t *testing.T) {
	root := t.TempDir()
	dhtest.RootAt(t, root).CopyTree(libTestdata("errcount", "sys"), ".", nil)
	// The fixture names the disks under block/; give them the class/block identity the I/O and SMART
	// sources read hw.id from (sda1 and sdb1 are partitions of sda and sdb).
	addDisk(t, root, "sda", "8:0", "0x5000c500aaaa0001", "sda1")
	addDisk(t, root, "sdb", "8:16", "0x5000c500aaaa0002", "sdb1")
	addDisk(t, root, "sdc", "8:32", "0x5000c500aaaa0003", "")
	mountinfo, err := os.ReadFile(libTestdata("errcount", "mountinfo.txt"))
	require.NoError(t, err)
	board := signs.New()
	cfg := createDefaultConfig()
	cfg.Signs = board
	// Off by default (error_status says it); its own rule is checked here.
	cfg.MetricsBuilderConfig.Metrics.DiskHealthFilesystemReadOnlyAfterErrors.Enabled = true
	sys := os.DirFS(root)
	rig := newRig(t, readers{sysRoot: root, sys: sys, errors: true, mountinfo: func() ([]byte, error) { return mountinfo, nil }}, cfg)
	md, err := rig.s.scrape(context.Background())
	// The fixture's sdc has a garbage iodone_cnt: a partial error naming it, the other disks reported.
	require.ErrorContains(t, err, "block/sdc/device/iodone_cnt")
	assert.True(t, scrapererror.IsPartialScrapeError(err))
	dhtest.AssertGolden(t, "errors", md, pmetrictest.IgnoreStartTimestamp())

	// Each counter equals the file it comes from.
	for _, disk := range []string{"sda", "sdb"} {
		c, err := errcount.ReadSCSI(sys, disk)
		require.NoError(t, err)
		v, _ := point(t, md, "hw.errors", map[string]string{"hw.name": disk, "error.type": "scsi_io_error"})
		assert.InDelta(t, float64(c.Errors), v, 0, disk)
		v, _ = point(t, md, "hw.errors", map[string]string{"hw.name": disk, "error.type": "scsi_timeout"})
		assert.InDelta(t, float64(c.Timeouts), v, 0, disk)
	}
	ext4, err := errcount.ReadExt4(sys)
	require.NoError(t, err)
	for _, e := range ext4 {
		v, _ := point(t, md, "disk_health.filesystem.errors", map[string]string{"system.device": e.Device})
		assert.InDelta(t, float64(e.Count), v, 0, e.Device)
	}
	// sda1 went read-only after errors under a rw mount; sdb1 was mounted ro by its administrator.
	ro, _ := point(t, md, "disk_health.filesystem.read_only_after_errors", map[string]string{"system.device": "sda1", "system.filesystem.mountpoint": "/srv/data"})
	assert.InDelta(t, 1, ro, 0)
	ro, _ = point(t, md, "disk_health.filesystem.read_only_after_errors", map[string]string{"system.device": "sdb1"})
	assert.InDelta(t, 0, ro, 0)
	// The same in the error state set: sdb1's ro is its administrator's (its mount is ro), no error state.
	assert.Equal(t, map[string]string{"dm-0": "ok", "sda1": "read_only_after_errors", "sdb1": "ok", "loop0": "ok"}, fsStates(t, md))
	assert.Equal(t, []string{"sda1 read_only_after_errors<- WARN"}, fsEvents(t, rig, ""))
	// The SCSI counters stay off the board: ioerr_cnt counts pass-through commands that completed with
	// CHECK CONDITION (every ATA command sent with CK_COND), so a polled healthy disk would turn degraded.
	// The filesystem's errors are on it.
	for _, id := range []string{"0x5000c500aaaa0001", "0x5000c500aaaa0002", "0x5000c500aaaa0003"} {
		for _, c := range board.Counters(id) {
			assert.Equal(t, signs.FilesystemErrors, c.Kind, "%s: %+v", id, c)
			assert.NotContains(t, c.Subject, "SCSI", id)
		}
	}
	assert.Len(t, board.Counters("0x5000c500aaaa0001"), 1, "sda1's ext4 errors are on the board")
}

// The mount table is parsed by the filesystem source's parser: a bad line is named with its line number,
// costs only its own mount, and is one problem logged once over many scrapes, not a failed read of the
// errors part every scrape. Mount points are unescaped as the filesystem source reports them.
func TestBadMountinfoLineNamedOnce(t *testing.T) {
	root := t.TempDir()
	addDisk(t, root, "sda", "8:0", "0x5000c500aaaa0001", "sda1")
	ext4 := filepath.Join(root, "fs", "ext4", "sda1")
	require.NoError(t, os.MkdirAll(ext4, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dev", "block"), 0o755))
	require.NoError(t, os.Symlink("../../class/block/sda1", filepath.Join(root, "dev", "block", "8:1")))
	for file, v := range map[string]string{"errors_count": "3", "first_error_time": "1777000000", "last_error_time": "1777000100"} {
		require.NoError(t, os.WriteFile(filepath.Join(ext4, file), []byte(v+"\n"), 0o644))
	}
	mountinfo := []byte("22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/mapper/vg0-root rw\n" +
		"this is no mount\n" +
		"40 22 8:1 / /srv/my\\040data rw,relatime shared:20 - ext4 /dev/sda1 rw,errors=remount-ro\n")
	sys := os.DirFS(root)
	rig := newRig(t, readers{sysRoot: root, sys: sys, errors: true, mountinfo: func() ([]byte, error) { return mountinfo, nil }}, nil)
	core, logs := observer.New(zapcore.InfoLevel)
	rep := emit.NewReporter(zap.New(core), nil)
	for range 3 {
		md, err := rig.s.scrape(context.Background())
		require.ErrorContains(t, err, `mountinfo line 2 "this is no mount"`)
		assert.True(t, scrapererror.IsPartialScrapeError(err))
		require.NoError(t, rep.Report(err))
		v, _ := point(t, md, "disk_health.stack.read.status", map[string]string{"stack.part": "errors", "stack.read.status": "ok"})
		assert.InDelta(t, 1, v, 0, "a bad line is not a failed read of the errors part")
		v, ok := point(t, md, "disk_health.filesystem.errors", map[string]string{"system.device": "sda1", "system.filesystem.mountpoint": "/srv/my data"})
		assert.True(t, ok, "the mount after the bad line is read, its mount point unescaped")
		assert.InDelta(t, 3, v, 0)
	}
	assert.Equal(t, 1, logs.FilterMessageSnippet("Scrape problem").Len(), "one problem, logged once")
	assert.Equal(t, 0, rig.obs.FilterMessageSnippet("Storage stack read failed").Len())
}

// TestRulesDocumented: the rule table of documentation-extra.md is the health package's logical-disk table.
func TestRulesDocumented(t *testing.T) {
	doc, err := os.ReadFile("documentation.md")
	require.NoError(t, err)
	for _, r := range health.LogicalRules() {
		row := fmt.Sprintf("| `%s` | %s | %s | %s |", r.ID, r.State, r.Protocols, r.Condition)
		assert.Contains(t, string(doc), row)
	}
}

// TestEventsDocumented: every event name and attribute the scraper sends is in documentation.md.
func TestEventsDocumented(t *testing.T) {
	doc, err := os.ReadFile("documentation.md")
	require.NoError(t, err)
	for _, name := range []string{emit.EventStateChange, emit.EventNewSign, "hw.state", "disk_health.previous_state", "disk_health.rule",
		EventNVMePathsLost, EventNVMePathsRestored, "disk_health.nvme.controller.name", "disk_health.nvme.controller.address", "disk_health.nvme.transport", "hw.parent",
		EventFilesystemErrorStateChange, "disk_health.filesystem.error_state", "system.device", "system.filesystem.mountpoint", "system.filesystem.type"} {
		assert.Contains(t, string(doc), "`"+name+"`", name)
	}
}

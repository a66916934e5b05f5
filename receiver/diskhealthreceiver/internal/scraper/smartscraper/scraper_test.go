package smartscraper

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device/devicetest"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// smartHarness is a SMART scraper reading a simulated machine.
type smartHarness struct {
	s    *smartScraper
	m    *devicetest.Machine
	logs *consumertest.LogsSink
	obs  *observer.ObservedLogs
}

func newSMARTHarness(t *testing.T, nvmeFixture string, mod func(*device.Config)) *smartHarness {
	t.Helper()
	return newHarnessOn(t, devicetest.QEMU(t, nvmeFixture), mod)
}

// newHarnessOn is a SMART scraper reading the simulated machine m.
func newHarnessOn(t *testing.T, m *devicetest.Machine, mod func(*device.Config)) *smartHarness {
	t.Helper()
	return newHarnessWith(t, m, mod, nil)
}

// newHarnessWith is newHarnessOn with the source's config changed by cfgMod (metrics turned on, say).
func newHarnessWith(t *testing.T, m *devicetest.Machine, mod func(*device.Config), cfgMod func(*Config)) *smartHarness {
	t.Helper()
	set := scrapertest.NewNopSettings(metadata.Type)
	core, obs := observer.New(zapcore.DebugLevel)
	set.Logger = zap.New(core)
	dc := device.Config{Timeout: 2 * time.Second, Standby: device.StandbyStandby, Open: m.Open, Library: m.Library(), Discover: m.Discover}
	if mod != nil {
		mod(&dc)
	}
	sink := &consumertest.LogsSink{}
	s := newTestScraper(t, set, sink, dc, cfgMod)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.shutdown(ctx))
	})
	return &smartHarness{s: s, m: m, logs: sink, obs: obs}
}

func (h *smartHarness) scrape(t *testing.T) pmetric.Metrics {
	t.Helper()
	md, err := h.s.scrape(t.Context())
	require.NoError(t, err)
	return md
}

func compareGolden(t *testing.T, name string, md pmetric.Metrics) {
	t.Helper()
	dhtest.AssertGolden(t, name, md, pmetrictest.IgnoreTimestamp(), pmetrictest.IgnoreStartTimestamp(),
		// the wall-clock time of the read
		pmetrictest.IgnoreMetricValues("disk_health.physical_disk.smart.read.time"))
}

// The metrics of the four QEMU disks: two SATA (one posing as a Seagate in the drive database), one
// NVMe and one SAS (scsi_debug-like). The values are those smartctl and nvme-cli printed for the same
// disks (testdata/smart/qemu), which the decoder tests check; this golden file pins the wiring.
func TestSMARTScraperGolden(t *testing.T) {
	h := newSMARTHarness(t, "k6.12", nil)
	md := h.scrape(t)
	compareGolden(t, "smart-qemu", md)
	assert.Zero(t, h.logs.LogRecordCount(), "a healthy first sight is not news")
}

func TestSMARTScraperReadTime(t *testing.T) {
	h := newSMARTHarness(t, "k6.12", nil)
	before := time.Now().Unix()
	md := h.scrape(t)
	pts := pointsByDisk(md, "disk_health.physical_disk.smart.read.time")
	require.Len(t, pts, 4)
	for disk, p := range pts {
		assert.GreaterOrEqual(t, p[0].IntValue(), before, disk)
		assert.LessOrEqual(t, p[0].IntValue(), time.Now().Unix(), disk)
	}
}

// A critical warning appearing on the NVMe disk: hw.status goes to failed, and exactly one
// state-change event (plus one for the new sign) goes to the logs pipeline, once.
func TestSMARTScraperHealthEvents(t *testing.T) {
	h := newSMARTHarness(t, "k6.12", nil)
	md := h.scrape(t)
	assert.Equal(t, map[string]int64{"ok": 1, "degraded": 0, "predicted_failure": 0, "failed": 0}, statusSet(md, "nvme0", "hw.status", "hw.state"))

	failing := devicetest.QEMU(t, "k6.12-critwarn4").Disk("nvme0").Pages[devicetest.NVMeLog(nvme.LogSMART)]
	d := h.m.Disk("nvme0")
	d.Lock()
	d.Pages[devicetest.NVMeLog(nvme.LogSMART)] = failing
	d.Unlock()
	md = h.scrape(t)
	assert.Equal(t, map[string]int64{"ok": 0, "degraded": 0, "predicted_failure": 0, "failed": 1}, statusSet(md, "nvme0", "hw.status", "hw.state"))
	assert.Equal(t, map[string]int64{"spare_below_threshold": 0, "temperature": 0, "reliability_degraded": 1, "read_only": 0,
		"volatile_backup_failed": 0, "pmr_unreliable": 0}, statusSet(md, "nvme0", "disk_health.physical_disk.nvme.critical_warning", "nvme.critical_warning"))

	require.Equal(t, 2, h.logs.LogRecordCount())
	ld := h.logs.AllLogs()[0]
	require.Equal(t, 2, ld.ResourceLogs().Len())
	change := ld.ResourceLogs().At(0)
	id, _ := change.Resource().Attributes().Get("hw.id")
	assert.Equal(t, h.m.Disk("nvme0").Info.ID, id.Str())
	lr := change.ScopeLogs().At(0).LogRecords().At(0)
	assert.Equal(t, "nvme0 (QEMU NVMe Ctrl, serial smarttest): health changed from ok to failed: the controller reports its reliability is degraded by media or internal errors (critical warning bit 2)", lr.Body().Str())
	attrs := lr.Attributes().AsRaw()
	assert.Equal(t, map[string]any{"hw.state": "failed", "disk_health.previous_state": "ok"}, attrs)
	assert.Equal(t, "ERROR", lr.SeverityText())
	assert.Equal(t, "disk_health.state_change", lr.EventName())
	signRecord := ld.ResourceLogs().At(1).ScopeLogs().At(0).LogRecords().At(0)
	sign := signRecord.Attributes().AsRaw()
	assert.Equal(t, "disk_health.new_sign", signRecord.EventName())
	assert.Equal(t, "nvme_reliability_degraded", sign["disk_health.rule"])

	logged := h.obs.FilterMessage("disk health event").All()
	require.Len(t, logged, 2, "the collector's own log says it too")
	assert.Equal(t, lr.Body().Str(), logged[0].ContextMap()["event"])

	h.scrape(t)
	assert.Equal(t, 2, h.logs.LogRecordCount(), "no event while nothing changes")
}

// A disk that falls asleep gets no SMART command; its last values go out once more marked stale, then
// only its read status is reported.
func TestSMARTScraperStandbyStale(t *testing.T) {
	h := newSMARTHarness(t, "k6.12", nil)
	h.scrape(t)
	sda := h.m.Disk("sda")
	sda.Lock()
	sda.Power = ata.PowerStandby
	sda.Unlock()
	sda.ResetSent()

	md := h.scrape(t)
	assert.Equal(t, []string{devicetest.ATACheckPowerMode}, sda.Sent())
	status := statusSet(md, "sda", "disk_health.physical_disk.smart.read.status", "smart.read.status")
	assert.Equal(t, int64(1), status["standby_skipped"])
	assert.Equal(t, int64(0), status["ok"])
	stale, fresh := 0, 0
	pdatawalk.ForEachMetric(md, func(r pcommon.Resource, m pmetric.Metric) {
		if name, _ := r.Attributes().Get("hw.name"); name.Str() != "sda" {
			return
		}
		for _, dp := range numberPoints(m) {
			if dp.Flags().NoRecordedValue() {
				stale++
				assert.NotContains(t, m.Name(), "read.", "the read status is current, not stale")
			} else {
				fresh++
				assert.Contains(t, m.Name(), "disk_health.physical_disk.smart.read.", "only the read status and time are current: %s", m.Name())
			}
		}
	})
	assert.Positive(t, stale)
	assert.Equal(t, 3, fresh, "the read status, the one left (ok) at 0, and the last successful read's time")

	md = h.scrape(t)
	stale = 0
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		for _, dp := range numberPoints(m) {
			if dp.Flags().NoRecordedValue() {
				stale++
			}
		}
	})
	assert.Zero(t, stale, "stale markers go out once")
	assert.Equal(t, map[string]int64{"standby_skipped": 1}, statusSet(md, "sda", "disk_health.physical_disk.smart.read.status", "smart.read.status"),
		"the status left is said at 0 once")
	assert.Contains(t, pointsByDisk(md, "disk_health.physical_disk.smart.read.time"), "sda", "the last successful read's time stays")
	assert.NotContains(t, pointsByDisk(md, "hw.status"), "sda")
}

// A disk without SMART (a virtio disk) says so at its first read, not every scrape: the same answer
// every scrape says nothing new. A change is said, the state left at 0 once; a disk that goes and comes
// back is new and says it again. The disks that read ok say so every scrape.
func TestSMARTScraperUnsupportedSaidOnce(t *testing.T) {
	h := newSMARTHarness(t, "k6.12", nil)
	ident := blockdev.Identity{Name: "vda", Class: blockdev.ClassDisk, Serial: "virtio-1"}
	vda := h.m.Add(&devicetest.Disk{Info: device.Disk{Name: "vda", Protocol: device.ProtocolNone, Node: "/dev/vda", Identity: ident, ID: blockdev.DiskID(&ident)}})
	readStatus := func(md pmetric.Metrics, disk string) map[string]int64 {
		return statusSet(md, disk, "disk_health.physical_disk.smart.read.status", "smart.read.status")
	}

	md := h.scrape(t)
	assert.Equal(t, map[string]int64{"unsupported": 1}, readStatus(md, "vda"), "said at the first read")
	md = h.scrape(t)
	assert.Empty(t, readStatus(md, "vda"), "not repeated while it stays")
	assert.Equal(t, map[string]int64{"ok": 1}, readStatus(md, "sda"), "a disk read ok says so every scrape")

	// The node now answers as an ATA disk it may not open: the change is said, the state left at 0.
	vda.Info.Protocol, vda.DenyOpen = device.ProtocolATA, true
	md = h.scrape(t)
	assert.Equal(t, map[string]int64{"permission_denied": 1, "unsupported": 0}, readStatus(md, "vda"))
	md = h.scrape(t)
	assert.Equal(t, map[string]int64{"permission_denied": 1}, readStatus(md, "vda"), "a refused read is said every scrape")

	// Back to no SMART: said once more, then quiet; unplugged and plugged again, it is new.
	vda.Info.Protocol = device.ProtocolNone
	md = h.scrape(t)
	assert.Equal(t, map[string]int64{"unsupported": 1, "permission_denied": 0}, readStatus(md, "vda"))
	assert.Empty(t, readStatus(h.scrape(t), "vda"))
	h.m.Remove("vda")
	h.scrape(t)
	h.m.Add(vda)
	assert.Equal(t, map[string]int64{"unsupported": 1}, readStatus(h.scrape(t), "vda"), "a disk seen again is said again")
}

// Without privileges each disk says so once in the log, and the metrics say it every time.
func TestSMARTScraperPermissionDenied(t *testing.T) {
	h := newSMARTHarness(t, "k6.12", nil)
	h.m.Disk("sda").Deny = true
	h.m.Disk("nvme0").Deny = true
	for range 3 {
		md := h.scrape(t)
		assert.Equal(t, int64(1), statusSet(md, "sda", "disk_health.physical_disk.smart.read.status", "smart.read.status")["permission_denied"])
		assert.Equal(t, int64(1), statusSet(md, "nvme0", "disk_health.physical_disk.smart.read.status", "smart.read.status")["permission_denied"])
		res := resourceOf(md, "sda")
		proto, _ := res.Get("disk_health.disk.protocol")
		assert.Equal(t, "ata", proto.Str(), "never misreported as SCSI")
	}
	warned := h.obs.FilterMessageSnippet("SMART read refused").All()
	require.Len(t, warned, 2, "one warning per disk, not per scrape")
}

// On Linux 6.2+ an unprivileged NVMe Identify works but the SMART log does not: the disk reports
// permission_denied, its limits from Identify and its temperature from hwmon, each once.
func TestSMARTScraperNVMeIdentifyOnly(t *testing.T) {
	h := newSMARTHarness(t, "k6.12", nil)
	d := h.m.Disk("nvme0")
	d.DenyCommands = []string{devicetest.NVMeLog(nvme.LogSMART)}
	hw := t.TempDir()
	for f, v := range map[string]string{"temp1_input": "49850", "temp1_max": "69850", "temp1_crit": "99850"} {
		require.NoError(t, os.WriteFile(filepath.Join(hw, f), []byte(v+"\n"), 0o644))
	}
	d.Info.HwmonDir = hw
	md := h.scrape(t)
	assert.Equal(t, int64(1), statusSet(md, "nvme0", "disk_health.physical_disk.smart.read.status", "smart.read.status")["permission_denied"])
	pts := pointsByDisk(md, "hw.temperature")["nvme0"]
	require.Len(t, pts, 1)
	assert.InDelta(t, 49.85, pts[0].DoubleValue(), 1e-9)
	limits := pointsByDisk(md, "hw.temperature.limit")["nvme0"]
	require.Len(t, limits, 2, "one point per limit type")
	assert.Equal(t, map[string]int64{"high.degraded": 70, "high.critical": 100}, map[string]int64{
		limitType(limits[0]): int64(limits[0].DoubleValue()), limitType(limits[1]): int64(limits[1].DoubleValue())},
		"Identify's WCTEMP/CCTEMP win over hwmon's copies")
	assert.Empty(t, pointsByDisk(md, "hw.status")["nvme0"])
}

func limitType(dp pmetric.NumberDataPoint) string {
	v, _ := dp.Attributes().Get("hw.limit_type")
	return v.Str()
}

// A hung disk costs the scrape no more than the timeout and the other disks nothing.
func TestSMARTScraperHungDisk(t *testing.T) {
	hang := make(chan struct{})
	h := newSMARTHarness(t, "k6.12", func(c *device.Config) { c.Timeout = 300 * time.Millisecond })
	h.m.Disk("sdb").Hang = hang
	defer close(hang)
	start := time.Now()
	md := h.scrape(t)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Equal(t, int64(1), statusSet(md, "sdb", "disk_health.physical_disk.smart.read.status", "smart.read.status")["timeout"])
	for _, d := range []string{"sda", "nvme0", "sdc"} {
		assert.Equal(t, int64(1), statusSet(md, d, "hw.status", "hw.state")["ok"], d)
	}
}

func numberPoints(m pmetric.Metric) []pmetric.NumberDataPoint {
	var dps pmetric.NumberDataPointSlice
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		dps = m.Gauge().DataPoints()
	case pmetric.MetricTypeSum:
		dps = m.Sum().DataPoints()
	default:
		return nil
	}
	out := make([]pmetric.NumberDataPoint, dps.Len())
	for i := range out {
		out[i] = dps.At(i)
	}
	return out
}

// pointsByDisk returns a metric's points per hw.name (skipping stale ones).
func pointsByDisk(md pmetric.Metrics, metric string) map[string][]pmetric.NumberDataPoint {
	out := map[string][]pmetric.NumberDataPoint{}
	pdatawalk.ForEachMetric(md, func(r pcommon.Resource, m pmetric.Metric) {
		if m.Name() != metric {
			return
		}
		name, _ := r.Attributes().Get("hw.name")
		for _, dp := range numberPoints(m) {
			if !dp.Flags().NoRecordedValue() {
				out[name.Str()] = append(out[name.Str()], dp)
			}
		}
	})
	return out
}

// statusSet reads a state-set metric of one disk: attribute value -> point value.
func statusSet(md pmetric.Metrics, disk, metric, attr string) map[string]int64 {
	out := map[string]int64{}
	for _, dp := range pointsByDisk(md, metric)[disk] {
		v, _ := dp.Attributes().Get(attr)
		out[v.Str()] = dp.IntValue()
	}
	return out
}

func resourceOf(md pmetric.Metrics, disk string) pcommon.Map {
	for i := range md.ResourceMetrics().Len() {
		r := md.ResourceMetrics().At(i).Resource().Attributes()
		if n, _ := r.Get("hw.name"); n.Str() == disk {
			return r
		}
	}
	return pcommon.NewMap()
}

// newTestScraper is a SMART scraper with the default section on the device doubles of dc, naming ATA
// attributes from smartctl's drive database on this machine, as a host with smartmontools does.
func newTestScraper(tb testing.TB, set scraper.Settings, sink consumer.Logs, dc device.Config, cfgMods ...func(*Config)) *smartScraper {
	if dc.DriveDB == nil {
		// As the factory does: the database is compiled before the first read, not inside its deadline.
		dc.DriveDB = dhtest.ParsedDriveDBH(tb, ata.ParseDriveDB)
	}
	cfg := createDefaultConfig()
	for _, m := range cfgMods {
		if m != nil {
			m(cfg)
		}
	}
	s := newScraper(set, cfg, dc, sink, time.Now)
	s.drivedb = driveDBInUse{db: dc.DriveDB, source: metadata.AttributeDiskHealthDriveDatabaseSourceHost}
	return s
}

// TestEventsDocumented: every event name and attribute the scraper sends is in documentation.md.
func TestEventsDocumented(t *testing.T) {
	doc, err := os.ReadFile("documentation.md")
	require.NoError(t, err)
	for _, name := range []string{emit.EventStateChange, emit.EventNewSign, "hw.state", "disk_health.previous_state", "disk_health.rule",
		EventNVMeError, EventNVMeTelemetry, "nvme.error.count", "nvme.status", "disk_health.nvme.status_dnr", "nvme.phase", "nvme.sqid", "nvme.cid",
		"nvme.nsid", "nvme.lba", "nvme.parameter_error_location", "nvme.telemetry.generation",
		EventCloudThrottled, "disk_health.physical_disk.cloud.limit", "disk_health.throttled_share",
		EventCloudThrottleNear, "disk_health.limit_utilization"} {
		assert.Contains(t, string(doc), "`"+name+"`", name)
	}
}

// smart.go panicking on one disk's answer costs that disk's read: one WARN naming it over repeated
// scrapes, read status error, and every other disk read as usual.
func TestSmartGoPanicOneWarn(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	m.Disk("sda").PanicOn = []string{devicetest.ATASMARTData}
	h := newHarnessOn(t, m, nil)
	var md pmetric.Metrics
	for range 3 {
		md = h.scrape(t)
	}
	warns := h.obs.FilterMessage("SMART read failed").All()
	require.Len(t, warns, 1, "logged once, not every scrape")
	assert.Equal(t, "sda", warns[0].ContextMap()["disk"])
	assert.Contains(t, warns[0].ContextMap()["error"], "smart.go panicked on sda's answer")
	assert.Equal(t, int64(1), statusSet(md, "sda", "disk_health.physical_disk.smart.read.status", "smart.read.status")["error"])
	for _, n := range []string{"sdb", "nvme0", "sdc"} {
		assert.Equal(t, int64(1), statusSet(md, n, "disk_health.physical_disk.smart.read.status", "smart.read.status")["ok"], n)
	}
}

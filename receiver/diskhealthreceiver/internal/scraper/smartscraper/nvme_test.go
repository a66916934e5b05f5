package smartscraper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device/devicetest"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// fleet is three NVMe drives of a datacenter fleet: nvme0 an OCP 2.0 drive on NVMe 2.0 that lists its
// logs (C0h, C3h, telemetry), nvme1 an EBS volume, nvme2 an NVMe 1.4 drive that refuses every read of
// its error log.
func fleet(t *testing.T) *devicetest.Machine {
	m := &devicetest.Machine{}
	m.Add(devicetest.NVMeDisk(t, "nvme0", devicetest.NVMeController(t, 0x1E0F, "OCP DC SSD", 0x00020000, 0, 15), map[string][]byte{
		devicetest.NVMeLog(nvme.LogSupportedLogs):       devicetest.SupportedLogs(0x00, 0x01, 0x02, 0x08, 0xC0, 0xC3),
		devicetest.NVMeLog(nvme.LogError):               devicetest.ErrorLog(16, 5, 4),
		devicetest.NVMeLog(nvme.LogTelemetryController): telemetryHeader(false, 0),
		devicetest.NVMeLog(nvme.LogOCPSMART):            devicetest.OCPSMART(nvme.OCPSMARTVersion20, 40*512000),
		devicetest.NVMeLog(nvme.LogOCPLatency):          devicetest.OCPLatency(),
	}))
	m.Add(devicetest.NVMeDisk(t, "nvme1", devicetest.NVMeController(t, nvme.VendorAmazon, nvme.AmazonModelEBS, 0x00010000, 0, 255), map[string][]byte{
		devicetest.NVMeLog(nvme.LogError): devicetest.ErrorLog(256),
		devicetest.NVMeLog(nvme.LogAmazon): devicetest.AmazonEBSPage(nvme.AmazonStats{ReadOps: 1000, WriteOps: 2000, ReadBytes: 4096000,
			WriteBytes: 8192000, ReadTime: 1500 * time.Millisecond, WriteTime: 2500 * time.Millisecond,
			VolumeIOPSExceeded: 250 * time.Millisecond, VolumeThroughputExceeded: time.Second, InstanceIOPSExceeded: 3 * time.Millisecond,
			InstanceThroughputExceeded: 0, QueueLength: 7,
			ReadLatency:  []nvme.LatencyBin{{Lower: 0, Upper: 256, Count: 10}, {Lower: 256, Upper: 512, Count: 900}, {Lower: 512, Upper: 1024, Count: 90}},
			WriteLatency: []nvme.LatencyBin{{Lower: 512, Upper: 1024, Count: 1999}, {Lower: 1024, Upper: 2048, Count: 1}}}),
	}))
	d := m.Add(devicetest.NVMeDisk(t, "nvme2", devicetest.NVMeController(t, 0x144D, "Some SSD", 0x00010400, 0x07, 15), map[string][]byte{
		devicetest.NVMeLog(nvme.LogError): devicetest.ErrorLog(16, 3),
	}))
	d.RefuseLen = map[string][]int{devicetest.NVMeLog(nvme.LogError): {16 * nvme.ErrorEntrySize, nvme.ErrorEntrySize}}
	return m
}

func telemetryHeader(available bool, gen uint8) []byte {
	b := make([]byte, nvme.TelemetryHeaderSize)
	b[0], b[383] = nvme.LogTelemetryController, gen
	if available {
		b[382] = 1
	}
	return b
}

func setPage(d *devicetest.Disk, key string, b []byte) {
	d.Lock()
	d.Pages[key] = b
	d.Unlock()
}

// The fleet's metrics: OCP, Amazon and the log read status, pinned by a golden file; the drive whose
// error log cannot be read is ok with the reason on its log status.
func TestSMARTScraperNVMeFleetGolden(t *testing.T) {
	h := newHarnessOn(t, fleet(t), nil)
	md := h.scrape(t)
	compareGolden(t, "smart-nvme-fleet", md)
	for _, disk := range []string{"nvme0", "nvme1", "nvme2"} {
		assert.Equal(t, int64(1), statusSet(md, disk, "disk_health.physical_disk.smart.read.status", "smart.read.status")["ok"], disk)
		assert.Contains(t, pointsByDisk(md, "hw.temperature"), disk, "every other metric of %s is there", disk)
	}
	logStatus := func(disk, log string) map[string]int64 {
		out := map[string]int64{}
		for _, dp := range pointsByDisk(md, "disk_health.physical_disk.smart.log.read.status")[disk] {
			if l, _ := dp.Attributes().Get("nvme.log"); l.Str() == log {
				s, _ := dp.Attributes().Get("smart.read.status")
				out[s.Str()] = dp.IntValue()
			}
		}
		return out
	}
	assert.Equal(t, int64(1), logStatus("nvme2", "error_information")["unsupported"])
	assert.Equal(t, int64(1), logStatus("nvme0", "ocp_latency")["ok"])
	assert.Equal(t, int64(1), logStatus("nvme1", "amazon")["ok"])
	assert.Empty(t, logStatus("nvme2", "ocp_smart"), "no status for a log never asked")
	assert.Zero(t, h.logs.LogRecordCount(), "first sight: the error log's entries are history")
}

func nvmeErrorRecords(h *smartHarness) []plog.LogRecord { return eventsNamed(h, EventNVMeError) }

// Each new error-log entry is one log record, once; the entries found at the first read are not
// news. A restarted collector (a new scraper) starts from the log as it finds it, so it sends none of
// the entries the previous one sent.
func TestNVMeErrorEntriesOnce(t *testing.T) {
	m := fleet(t)
	h := newHarnessOn(t, m, nil)
	h.scrape(t)
	require.Empty(t, nvmeErrorRecords(h))

	setPage(m.Disk("nvme0"), devicetest.NVMeLog(nvme.LogError), devicetest.ErrorLog(16, 8, 7, 6, 5, 4))
	h.scrape(t)
	recs := nvmeErrorRecords(h)
	require.Len(t, recs, 3)
	var counts []int64
	for _, r := range recs {
		c, _ := r.Attributes().Get("nvme.error.count")
		counts = append(counts, c.Int())
	}
	assert.Equal(t, []int64{6, 7, 8}, counts, "oldest first")
	assert.Equal(t, map[string]any{"nvme.error.count": int64(6), "nvme.status": "0/02h",
		"disk_health.nvme.status_dnr": false, "nvme.phase": false, "nvme.sqid": int64(0), "nvme.cid": int64(0), "nvme.nsid": int64(0),
		"nvme.lba": int64(4096 + 6), "nvme.parameter_error_location": int64(0)}, recs[0].Attributes().AsRaw())
	assert.Equal(t, "nvme0 (OCP DC SSD, serial smarttest): NVMe error 6: status 0/02h on queue 0, command 0", recs[0].Body().Str())
	assert.Equal(t, "WARN", recs[0].SeverityText())

	for range 2 {
		h.scrape(t)
	}
	assert.Len(t, nvmeErrorRecords(h), 3, "nothing twice")

	restarted := newHarnessOn(t, m, nil)
	restarted.scrape(t)
	assert.Empty(t, nvmeErrorRecords(restarted), "a restart resends nothing")
	setPage(m.Disk("nvme0"), devicetest.NVMeLog(nvme.LogError), devicetest.ErrorLog(16, 9, 8, 7))
	restarted.scrape(t)
	assert.Len(t, nvmeErrorRecords(restarted), 1, "and sends what is new")
}

// Write amplification over one interval, exact: 25 data units of media writes for 10 host data units.
func TestWriteAmplificationPerInterval(t *testing.T) {
	m := fleet(t)
	h := newHarnessOn(t, m, nil)
	md := h.scrape(t)
	assert.NotContains(t, pointsByDisk(md, "disk_health.physical_disk.write_amplification"), "nvme0", "no interval yet")

	d := m.Disk("nvme0")
	smartLog := slices.Clone(d.Pages[devicetest.NVMeLog(nvme.LogSMART)])
	units := binary.LittleEndian.Uint64(smartLog[48:])
	binary.LittleEndian.PutUint64(smartLog[48:], units+10)
	setPage(d, devicetest.NVMeLog(nvme.LogSMART), smartLog)
	setPage(d, devicetest.NVMeLog(nvme.LogOCPSMART), devicetest.OCPSMART(nvme.OCPSMARTVersion20, (40+25)*512000))
	md = h.scrape(t)
	waf := pointsByDisk(md, "disk_health.physical_disk.write_amplification")["nvme0"]
	require.Len(t, waf, 1)
	assert.Equal(t, 2.5, waf[0].DoubleValue())

	md = h.scrape(t)
	assert.NotContains(t, pointsByDisk(md, "disk_health.physical_disk.write_amplification"), "nvme0", "the host wrote nothing since")
}

// Saved telemetry is announced once per generation.
func TestTelemetryAvailableEvent(t *testing.T) {
	m := fleet(t)
	h := newHarnessOn(t, m, nil)
	h.scrape(t)
	d := m.Disk("nvme0")
	setPage(d, devicetest.NVMeLog(nvme.LogTelemetryController), telemetryHeader(true, 3))
	md := h.scrape(t)
	assert.Equal(t, int64(1), pointsByDisk(md, "disk_health.physical_disk.nvme.telemetry.available")["nvme0"][0].IntValue())
	h.scrape(t)
	setPage(d, devicetest.NVMeLog(nvme.LogTelemetryController), telemetryHeader(true, 4))
	h.scrape(t)
	var gens []int64
	for _, ld := range h.logs.AllLogs() {
		for i := range ld.ResourceLogs().Len() {
			lr := ld.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords().At(0)
			if lr.EventName() == EventNVMeTelemetry {
				g, _ := lr.Attributes().Get("nvme.telemetry.generation")
				gens = append(gens, g.Int())
				assert.Contains(t, lr.Body().Str(), "nvme telemetry-log")
			}
		}
	}
	assert.Equal(t, []int64{3, 4}, gens)
}

// Every device.LogRead name has its nvme.log value.
func TestEveryOptionalLogHasItsAttribute(t *testing.T) {
	for _, l := range []string{device.LogErrorInformation, device.LogTelemetry, device.LogOCPSMART, device.LogOCPLatency, device.LogAmazon} {
		assert.Contains(t, nvmeLogAttr, l)
	}
}

// The OCP verdict rules reach hw.status and the events: a bad-block count that rises degrades the
// drive, with one new-sign event.
func TestOCPBadBlocksDegrade(t *testing.T) {
	m := fleet(t)
	h := newHarnessOn(t, m, nil)
	md := h.scrape(t)
	assert.Equal(t, int64(1), statusSet(md, "nvme0", "hw.status", "hw.state")["ok"])
	page := devicetest.OCPSMART(nvme.OCPSMARTVersion20, 40*512000)
	binary.LittleEndian.PutUint32(page[32:], 15) // 12 -> 15 bad user blocks
	setPage(m.Disk("nvme0"), devicetest.NVMeLog(nvme.LogOCPSMART), page)
	md = h.scrape(t)
	assert.Equal(t, int64(1), statusSet(md, "nvme0", "hw.status", "hw.state")["degraded"])
	var rules []string
	for _, ld := range h.logs.AllLogs() {
		for i := range ld.ResourceLogs().Len() {
			a := ld.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords().At(0).Attributes()
			if r, ok := a.Get("disk_health.rule"); ok {
				rules = append(rules, r.Str())
			}
		}
	}
	assert.Equal(t, []string{"ocp_bad_blocks_rising"}, rules)
}

// histogramPoints are the points of the hand-built histogram name, by the hw.name of their resource.
func histogramPoints(t *testing.T, md pmetric.Metrics, name string) map[string][]pmetric.HistogramDataPoint {
	t.Helper()
	out := map[string][]pmetric.HistogramDataPoint{}
	pdatawalk.ForEachMetric(md, func(res pcommon.Resource, m pmetric.Metric) {
		if m.Name() != name {
			return
		}
		require.Equal(t, pmetric.MetricTypeHistogram, m.Type(), name)
		assert.Equal(t, "s", m.Unit())
		assert.Equal(t, pmetric.AggregationTemporalityCumulative, m.Histogram().AggregationTemporality())
		disk, _ := res.Attributes().Get("hw.name")
		dps := m.Histogram().DataPoints()
		for i := range dps.Len() {
			out[disk.Str()] = append(out[disk.Str()], dps.At(i))
		}
	})
	return out
}

// deviceIdentity is what a device-side histogram point of disk (with its direction, "" for none)
// carries: the SMART identity, the first namespace as system.device (the host histograms' device), and
// the device source.
func deviceIdentity(h *smartHarness, disk, ns, dir string) map[string]any {
	want := map[string]any{"hw.id": h.m.Disk(disk).Info.ID, "hw.name": disk, "hw.type": "physical_disk",
		"system.device": ns, "disk_health.latency.source": "device"}
	if dir != "" {
		want["disk.io.direction"] = dir
	}
	return want
}

// The volume's own latency bins become an explicit-bucket histogram per direction, buckets unchanged,
// with the identity of the host's histograms of the same disk.
func TestCloudLatencyHistogram(t *testing.T) {
	h := newHarnessOn(t, fleet(t), nil)
	md := h.scrape(t)
	pts := histogramPoints(t, md, histograms[histCloud].name)
	require.Len(t, pts, 1, "one histogram, for the EBS volume only")
	dps := pts["nvme1"]
	require.Len(t, dps, 2)
	read, write := dps[0], dps[1]
	assert.Equal(t, deviceIdentity(h, "nvme1", "nvme1n1", "read"), read.Attributes().AsRaw())
	assert.Equal(t, []float64{256e-6, 512e-6}, read.ExplicitBounds().AsRaw())
	assert.Equal(t, []uint64{10, 900, 90}, read.BucketCounts().AsRaw())
	assert.Equal(t, uint64(1000), read.Count())
	assert.False(t, read.HasSum())
	assert.Equal(t, deviceIdentity(h, "nvme1", "nvme1n1", "write"), write.Attributes().AsRaw())
	assert.Equal(t, []float64{1024e-6}, write.ExplicitBounds().AsRaw())
	assert.Equal(t, []uint64{1999, 1}, write.BucketCounts().AsRaw())
	assert.Equal(t, uint64(2000), write.Count())
}

// The OCP latency monitor's active window: per operation an explicit-bucket histogram whose bounds are
// the thresholds the page gives (30, 100, 155, 235 ms), its first bucket empty (the drive counts no
// command faster than A), cumulative since the window began one day (288 timer steps) before the read.
func TestLatencyMonitorHistogram(t *testing.T) {
	m := fleet(t)
	h := newHarnessOn(t, m, nil)
	md := h.scrape(t)
	bounds := []float64{0.030, 0.100, 0.155, 0.235}
	rw := histogramPoints(t, md, histograms[histMonitor].name)
	require.Len(t, rw, 1, "only the OCP drive")
	require.Len(t, rw["nvme0"], 2)
	discard := histogramPoints(t, md, histograms[histMonitorDiscard].name)["nvme0"]
	require.Len(t, discard, 1)
	for _, tc := range []struct {
		dp     pmetric.HistogramDataPoint
		dir    string
		counts []uint64
	}{
		{rw["nvme0"][0], "read", []uint64{0, 77, 20, 30, 40}},
		{rw["nvme0"][1], "write", []uint64{0, 100, 200, 300, 400}},
		{discard[0], "", []uint64{0, 1, 2, 3, 4}},
	} {
		assert.Equal(t, deviceIdentity(h, "nvme0", "nvme0n1", tc.dir), tc.dp.Attributes().AsRaw())
		assert.InDeltaSlice(t, bounds, tc.dp.ExplicitBounds().AsRaw(), 1e-12, tc.dir)
		assert.Equal(t, tc.counts, tc.dp.BucketCounts().AsRaw(), tc.dir)
		var total uint64
		for _, c := range tc.counts {
			total += c
		}
		assert.Equal(t, total, tc.dp.Count(), tc.dir)
		assert.False(t, tc.dp.HasSum(), "the page keeps no sum")
		assert.Equal(t, 24*time.Hour, tc.dp.Timestamp().AsTime().Sub(tc.dp.StartTimestamp().AsTime()), tc.dir)
	}
	start := rw["nvme0"][0].StartTimestamp()

	// Later in the same window: the start stays, the counts grow.
	d := m.Disk("nvme0")
	page := devicetest.OCPLatency()
	binary.LittleEndian.PutUint16(page[2:], 289)
	binary.LittleEndian.PutUint32(page[32+16*3+12:], 41)
	setPage(d, devicetest.NVMeLog(nvme.LogOCPLatency), page)
	md = h.scrape(t)
	read := histogramPoints(t, md, histograms[histMonitor].name)["nvme0"][0]
	assert.Equal(t, start, read.StartTimestamp())
	assert.Equal(t, []uint64{0, 77, 20, 30, 41}, read.BucketCounts().AsRaw())

	// A read that fails keeps the window: the next one continues it, same start.
	d.Lock()
	d.RefuseLen = map[string][]int{devicetest.NVMeLog(nvme.LogOCPLatency): {nvme.OCPLogSize}}
	d.Unlock()
	md = h.scrape(t)
	assert.Empty(t, histogramPoints(t, md, histograms[histMonitor].name))
	d.Lock()
	d.RefuseLen = nil
	d.Unlock()
	md = h.scrape(t)
	assert.Equal(t, start, histogramPoints(t, md, histograms[histMonitor].name)["nvme0"][0].StartTimestamp())

	// A new window: the drive zeroed its counters and timer; the start moves to the read (a reset).
	page = devicetest.OCPLatency()
	binary.LittleEndian.PutUint16(page[2:], 0)
	binary.LittleEndian.PutUint32(page[32+12:], 2)
	setPage(d, devicetest.NVMeLog(nvme.LogOCPLatency), page)
	md = h.scrape(t)
	read = histogramPoints(t, md, histograms[histMonitor].name)["nvme0"][0]
	assert.Equal(t, read.Timestamp(), read.StartTimestamp())
	assert.Equal(t, uint64(2), read.BucketCounts().At(1))

	// The monitor switched off: no histogram, and the next one enabled is a new window.
	page[0] = 0
	setPage(d, devicetest.NVMeLog(nvme.LogOCPLatency), page)
	md = h.scrape(t)
	assert.Empty(t, histogramPoints(t, md, histograms[histMonitor].name))
	assert.Empty(t, histogramPoints(t, md, histograms[histMonitorDiscard].name))
}

// Thresholds out of order: the log's read status says why and no monitor histogram is sent.
func TestLatencyMonitorThresholdsOutOfOrder(t *testing.T) {
	m := fleet(t)
	page := devicetest.OCPLatency()
	page[9] = page[8]
	setPage(m.Disk("nvme0"), devicetest.NVMeLog(nvme.LogOCPLatency), page)
	h := newHarnessOn(t, m, nil)
	md := h.scrape(t)
	assert.Empty(t, histogramPoints(t, md, histograms[histMonitor].name))
	status := map[string]int64{}
	for _, dp := range pointsByDisk(md, "disk_health.physical_disk.smart.log.read.status")["nvme0"] {
		if l, _ := dp.Attributes().Get("nvme.log"); l.Str() == "ocp_latency" {
			s, _ := dp.Attributes().Get("smart.read.status")
			status[s.Str()] = dp.IntValue()
		}
	}
	assert.Equal(t, int64(1), status["error"])
	assert.Equal(t, int64(0), status["ok"])
	assert.Equal(t, int64(1), statusSet(md, "nvme0", "disk_health.physical_disk.smart.read.status", "smart.read.status")["ok"])
}

// A volume that starts being throttled is announced once per episode, per limit, with its share.
func TestCloudThrottledEvent(t *testing.T) {
	m := fleet(t)
	h := newHarnessOn(t, m, nil)
	h.scrape(t)
	d := m.Disk("nvme1")
	page := func(volIOPS time.Duration) []byte {
		return devicetest.AmazonEBSPage(nvme.AmazonStats{VolumeIOPSExceeded: volIOPS, VolumeThroughputExceeded: time.Second})
	}
	throttled := func() []plog.LogRecord { return eventsNamed(h, EventCloudThrottled) }
	for _, step := range []struct {
		volIOPS time.Duration
		want    int
	}{
		{250 * time.Millisecond, 0}, // the instance counter went back from the fleet's: no share this time
		{2 * time.Second, 1},        // throttled: announced
		{3 * time.Second, 1},        // still throttled: the same episode
		{3 * time.Second, 1},        // quiet
		{4 * time.Second, 2},        // a new episode
	} {
		setPage(d, devicetest.NVMeLog(nvme.LogAmazon), page(step.volIOPS))
		h.scrape(t)
		assert.Len(t, throttled(), step.want, "at %v", step.volIOPS)
	}
	recs := throttled()
	require.NotEmpty(t, recs)
	a := recs[0].Attributes().AsRaw()
	assert.Equal(t, "volume_iops", a["disk_health.physical_disk.cloud.limit"])
	share, ok := a["disk_health.throttled_share"].(float64)
	require.True(t, ok)
	assert.Positive(t, share)
	assert.Contains(t, recs[0].Body().Str(), "throttled by the volume's IOPS limit")
}

// eventsNamed are the log records of the event name the harness sent so far.
func eventsNamed(h *smartHarness, name string) []plog.LogRecord {
	var out []plog.LogRecord
	for _, ld := range h.logs.AllLogs() {
		for i := range ld.ResourceLogs().Len() {
			lrs := ld.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords()
			for j := range lrs.Len() {
				if lrs.At(j).EventName() == name {
					out = append(out, lrs.At(j))
				}
			}
		}
	}
	return out
}

// stepClock is a read clock the test moves: each scrape's reads are stamped with its time.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// An EBS volume configured at 3000 IOPS, read every 5 minutes: at 95 % of it the near event goes out one
// read before the log's exceeded-time counter starts rising, once per episode; the utilization is exact.
func TestCloudThrottleNearEvent(t *testing.T) {
	m := fleet(t)
	clock := &stepClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h := newHarnessOn(t, m, func(dc *device.Config) { dc.Clock = clock.now })
	h.s.cloudLimits = []CloudLimit{{Device: "nvme1", IOPS: 3000}}
	d := m.Disk("nvme1")
	var ops uint64
	var exceeded time.Duration
	const interval = 5 * time.Minute
	for i, step := range []struct {
		iops                 uint64        // the volume's rate over the interval
		throttled            time.Duration // added to the volume's IOPS exceeded time
		wantUtil             float64
		wantNear, wantThrott int
	}{
		{0, 0, -1, 0, 0},                             // first read: no interval yet
		{1500, 0, 0.5, 0, 0},                         // half the limit
		{2850, 0, 0.95, 1, 0},                        // 95 %: near, announced before any throttling
		{2900, 2 * time.Second, 2900.0 / 3000, 1, 1}, // now throttled: the throttled event, the same near episode
		{2850, 0, 0.95, 1, 1},                        // near again without throttling: still the same episode
		{1000, 0, 1.0 / 3, 1, 1},                     // the episode ends
		{2900, 0, 2900.0 / 3000, 2, 1},               // a new episode
	} {
		ops += step.iops * uint64(interval/time.Second)
		exceeded += step.throttled
		setPage(d, devicetest.NVMeLog(nvme.LogAmazon), devicetest.AmazonEBSPage(nvme.AmazonStats{
			ReadOps: ops / 3, WriteOps: ops - ops/3, VolumeIOPSExceeded: exceeded}))
		md := h.scrape(t)
		clock.add(interval)
		pts := pointsByDisk(md, "disk_health.physical_disk.cloud.limit.utilization")
		if step.wantUtil < 0 {
			assert.Empty(t, pts, "step %d", i)
		} else {
			require.Len(t, pts["nvme1"], 1, "step %d: the configured IOPS limit only", i)
			dp := pts["nvme1"][0]
			assert.InDelta(t, step.wantUtil, dp.DoubleValue(), 1e-12, "step %d", i)
			assert.Equal(t, map[string]any{"hw.id": dp.Attributes().AsRaw()["hw.id"], "hw.name": "nvme1", "hw.type": "physical_disk",
				"disk_health.physical_disk.cloud.limit": "volume_iops"}, dp.Attributes().AsRaw())
			assert.Len(t, pts, 1, "step %d: only the configured volume", i)
		}
		assert.Len(t, eventsNamed(h, EventCloudThrottleNear), step.wantNear, "step %d", i)
		assert.Len(t, eventsNamed(h, EventCloudThrottled), step.wantThrott, "step %d", i)
	}
	near := eventsNamed(h, EventCloudThrottleNear)[0]
	assert.Equal(t, plog.SeverityNumberWarn, near.SeverityNumber())
	a := near.Attributes().AsRaw()
	assert.Equal(t, "volume_iops", a["disk_health.physical_disk.cloud.limit"])
	assert.InDelta(t, 0.95, a["disk_health.limit_utilization"], 1e-12)
	assert.Contains(t, near.Body().Str(), "at 95% of the volume's IOPS limit (2850 of 3000 operations/s) over the last 5m0s")
}

// A volume matches its limits by serial (an EBS volume id, with or without its dash), by device, or by
// both; the first matching entry wins.
func TestCloudLimitsFor(t *testing.T) {
	limits := []CloudLimit{
		{Serial: "vol-0abc", Device: "nvme3", IOPS: 1},
		{Serial: "vol-0abc", IOPS: 2},
		{Device: "nvme2", Throughput: 3},
	}
	for _, tc := range []struct {
		name, serial string
		want         nvme.VolumeLimits
	}{
		{"nvme3", "vol0abc", nvme.VolumeLimits{IOPS: 1}},
		{"nvme1", "vol0abc", nvme.VolumeLimits{IOPS: 2}},
		{"nvme1", "vol-0abc", nvme.VolumeLimits{IOPS: 2}},
		{"nvme2", "vol0def", nvme.VolumeLimits{Throughput: 3}},
		{"nvme4", "vol0def", nvme.VolumeLimits{}},
	} {
		assert.Equal(t, tc.want, cloudLimitsFor(limits, tc.name, tc.serial), "%s %s", tc.name, tc.serial)
	}
}

// memStorage is a storage extension keeping its values in a map, shared by the scrapers of a test
// as a file_storage directory is by a collector and its restart. failSet fails every write; hang,
// when set, holds every call until it is closed (a hung state directory).
type memStorage struct {
	component.StartFunc
	component.ShutdownFunc
	mu      sync.Mutex
	values  map[string][]byte
	failSet error
	hang    chan struct{}
}

func (m *memStorage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return memClient{m}, nil
}

type memClient struct{ m *memStorage }

func (c memClient) wait() {
	if c.m.hang != nil {
		<-c.m.hang
	}
}

func (c memClient) Get(_ context.Context, key string) ([]byte, error) {
	c.wait()
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	return c.m.values[key], nil
}

func (c memClient) Set(ctx context.Context, key string, v []byte) error {
	return c.Batch(ctx, storage.SetOperation(key, v))
}

func (c memClient) Delete(ctx context.Context, key string) error {
	return c.Batch(ctx, storage.DeleteOperation(key))
}

func (c memClient) Batch(_ context.Context, ops ...*storage.Operation) error {
	c.wait()
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.m.failSet != nil {
		return c.m.failSet
	}
	for _, op := range ops {
		switch op.Type {
		case storage.Set:
			c.m.values[op.Key] = op.Value
		case storage.Delete:
			delete(c.m.values, op.Key)
		case storage.Get:
			op.Value = c.m.values[op.Key]
		}
	}
	return nil
}

func (memClient) Close(context.Context) error { return nil }

// storageWarning is the one WARN a failing storage gives (store.Background).
const storageWarning = "NVMe error-log high-water marks not kept across restarts: the storage failed"

var storageID = component.MustNewID("file_storage")

func startWithStorage(t *testing.T, h *smartHarness, st *memStorage) {
	t.Helper()
	h.s.storage = &storageID
	require.NoError(t, h.s.start(t.Context(), dhtest.StorageHost{storageID: st}))
}

// With a storage extension, the high-water mark survives a restart: the entries made while no
// collector ran are sent once by the next one, and none twice.
func TestNVMeErrorMarkPersisted(t *testing.T) {
	m := fleet(t)
	st := &memStorage{values: map[string][]byte{}}
	first := newHarnessOn(t, m, nil)
	startWithStorage(t, first, st)
	first.scrape(t)
	require.Empty(t, nvmeErrorRecords(first), "first sight ever: history")
	setPage(m.Disk("nvme0"), devicetest.NVMeLog(nvme.LogError), devicetest.ErrorLog(16, 6, 5, 4))
	first.scrape(t)
	require.Len(t, nvmeErrorRecords(first), 1)
	require.NoError(t, first.s.shutdown(t.Context()))

	// Down while the drive logs 7 and 8; the restarted collector sends exactly those.
	setPage(m.Disk("nvme0"), devicetest.NVMeLog(nvme.LogError), devicetest.ErrorLog(16, 8, 7, 6, 5, 4))
	restarted := newHarnessOn(t, m, nil)
	startWithStorage(t, restarted, st)
	restarted.scrape(t)
	restarted.scrape(t)
	var counts []int64
	for _, r := range nvmeErrorRecords(restarted) {
		c, _ := r.Attributes().Get("nvme.error.count")
		counts = append(counts, c.Int())
	}
	assert.Equal(t, []int64{7, 8}, counts)

	// A drive whose counter started over: the mark follows it, nothing is sent, and new entries are.
	setPage(m.Disk("nvme0"), devicetest.NVMeLog(nvme.LogError), devicetest.ErrorLog(16, 2, 1))
	restarted.scrape(t)
	assert.Len(t, nvmeErrorRecords(restarted), 2)
	setPage(m.Disk("nvme0"), devicetest.NVMeLog(nvme.LogError), devicetest.ErrorLog(16, 3, 2, 1))
	restarted.scrape(t)
	assert.Len(t, nvmeErrorRecords(restarted), 3)
	require.NoError(t, restarted.s.shutdown(t.Context()))
}

// oneNewEntry starts a scraper on st and scrapes three times, a new error-log entry appearing after
// the first: whatever the storage does, the entry is sent once (the mark is kept in memory).
func oneNewEntry(t *testing.T, st *memStorage) *smartHarness {
	t.Helper()
	m := fleet(t)
	h := newHarnessOn(t, m, nil)
	startWithStorage(t, h, st)
	h.scrape(t)
	setPage(m.Disk("nvme0"), devicetest.NVMeLog(nvme.LogError), devicetest.ErrorLog(16, 6, 5, 4))
	h.scrape(t)
	h.scrape(t)
	assert.Len(t, nvmeErrorRecords(h), 1)
	return h
}

// A storage that fails is logged once and the mark is kept in memory: no scrape fails, no entry twice.
func TestNVMeErrorMarkStorageFails(t *testing.T) {
	h := oneNewEntry(t, &memStorage{values: map[string][]byte{}, failSet: errors.New("disk full")})
	// The writes are the background's: after the shutdown's last flush, every attempt has been made.
	require.NoError(t, h.s.shutdown(t.Context()))
	assert.Len(t, h.obs.FilterMessage(storageWarning).All(), 1)
}

// A hung state directory costs the marks' persistence, never a scrape: every scrape returns while the
// storage still holds its calls, the entry is sent once from the mark kept in memory, and it is
// said once.
func TestNVMeErrorMarkStorageHangs(t *testing.T) {
	st := &memStorage{values: map[string][]byte{}, hang: make(chan struct{})}
	h := oneNewEntry(t, st)
	assert.Len(t, h.obs.FilterMessage(storageWarning).All(), 1)
	close(st.hang)
	require.NoError(t, h.s.shutdown(t.Context()))
}

func TestStorageMisconfigured(t *testing.T) {
	h := newHarnessOn(t, fleet(t), nil)
	h.s.storage = &storageID
	err := h.s.start(t.Context(), dhtest.StorageHost{})
	require.ErrorContains(t, err, "smart.storage: no extension file_storage is configured")
	err = h.s.start(t.Context(), dhtest.StorageHost{storageID: &struct {
		component.StartFunc
		component.ShutdownFunc
	}{}})
	require.ErrorContains(t, err, "is not a storage extension")
}

// TestHistogramsDocumented: documentation-extra.md has, for every row of the histogram table, its
// heading, its description verbatim, its unit and type and its attributes; and no other histogram.
func TestHistogramsDocumented(t *testing.T) {
	data, err := os.ReadFile("documentation-extra.md")
	require.NoError(t, err)
	doc := string(data)
	var headings []string
	for _, line := range strings.Split(doc, "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			headings = append(headings, h)
		}
	}
	var names []string
	for _, h := range histograms {
		names = append(names, h.name)
		block := fmt.Sprintf("### %s\n\n%s\n\n| Unit | Metric Type | Value Type | Aggregation Temporality | Monotonic | Stability |\n"+
			"| ---- | ----------- | ---------- | ----------------------- | --------- | --------- |\n| s | Histogram | Double | Cumulative | - | Development |\n",
			h.name, h.description)
		require.Contains(t, doc, block, h.name)
		attrs := doc[strings.Index(doc, block)+len(block):]
		if next := strings.Index(attrs, "\n### "); next >= 0 {
			attrs = attrs[:next]
		}
		for _, a := range []string{"hw.id", "hw.name", "hw.type", "system.device", latencySourceAttr} {
			assert.Contains(t, attrs, "| "+a+" |", h.name)
		}
		assert.Equal(t, h.withDirection, strings.Contains(attrs, "| disk.io.direction |"), h.name)
	}
	assert.Equal(t, names, headings)
}

package e2e

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// The fixture devices (testdata/iostat/snapshot-*.diskstats) by the case each one covers.
const (
	busyDev      = "nvme0n1" // busy NVMe, 20 fields
	oldKernelDev = "sda"     // 14 fields
	discardDev   = "vdb"     // 18 fields
	idleDev      = "sdb"     // no activity between the reads
	wrapDev      = "nvme1n1" // every 32-bit tick field wraps between the reads
	recreatedDev = "sdc"     // removed and added again between the reads
)

// scrapeInterval is the collector's collection_interval: only its pace. The interval its rates cover is
// whatever the machine made of it (a scrape held up by load is followed by one the ticker fires at once),
// read from the gauges' timestamps; iostat is given the same interval, to the hundredth of a second
// /proc/uptime has, and the rates are compared at iostat's interval (iostatColumn.perTime).
const scrapeInterval = 5 * time.Second

// iostatColumn maps one `iostat -x` column to the receiver's metric and unit.
type iostatColumn struct {
	key    string // sysstat's JSON key
	metric string
	dir    string  // disk.io.direction value (read, write); empty for per-device gauges and discard/flush metrics
	kind   string  // read, write, discard or flush: which fields the column needs; empty for per-device gauges
	scale  float64 // receiver value × scale = the value in sysstat's unit
	// perTime: the column is an increase divided by the interval (rates, aqu-sz, %util), not a
	// quotient of two increases (%rrqm, await, areq-sz).
	perTime bool
}

// iostatColumns are all `iostat -x` device columns: r/s … f/s, rkB/s …, rrqm/s …, %rrqm …, r_await …
// f_await, rareq-sz …, aqu-sz and %util. Reads and writes are one metric with disk.io.direction;
// discards and flushes are their own metrics (disk_health.disk.discard.*, disk_health.disk.flush.*).
var iostatColumns = func() []iostatColumn {
	var cols []iostatColumn
	for _, d := range []struct{ p, kind string }{{"r", "read"}, {"w", "write"}, {"d", "discard"}, {"f", "flush"}} {
		col := func(key, name string, scale float64, perTime bool) iostatColumn {
			if d.kind == "read" || d.kind == "write" {
				return iostatColumn{key, "disk_health.disk." + name, d.kind, d.kind, scale, perTime}
			}
			return iostatColumn{key, "disk_health.disk." + d.kind + "." + name, "", d.kind, scale, perTime}
		}
		cols = append(cols, col(d.p+"/s", "operation.rate", 1, true))
		if d.kind != "flush" { // flushes carry no data and are never merged
			cols = append(cols,
				col(d.p+"kB/s", "throughput", 1.0/1024, true),
				col(d.p+"rqm/s", "merge.rate", 1, true),
				col(d.p+"rqm", "merge.ratio", 100, false),
				col(d.p+"areq-sz", "operation.average_size", 1.0/1024, false))
		}
		cols = append(cols, col(d.p+"_await", "operation.average_time", 1000, false))
	}
	return append(cols,
		iostatColumn{"aqu-sz", "disk_health.disk.queue.length", "", "", 1, true},
		iostatColumn{"util", "disk_health.disk.utilization", "", "", 100, true})
}()

// reported says whether the receiver reports the column for a device: discard columns need the
// 4.18+ fields, flush columns the 5.5+ ones.
func (c iostatColumn) reported(l *dsLine) bool {
	switch c.kind {
	case "discard":
		return l.hasDiscard()
	case "flush":
		return l.hasFlush()
	}
	return true
}

// agree is the tolerance: within 0.5 % of sysstat's value, or 0.01 (its printed precision).
func agree(sys, rec float64) bool {
	d := math.Abs(sys - rec)
	return d <= 0.01+1e-9 || d <= 0.005*math.Abs(sys)
}

// countersMatch reports whether an export carries exactly the given snapshot's counts for every device.
func countersMatch(md pmetric.Metrics, snap []dsLine) bool {
	pts := devicePoints(md)
	for i := range snap {
		l := &snap[i]
		want := []struct {
			metric, dir string
			v           uint64
		}{
			{"system.disk.operations", "read", l.C[fRdIOs]},
			{"system.disk.operations", "write", l.C[fWrIOs]},
			{"system.disk.io", "read", l.C[fRdSectors] * 512},
			{"system.disk.io", "write", l.C[fWrSectors] * 512},
			{"system.disk.merged", "read", l.C[fRdMerges]},
			{"system.disk.merged", "write", l.C[fWrMerges]},
		}
		for _, w := range want {
			p, ok := find(pts[l.Name], w.metric, w.dir)
			if !ok || p.value != float64(w.v) {
				return false
			}
		}
	}
	return true
}

// checkFixtures makes sure each fixture device still is the case it is named for.
func checkFixtures(t *testing.T, s1, s2 []dsLine) map[string][2]*dsLine {
	t.Helper()
	require.Len(t, s2, len(s1), "both snapshots list the same devices")
	byName := map[string][2]*dsLine{}
	for i := range s1 {
		a, b := &s1[i], &s2[i]
		require.Equal(t, [3]any{a.Major, a.Minor, a.Name}, [3]any{b.Major, b.Minor, b.Name}, "line %d", i+1)
		require.Len(t, b.C, len(a.C), a.Name)
		byName[a.Name] = [2]*dsLine{a, b}
	}
	for _, d := range []string{busyDev, oldKernelDev, discardDev, idleDev, wrapDev, recreatedDev} {
		require.Contains(t, byName, d)
	}
	require.True(t, byName[busyDev][0].hasFlush())
	require.Len(t, byName[oldKernelDev][0].C, 11)
	require.Len(t, byName[discardDev][0].C, 15)

	idle := byName[idleDev]
	require.Equal(t, idle[0].C, idle[1].C, "%s changes", idleDev)
	// sysstat hides devices that never did I/O; the idle one must have.
	require.NotZero(t, idle[0].C[fRdIOs]+idle[0].C[fWrIOs])

	w := byName[wrapDev]
	require.True(t, w[0].hasFlush())
	for _, f := range []int{fRdTicks, fWrTicks, fIOTicks, fQueueTicks, fDcTicks, fFlTicks} {
		require.Less(t, w[1].C[f], w[0].C[f], "%s field %d must wrap", wrapDev, f+1)
	}
	for _, f := range []int{fRdIOs, fRdSectors, fWrIOs, fWrSectors, fDcIOs, fDcSectors, fFlIOs} {
		require.Greater(t, w[1].C[f], w[0].C[f], "%s field %d must grow", wrapDev, f+1)
	}

	// sysstat's test for "removed then registered again": the total I/O count went down and every
	// sector counter went down or was zero.
	r := byName[recreatedDev]
	sum := func(l *dsLine) uint64 { return l.C[fRdIOs] + l.C[fWrIOs] + l.C[fDcIOs] + l.C[fFlIOs] }
	require.Less(t, sum(r[1]), sum(r[0]))
	for _, f := range []int{fRdSectors, fWrSectors, fDcSectors} {
		require.Less(t, r[1].C[f], r[0].C[f], "%s field %d", recreatedDev, f+1)
	}
	return byName
}

// TestIostatAgreesWithSysstat feeds the same two /proc/diskstats snapshots, the same interval apart,
// to the built collector (root_path fixture, file exporter) and to sysstat's `iostat -x -p ALL`
// (fixture files bind-mounted over /proc in a private mount namespace), and requires every iostat
// column to agree within 0.5 % or 0.01. Both compute from the same two snapshots and the same
// interval (the receiver's, as its gauges' timestamps say, given to iostat as two uptimes), so load
// changes the numbers both print, never their agreement.
func TestIostatAgreesWithSysstat(t *testing.T) {
	bin := collectorBinary(t)
	testkit.RequireRoot(t, "comparing with sysstat (unshare -m and mount --bind over /proc)")
	iostat := testkit.Tool(t, "iostat", "sysstat")
	t.Logf("peer: %s", iostatVersion(iostat))

	s1, s2 := loadFixture(t, "snapshot-1.diskstats"), loadFixture(t, "snapshot-2.diskstats")
	dev := checkFixtures(t, s1, s2)
	ds1, ds2 := formatDiskstats(s1), formatDiskstats(s2)

	// The receiver: snapshot 1 until an export shows it, then snapshot 2.
	root := t.TempDir()
	buildReceiverRoot(t, root, s1, ds1, time.Now().Add(-time.Hour))
	out := filepath.Join(t.TempDir(), "metrics.jsonl")
	col := startCollector(t, bin, fileExportConfig(fmt.Sprintf(`receivers:
  disk_health:
    collection_interval: %s
    initial_delay: 0s
    root_path: %q
    iostat:
      enabled: true
      device_classes: [disk, partition, dm, md, loop, ram, other]
    filesystem:
      enabled: false
`, scrapeInterval, root), out))
	tail := &exportTail{path: out}
	i1 := col.waitExport(t, tail, 0, 30*time.Second, "the counters of snapshot 1",
		func(md pmetric.Metrics) bool { return countersMatch(md, s1) })
	// In place: the receiver keeps /proc/diskstats open between scrapes, so a rename would go unseen.
	// The next scrape is a whole interval away, so it cannot catch the file half-written.
	require.NoError(t, rewriteInPlace(filepath.Join(root, "proc", "diskstats"), ds2))
	i2 := col.waitExport(t, tail, i1+1, 3*scrapeInterval, "the counters of snapshot 2",
		func(md pmetric.Metrics) bool { return countersMatch(md, s2) })
	col.stop()

	// Each gauge covers the previous read (StartTimestamp) to this read (Timestamp); the previous read
	// must be the last one of snapshot 1 (exports of other sources, if any, carry no device counters).
	last1 := i2 - 1
	for !countersMatch(tail.exports[last1], s1) {
		last1--
	}
	prevRead := devicePoints(tail.exports[last1])[busyDev][0].ts
	rec := devicePoints(tail.exports[i2])
	var dt time.Duration
	for name, pts := range rec {
		for _, p := range pts {
			if !p.gauge {
				continue
			}
			require.Equal(t, prevRead, p.start, "%s %s: gauge start is the previous read", name, p.metric)
			if dt == 0 {
				dt = p.ts.AsTime().Sub(p.start.AsTime())
			}
			require.Equal(t, dt, p.ts.AsTime().Sub(p.start.AsTime()), "%s %s: one interval for all", name, p.metric)
		}
	}
	require.Positive(t, dt)

	// sysstat: the same snapshots, with uptimes the receiver's interval apart.
	const u1 = 123456789 // hundredths of a second (about 14 days); any value works
	dcs := int64(math.Round(float64(dt) / float64(10*time.Millisecond)))
	require.Positive(t, dcs, "an interval iostat can take: at least 5 ms")
	t.Logf("receiver interval %v; iostat interval %d.%02d s (relative rounding %.3f %%)", dt, dcs/100, dcs%100,
		100*math.Abs(float64(dcs)*1e7-float64(dt))/float64(dt))
	names := make([]string, len(s1))
	for i := range s1 {
		names[i] = s1[i].Name
	}
	reports := runIostat(t, iostatRun{
		iostat: iostat, devices: names, diskstats: [2][]byte{ds1, ds2},
		uptimeCS: [2]int64{u1, u1 + dcs}, timeout: 30 * time.Second,
	})
	// The receiver's rates over iostat's interval, which /proc/uptime rounds to a hundredth of a second:
	// after a short interval (a late scrape, then the ticker's prompt next one) that rounding alone
	// exceeded the tolerance (0.6 % on nvme0n1's r/s in a CI run).
	toSys := float64(dt) / (float64(dcs) * float64(10*time.Millisecond))
	// The first report counts since "boot" (u1): it proves iostat's first read saw snapshot 1.
	for _, l := range s1 {
		want := float64(l.C[fRdIOs]) * 100 / u1
		require.True(t, agree(reports[0][l.Name]["r/s"], want),
			"iostat's first read did not see snapshot 1: %s r/s since boot = %v, want %.2f", l.Name, reports[0][l.Name]["r/s"], want)
	}
	sys := reports[1]

	var table strings.Builder
	fmt.Fprintf(&table, "%-8s %-9s %14s %16s\n", "device", "column", "sysstat", "receiver")
	for _, name := range names {
		l := dev[name][1]
		sv, ok := sys[name]
		require.True(t, ok, "iostat did not report %s", name)
		for _, c := range iostatColumns {
			s, ok := sv[c.key]
			require.True(t, ok, "iostat printed no %s for %s", c.key, name)
			p, has := find(rec[name], c.metric, c.dir)
			if !c.reported(l) {
				assert.False(t, has, "%s: the receiver reports %s, which a %d-field line does not have", name, c.key, len(l.C)+3)
				assert.Zero(t, s, "%s %s: sysstat shows activity the fixture does not have", name, c.key)
				continue
			}
			if !assert.True(t, has && p.gauge, "%s: the receiver reports no %s gauge (%s %s)", name, c.key, c.metric, c.dir) {
				continue
			}
			r := p.value * c.scale
			rs := r // at iostat's interval
			if c.perTime {
				rs *= toSys
			}
			fmt.Fprintf(&table, "%-8s %-9s %14.2f %16.6f\n", name, c.key, s, rs)
			if name == wrapDev && (c.key == "util" || c.key == "aqu-sz") {
				checkWrapped(t, c, dev[name], dt, s, r, rs)
				continue
			}
			assert.True(t, agree(s, rs), "%s %s: sysstat %.2f, receiver %.6f at iostat's interval (%s %s × %g)", name, c.key, s, rs, c.metric, c.dir, c.scale)
		}
	}
	t.Logf("second report, sysstat vs receiver (in sysstat's units, at iostat's interval):\n%s", table.String())
	// Both sides count the re-created device's interval from zero: its whole new count is activity.
	fresh := float64(dev[recreatedDev][1].C[fRdIOs]) * 100 / float64(dcs)
	assert.True(t, agree(sys[recreatedDev]["r/s"], fresh), "%s: sysstat r/s %.2f, want its new count over the interval, %.2f",
		recreatedDev, sys[recreatedDev]["r/s"], fresh)
}

// checkWrapped checks %util or aqu-sz of the device whose io_ticks and time_in_queue wrapped: the
// receiver reports the modular increase over its interval dt (rec; recAtSys is it over iostat's
// interval). sysstat versions that clamp a counter that went back print 0 there instead; otherwise the
// two agree as usual.
func checkWrapped(t *testing.T, c iostatColumn, l [2]*dsLine, dt time.Duration, sys, rec, recAtSys float64) {
	t.Helper()
	f := fIOTicks
	if c.key == "aqu-sz" {
		f = fQueueTicks
	}
	// Ticks are milliseconds: %util = Δio_ticks / Δt_ms × 100, aqu-sz = Δtime_in_queue / Δt_ms.
	want := float64(mod32(l[0].C[f], l[1].C[f])) / (dt.Seconds() * 1000) * c.scale
	// The receiver measures intervals on the monotonic clock while timestamps are wall clock: they
	// differ by nanoseconds, hence 1e-6 and not exact equality.
	assert.InEpsilon(t, want, rec, 1e-6, "%s %s: the receiver's value is not the modular increase", wrapDev, c.key)
	if sys == 0 && want >= 0.01 {
		t.Logf("%s %s: sysstat clamps the wrapped counter to 0; the receiver reports the modular %.4f", wrapDev, c.key, rec)
		return
	}
	t.Logf("%s %s: sysstat takes the modular difference too (%.2f)", wrapDev, c.key, sys)
	assert.True(t, agree(sys, recAtSys), "%s %s: sysstat %.2f, receiver %.6f at iostat's interval", wrapDev, c.key, sys, recAtSys)
}

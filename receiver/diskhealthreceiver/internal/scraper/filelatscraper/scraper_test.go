package filelatscraper

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/filelat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/semconvcheck"
)

// fakeProbe serves a snapshot; Forget drops a mount's series from what it serves next, as the real
// probe does.
type fakeProbe struct {
	started   time.Time
	snap      filelat.Snapshot
	forgotten []uint32
	// cgForgotten is what ForgetCgroups was given.
	cgForgotten []uint64
	closed      bool
}

func (p *fakeProbe) Started() time.Time                 { return p.started }
func (p *fakeProbe) Close() error                       { p.closed = true; return nil }
func (p *fakeProbe) Collect() (filelat.Snapshot, error) { return p.snap, nil }
func (p *fakeProbe) Forget(ids ...uint32) error {
	p.forgotten = append(p.forgotten, ids...)
	p.snap.Series = slices.DeleteFunc(p.snap.Series, func(s filelat.Series) bool { return slices.Contains(ids, s.MountID) })
	p.snap.Cgroups = slices.DeleteFunc(p.snap.Cgroups, func(s filelat.CgroupSeries) bool { return slices.Contains(ids, s.MountID) })
	return nil
}

func (p *fakeProbe) ForgetCgroups(ids ...uint64) error {
	p.cgForgotten = append(p.cgForgotten, ids...)
	p.snap.Cgroups = slices.DeleteFunc(p.snap.Cgroups, func(s filelat.CgroupSeries) bool { return slices.Contains(ids, s.CgroupID) })
	return nil
}

// add makes the fake probe count n calls of op on mount id, each in bucket b (scale 3), with bytes,
// pages and pages added.
func (p *fakeProbe) add(id uint32, op filelat.Op, n uint64, b int32, bytes, pages, added uint64) {
	h := biolat.Histogram{Offset: b, Buckets: []uint64{n}, Count: n, Sum: float64(n) * math.Exp2(float64(b+1)/8)}
	for i := range p.snap.Series {
		s := &p.snap.Series[i]
		if s.MountID == id && s.Op == op {
			s.Histogram = s.Histogram.Add(h)
			s.Bytes, s.Pages, s.PagesAdded = s.Bytes+bytes, s.Pages+pages, s.PagesAdded+added
			return
		}
	}
	p.snap.Series = append(p.snap.Series, filelat.Series{MountID: id, Op: op, Histogram: h, Bytes: bytes, Pages: pages, PagesAdded: added})
	slices.SortFunc(p.snap.Series, func(a, b filelat.Series) int {
		if a.MountID != b.MountID {
			return int(a.MountID) - int(b.MountID)
		}
		return int(a.Op) - int(b.Op)
	})
}

// noCgroups is a host without an io/blkio hierarchy; the tests of per_cgroup off never ask for it.
func noCgroups(string) (func() (map[uint64]string, error), error) { return nil, os.ErrNotExist }

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// The host's mount table: / on sda2, /data on an NVMe partition, /mnt/nfs an NFS export.
const mountinfo = `22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw
30 22 259:3 / /data rw,relatime shared:2 - xfs /dev/nvme0n1p3 rw
41 22 0:52 / /mnt/nfs rw,relatime shared:3 - nfs4 server:/export rw,vers=4.2
`

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// observed is the scraper's settings with its log lines kept.
func observed() (scraper.Settings, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	set := scrapertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	return set, logs
}

func newTestScraper(t *testing.T, cfg *Config, p *fakeProbe, table *string, c *clock) (*filelatScraper, *observer.ObservedLogs) {
	t.Helper()
	set, logs := observed()
	open := func(o filelat.Options) (probe, error) {
		assert.Equal(t, filelat.Options{MaxMounts: cfg.MaxMounts}, o)
		return p, nil
	}
	s := newScraper(set, cfg, open, func() ([]byte, fsusage.View, error) { return []byte(*table), fsusage.ViewInit, nil }, noCgroups, c.now)
	require.NoError(t, s.start(t.Context(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })
	return s, logs
}

// sample is a probe that saw reads, writes and fsyncs on / and /data, reads on the NFS mount, and
// reads on mount 99, which the host's table does not list (another mount namespace).
func sample() *fakeProbe {
	p := &fakeProbe{started: t0, snap: filelat.Snapshot{Drops: filelat.Drops{Full: 3}}}
	p.add(22, filelat.Read, 40, -100, 40<<12, 40, 10)
	p.add(22, filelat.Write, 8, -90, 8<<12, 0, 0)
	p.add(30, filelat.Read, 100, -80, 100<<17, 3200, 3200)
	p.add(30, filelat.Fsync, 2, -40, 0, 0, 0)
	p.add(41, filelat.Read, 5, -30, 5<<12, 5, 5)
	p.add(99, filelat.Read, 7, -95, 7<<12, 7, 0)
	return p
}

// TestScrapeGolden: with top_n 2 the two busiest mounts (/data, /) have their series, one per
// operation they saw; the NFS mount and the unlisted mount 99 are "other", and 99 is forgotten.
func TestScrapeGolden(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Enabled, cfg.TopN = true, 2
	p := sample()
	table := mountinfo
	s, logs := newTestScraper(t, cfg, p, &table, &clock{t0.Add(time.Minute)})
	require.Equal(t, 1, logs.Len())
	assert.Equal(t, zapcore.InfoLevel, logs.All()[0].Level)
	md, err := s.scrape(t.Context())
	require.NoError(t, err)
	dhtest.AssertGolden(t, "top2", md)
	assert.Equal(t, []uint32{99}, p.forgotten)
	assert.Equal(t, map[string]uint64{"/:read": 40, "/:write": 8, "/data:read": 100, "/data:fsync": 2, "other:read": 12}, counts(md))
}

// counts is the histogram's count per "mountpoint:operation".
func counts(md pmetric.Metrics) map[string]uint64 {
	out := map[string]uint64{}
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		if m.Type() != pmetric.MetricTypeExponentialHistogram {
			return
		}
		dps := m.ExponentialHistogram().DataPoints()
		for i := range dps.Len() {
			mp, _ := dps.At(i).Attributes().Get("system.filesystem.mountpoint")
			op, _ := dps.At(i).Attributes().Get("disk_health.file.operation")
			out[mp.Str()+":"+op.Str()] += dps.At(i).Count()
		}
	})
	return out
}

// TestEveryCallInOneSeries: over scrapes where mounts trade places in the top N, come and go and an ID
// comes to name another mount, every series is monotonic from its start and the calls the probe
// counted are in exactly one of the series emitted at each scrape, plus those of series that ended.
func TestEveryCallInOneSeries(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Enabled, cfg.TopN = true, 1
	p := sample()
	table := mountinfo
	c := &clock{t0.Add(time.Minute)}
	s, _ := newTestScraper(t, cfg, p, &table, c)
	type key struct {
		mp, op string
		start  pcommon.Timestamp
	}
	last := map[key]uint64{}
	var total uint64 // every call the fake probe ever counted
	for _, x := range p.snap.Series {
		total += x.Histogram.Count
	}
	for i := range 8 {
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		cur := map[key]uint64{}
		var hits, misses int64
		pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
			switch m.Name() {
			case "disk_health.filesystem.operation.duration":
				dps := m.ExponentialHistogram().DataPoints()
				for j := range dps.Len() {
					mp, _ := dps.At(j).Attributes().Get("system.filesystem.mountpoint")
					op, _ := dps.At(j).Attributes().Get("disk_health.file.operation")
					cur[key{mp.Str(), op.Str(), dps.At(j).StartTimestamp()}] = dps.At(j).Count()
				}
			case "disk_health.filesystem.page_cache.pages":
				dps := m.Sum().DataPoints()
				for j := range dps.Len() {
					if r, _ := dps.At(j).Attributes().Get("disk_health.page_cache.result"); r.Str() == "hit" {
						hits += dps.At(j).IntValue()
					} else {
						misses += dps.At(j).IntValue()
					}
				}
			}
		})
		var sum uint64
		for k, n := range cur {
			assert.GreaterOrEqual(t, n, last[k], "scrape %d: %v went back", i, k)
			sum += n
		}
		for k, n := range last {
			if _, ok := cur[k]; !ok {
				sum += n // a series that ended: what it showed stays counted
				cur[k] = n
			}
		}
		require.Equal(t, total, sum, "scrape %d: every call in exactly one series", i)
		assert.Positive(t, hits+misses)
		last = cur
		// The next interval: / gets busy, then an ID is reused, then the NFS mount goes away.
		c.t = c.t.Add(time.Minute)
		switch i {
		case 0, 1, 2:
			p.add(22, filelat.Read, 500, -100, 500<<12, 500, 0)
			total += 500
		case 3:
			table = strings.Replace(table, "/mnt/nfs rw", "/mnt/other rw", 1)
			p.add(41, filelat.Read, 9, -30, 9<<12, 9, 9)
			total += 9
		case 4:
			table = strings.Join(strings.Split(table, "\n")[:2], "\n") + "\n"
		default:
			p.add(30, filelat.Write, 3, -70, 3<<12, 0, 0)
			p.add(77, filelat.Read, 1, -70, 1<<12, 1, 1)
			total += 4
		}
	}
	assert.Contains(t, p.forgotten, uint32(41), "the unmounted NFS mount is forgotten")
}

// TestFallbackLogsOneWarning: where the probe cannot load, start succeeds, exactly one WARN says why and
// what to do (the source was asked for), and every scrape reports nothing and no error.
func TestFallbackLogsOneWarning(t *testing.T) {
	for _, tc := range []struct {
		err    error
		cause  string
		want   string
		reason emit.Reason
	}{
		{biolat.Unavailable("file latency", syscall.EPERM), "", "file latency", ""},
		{&biolat.UnavailableError{Measure: "file latency", Cause: biolat.CauseMissingCapabilities, Missing: []string{"CAP_PERFMON"}, Err: syscall.EPERM},
			"missing_capabilities", "loading the file latency BPF program was refused because the collector lacks CAP_PERFMON: grant it", emit.ReasonMissingCapability},
		{&biolat.UnavailableError{Measure: "file latency", Cause: biolat.CauseRejected, Detail: "6.18.0", Err: fmt.Errorf("invalid argument")},
			"rejected", "the kernel rejected the file latency BPF program (invalid argument)", emit.ReasonError},
	} {
		set, logs := observed()
		cfg := createDefaultConfig()
		cfg.Status = emit.NewStatus()
		s := newScraper(set, cfg, func(filelat.Options) (probe, error) { return nil, tc.err },
			func() ([]byte, fsusage.View, error) { return nil, 0, os.ErrNotExist }, noCgroups, time.Now)
		require.NoError(t, s.start(t.Context(), componenttest.NewNopHost()))
		for range 3 {
			md, err := s.scrape(t.Context())
			require.NoError(t, err)
			assert.Zero(t, md.DataPointCount())
		}
		require.NoError(t, s.shutdown(t.Context()))
		require.Equal(t, 1, logs.Len(), "exactly one line")
		e := logs.All()[0]
		assert.Equal(t, zapcore.WarnLevel, e.Level)
		assert.Contains(t, e.Message, tc.want)
		assert.Contains(t, e.Message, "The filelat source reports nothing; every other source runs on.")
		if tc.cause != "" {
			assert.Equal(t, tc.cause, e.ContextMap()["cause"])
		}
		// Said as data too (disk_health.source.status): off, with the reason the cause gives.
		state, reason := cfg.Status.Get()
		assert.Equal(t, emit.StateOff, state)
		if tc.reason != "" {
			assert.Equal(t, tc.reason, reason)
		}
	}
}

// TestHistogramsDocumented: documentation-extra.md declares every row of the histogram table (name,
// unit, description verbatim) and no other, with exactly the attribute keys the code puts on its points
// (a mount's and "other"'s).
func TestHistogramsDocumented(t *testing.T) {
	data, err := os.ReadFile("documentation-extra.md")
	require.NoError(t, err)
	documented, err := semconvcheck.ParseDocumentedMetrics(data, "documentation-extra.md")
	require.NoError(t, err)
	ms := pmetric.NewMetricSlice()
	m := &fsusage.Mount{MountPoint: "/data", FSType: "xfs", Source: "/dev/sdb1"}
	appendHistograms(ms, []point{{mount: m, op: filelat.Read}, {op: filelat.Write}}, 0)
	pod := "/kubepods.slice/kubepods-pod0c8a3b52_1b0e_4c1e_9d0a_5b5e2f0b7f11.slice/cri-containerd-" + strings.Repeat("ab", 32) + ".scope"
	appendCgroupHistograms(ms, []cgPoint{{pod, point{mount: m, op: filelat.Read}}, {otherCgroup, point{op: filelat.Fsync}}}, 0)
	require.Len(t, documented, len(histograms))
	require.Equal(t, len(histograms), ms.Len())
	for i, h := range histograms {
		put := map[string]bool{}
		dps := ms.At(i).ExponentialHistogram().DataPoints()
		for j := range dps.Len() {
			for k := range dps.At(j).Attributes().All() {
				put[k] = true
			}
		}
		d := documented[i]
		assert.Equal(t, h.name, d.Name)
		assert.Equal(t, h.unit, d.Unit)
		assert.Equal(t, "exponential_histogram", d.Type)
		assert.Contains(t, string(data), "### "+h.name+"\n\n"+h.description+"\n")
		keys := map[string]bool{}
		for _, a := range d.Attributes {
			keys[a.Key] = true
		}
		assert.Equal(t, put, keys, "the attributes documented are the ones the code puts")
	}
}

// TestCollectorsOwnView: where only the collector's own mount table can be read in a container
// (ViewSelf), host mounts under root_path are reported at their host paths and the container's own
// mounts (its overlay root) are not named: their calls go to other, and they are forgotten.
func TestCollectorsOwnView(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Enabled, cfg.RootPath = true, "/hostfs"
	p := &fakeProbe{started: t0}
	p.add(500, filelat.Read, 4, -100, 4<<12, 4, 0)
	p.add(510, filelat.Read, 6, -100, 6<<12, 6, 6)
	table := `500 400 0:60 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w
510 500 259:3 / /hostfs/data ro,relatime - xfs /dev/nvme0n1p3 rw
`
	set, _ := observed()
	s := newScraper(set, cfg, func(filelat.Options) (probe, error) { return p, nil },
		func() ([]byte, fsusage.View, error) { return []byte(table), fsusage.ViewSelf, nil }, noCgroups, func() time.Time { return t0.Add(time.Minute) })
	require.NoError(t, s.start(t.Context(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, s.shutdown(t.Context())) }()
	md, err := s.scrape(t.Context())
	require.NoError(t, err)
	assert.Equal(t, map[string]uint64{"/data:read": 6, "other:read": 4}, counts(md))
	assert.Equal(t, []uint32{500}, p.forgotten)
}

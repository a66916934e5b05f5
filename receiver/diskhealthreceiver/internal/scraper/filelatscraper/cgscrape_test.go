package filelatscraper

import (
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/filelat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
)

// The cgroups of the fixture: two pods' containers, a host service and the root.
var (
	podA = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b4e28ba_2fa1_11d2_883f_0016d3cca427.slice/cri-containerd-" + strings.Repeat("a1", 32) + ".scope"
	podB = "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod6fa459ea_ee8a_3ca4_894e_db77e160355e.slice/cri-containerd-" + strings.Repeat("b2", 32) + ".scope"
)

// addCg makes the fake probe count n calls of op by cgroup cg on mount id (as add, which counts them
// on the mount too: every call is in its mount's series).
func (p *fakeProbe) addCg(cg uint64, id uint32, op filelat.Op, n uint64, b int32, bytes, pages, added uint64) {
	p.add(id, op, n, b, bytes, pages, added)
	h := biolat.Histogram{Offset: b, Buckets: []uint64{n}, Count: n, Sum: float64(n) * math.Exp2(float64(b+1)/8)}
	for i := range p.snap.Cgroups {
		s := &p.snap.Cgroups[i]
		if s.CgroupID == cg && s.MountID == id && s.Op == op {
			s.Histogram = s.Histogram.Add(h)
			s.Bytes, s.Pages, s.PagesAdded = s.Bytes+bytes, s.Pages+pages, s.PagesAdded+added
			return
		}
	}
	p.snap.Cgroups = append(p.snap.Cgroups, filelat.CgroupSeries{CgroupID: cg, Series: filelat.Series{
		MountID: id, Op: op, Histogram: h, Bytes: bytes, Pages: pages, PagesAdded: added}})
	slices.SortFunc(p.snap.Cgroups, func(a, b filelat.CgroupSeries) int {
		if a.CgroupID != b.CgroupID {
			return int(a.CgroupID) - int(b.CgroupID)
		}
		if a.MountID != b.MountID {
			return int(a.MountID) - int(b.MountID)
		}
		return int(a.Op) - int(b.Op)
	})
}

// cgSample: pod A reads /data and mount 99 (its own overlay root, in another mount namespace) and
// writes /; pod B reads / and the NFS mount; the host service reads /data a little and fsyncs; the
// root cgroup reads /. With top_n 2 mounts (/data, /) and 2 cgroups (A and B by reads).
func cgSample() (*fakeProbe, map[uint64]string) {
	p := &fakeProbe{started: t0, snap: filelat.Snapshot{Drops: filelat.Drops{CgroupsFull: 2}}}
	p.addCg(100, 30, filelat.Read, 90, -80, 90<<17, 2880, 2000)
	p.addCg(100, 99, filelat.Read, 30, -95, 30<<12, 30, 0)
	p.addCg(100, 22, filelat.Write, 6, -90, 6<<12, 0, 0)
	p.addCg(200, 22, filelat.Read, 35, -100, 35<<12, 35, 10)
	p.addCg(200, 41, filelat.Read, 5, -30, 5<<12, 5, 5)
	p.addCg(300, 30, filelat.Read, 10, -80, 10<<17, 320, 0)
	p.addCg(300, 30, filelat.Fsync, 2, -40, 0, 0, 0)
	p.addCg(1, 22, filelat.Read, 5, -100, 5<<12, 5, 0)
	ids := map[uint64]string{1: "/", 100: podA, 200: podB, 300: "/system.slice/kubelet.service"}
	return p, ids
}

func newCgroupScraper(t *testing.T, cfg *Config, p *fakeProbe, table *string, ids map[uint64]string, c *clock) *filelatScraper {
	t.Helper()
	set, _ := observed()
	open := func(o filelat.Options) (probe, error) {
		assert.Equal(t, filelat.Options{MaxMounts: cfg.MaxMounts, PerCgroup: true, MaxCgroupSeries: cfg.PerCgroup.MaxSeries}, o)
		return p, nil
	}
	cgroups := func(root string) (func() (map[uint64]string, error), error) {
		assert.Equal(t, cfg.RootPath, root)
		return func() (map[uint64]string, error) { return maps.Clone(ids), nil }, nil
	}
	s := newScraper(set, cfg, open, func() ([]byte, fsusage.View, error) { return []byte(*table), fsusage.ViewInit, nil }, cgroups, c.now)
	require.NoError(t, s.start(t.Context(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })
	return s
}

// cgCounts is the per-cgroup histogram's count per "cgroup.path|mountpoint:operation", with the pod
// and container each point carries checked against its path.
func cgCounts(t *testing.T, md pmetric.Metrics) map[string]uint64 {
	out := map[string]uint64{}
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		if m.Name() != "disk_health.container.filesystem.operation.duration" {
			return
		}
		dps := m.ExponentialHistogram().DataPoints()
		for i := range dps.Len() {
			a := dps.At(i).Attributes()
			cg, _ := a.Get("cgroup.path")
			mp, _ := a.Get("system.filesystem.mountpoint")
			op, _ := a.Get("disk_health.file.operation")
			pod, hasPod := a.Get("k8s.pod.uid")
			switch cg.Str() {
			case podA:
				assert.Equal(t, "1b4e28ba-2fa1-11d2-883f-0016d3cca427", pod.Str())
			case podB:
				assert.Equal(t, "6fa459ea-ee8a-3ca4-894e-db77e160355e", pod.Str())
			default:
				assert.False(t, hasPod, "%s names no pod", cg.Str())
			}
			out[cg.Str()+"|"+mp.Str()+":"+op.Str()] += dps.At(i).Count()
		}
	})
	return out
}

// TestCgroupScrapeGolden: the two cgroups with the most reads (pods A and B) have their series on
// the shown mounts (/data, /) and their other mounts as "other" (A's overlay root, B's NFS mount);
// kubelet's and the root's calls are cgroup "other"; the page-cache pages follow the reads.
func TestCgroupScrapeGolden(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Enabled, cfg.TopN, cfg.PerCgroup.Enabled, cfg.PerCgroup.TopN = true, 2, true, 2
	p, ids := cgSample()
	table := mountinfo
	s := newCgroupScraper(t, cfg, p, &table, ids, &clock{t0.Add(time.Minute)})
	md, err := s.scrape(t.Context())
	require.NoError(t, err)
	dhtest.AssertGolden(t, "per_cgroup", md)
	assert.Equal(t, map[string]uint64{
		podA + "|/data:read": 90, podA + "|other:read": 30, podA + "|/:write": 6,
		podB + "|/:read": 35, podB + "|other:read": 5,
		"other|other:read": 15, "other|other:fsync": 2,
	}, cgCounts(t, md))
	assert.Empty(t, p.cgForgotten)
	assert.Equal(t, []uint32{99}, p.forgotten, "the unlisted mount is forgotten, in every cgroup")
	assert.Empty(t, slices.DeleteFunc(slices.Clone(p.snap.Cgroups), func(c filelat.CgroupSeries) bool { return c.MountID != 99 }))
}

// TestEveryCgroupCallInOneSeries: over scrapes where cgroups trade places in the top N, one is
// removed and mounts come and go, every per-cgroup series is monotonic from its start, every call the
// probe counted per cgroup is in exactly one series (or one that ended), page-cache pages likewise,
// the removed cgroup is forgotten in the probe and the folder's state stays within its bounds.
func TestEveryCgroupCallInOneSeries(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Enabled, cfg.TopN, cfg.PerCgroup.Enabled, cfg.PerCgroup.TopN = true, 1, true, 1
	p, ids := cgSample()
	table := mountinfo
	c := &clock{t0.Add(time.Minute)}
	s := newCgroupScraper(t, cfg, p, &table, ids, c)
	type key struct {
		series string
		start  pcommon.Timestamp
	}
	last, lastPages := map[key]uint64{}, map[key]int64{}
	var total, pages uint64
	for _, x := range p.snap.Cgroups {
		total += x.Histogram.Count
		pages += x.Pages
	}
	for i := range 9 {
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		cur, curPages := map[key]uint64{}, map[key]int64{}
		pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
			switch m.Name() {
			case "disk_health.container.filesystem.operation.duration":
				dps := m.ExponentialHistogram().DataPoints()
				for j := range dps.Len() {
					cur[key{attrKey(dps.At(j).Attributes()), dps.At(j).StartTimestamp()}] = dps.At(j).Count()
				}
			case "disk_health.container.filesystem.page_cache.pages":
				dps := m.Sum().DataPoints()
				for j := range dps.Len() {
					curPages[key{attrKey(dps.At(j).Attributes()), dps.At(j).StartTimestamp()}] = dps.At(j).IntValue()
				}
			}
		})
		assert.Equal(t, total, sumSeries(t, i, cur, last), "scrape %d: every call in exactly one series", i)
		assert.Equal(t, int64(pages), sumSeries(t, i, curPages, lastPages), "scrape %d: every page in exactly one series", i)
		last, lastPages = cur, curPages
		assert.LessOrEqual(t, len(s.cgFolder.rests), 3, "a rest per operation of the one cgroup shown")
		assert.LessOrEqual(t, len(s.cgFolder.states), len(p.snap.Cgroups))
		c.t = c.t.Add(time.Minute)
		switch i {
		case 0, 1: // pod B reads ten times as much as A: it takes the slot at once
			p.addCg(200, 22, filelat.Read, 1000, -100, 1000<<12, 1000, 100)
			total, pages = total+1000, pages+1000
		case 2: // pod B is removed: its last calls go to other, its entries are forgotten
			p.addCg(200, 41, filelat.Read, 7, -30, 7<<12, 7, 7)
			total, pages = total+7, pages+7
			delete(ids, 200)
		case 3: // the NFS mount goes, with pod A's reads on it
			p.addCg(100, 41, filelat.Read, 3, -30, 3<<12, 3, 3)
			total, pages = total+3, pages+3
			table = strings.Join(strings.Split(table, "\n")[:2], "\n") + "\n"
		default: // the unlisted overlay root keeps being read (forgotten and made again every scrape)
			p.addCg(100, 99, filelat.Read, 4, -95, 4<<12, 4, 0)
			p.addCg(300, 30, filelat.Write, 2, -70, 2<<12, 0, 0)
			total, pages = total+6, pages+4
		}
	}
	assert.Equal(t, []uint64{200}, p.cgForgotten, "the removed cgroup is forgotten once")
	assert.Contains(t, p.forgotten, uint32(41))
}

// sumSeries adds up the series of a scrape and those of earlier scrapes that ended (what they showed
// stays counted), checking that none went back.
func sumSeries[K comparable, V uint64 | int64](t *testing.T, scrape int, cur, last map[K]V) V {
	var sum V
	for k, n := range cur {
		assert.GreaterOrEqual(t, n, last[k], "scrape %d: %v went back", scrape, k)
		sum += n
	}
	for k, n := range last {
		if _, ok := cur[k]; !ok {
			sum += n
			cur[k] = n
		}
	}
	return sum
}

// attrKey is a point's attributes as one string.
func attrKey(a pcommon.Map) string {
	var parts []string
	for k, v := range a.All() {
		parts = append(parts, k+"="+v.AsString())
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

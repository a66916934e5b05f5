package latencyscraper

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
)

// histOf is n requests of about 1 ms each (bucket -80), sum n ms.
func histOf(n uint64) biolat.Histogram {
	if n == 0 {
		return biolat.Histogram{}
	}
	return biolat.Histogram{Offset: -80, Buckets: []uint64{n}, Count: n, Sum: float64(n) / 1000}
}

func cgSeries(id uint64, path string, n uint64) biolat.CgroupSeries {
	return biolat.CgroupSeries{CgroupID: id, Path: path, Dev: biolat.Dev{Major: 8}, Direction: biolat.Read, Histogram: histOf(n), Bytes: 4096 * n}
}

func otherOf(n uint64) []biolat.CgroupSeries {
	return []biolat.CgroupSeries{{Dev: biolat.Dev{Major: 8}, Direction: biolat.Read, Histogram: histOf(n), Bytes: 4096 * n}}
}

// counts is each emitted series' count and start by path.
func counts(points []cgPoint) map[string][2]uint64 {
	out := map[string][2]uint64{}
	for _, p := range points {
		out[p.path] = [2]uint64{p.hist.Count, uint64(p.start)}
	}
	return out
}

// The top N per device go to the most active cgroups; the rest is one other series; a cgroup
// entering the top N is shown from the value it had then, and keeps its series while idle until a
// cgroup more than topn.EvictFactor times as active needs the slot; a removed cgroup's counts reach other
// once. Every series only grows, and the increases add up to the requests done.
func TestFolderTopNAndOther(t *testing.T) {
	const t0, t1, t2, t3 = pcommon.Timestamp(100), pcommon.Timestamp(200), pcommon.Timestamp(300), pcommon.Timestamp(400)
	all := func(biolat.Dev) bool { return true }
	f := newFolder(2, t0)

	// A 10, B 5, C 1, and 2 without an owner: A and B shown, C in other.
	got := f.fold(&biolat.CgroupSnapshot{
		Cgroups: []biolat.CgroupSeries{cgSeries(1, "/a", 10), cgSeries(2, "/b", 5), cgSeries(3, "/c", 1)},
		Other:   otherOf(2),
	}, all, t0, t1)
	require.Equal(t, map[string][2]uint64{"/a": {10, 100}, "/b": {5, 100}, otherPath: {3, 100}}, counts(got))
	require.Equal(t, uint64(4096*5), got[1].bytes)

	// A did nothing, B 5 more, C 40 more: C (activity 40.75) evicts the least active, A (7.5), and
	// is shown from its 1 (start t1); A's series ends.
	got = f.fold(&biolat.CgroupSnapshot{
		Cgroups: []biolat.CgroupSeries{cgSeries(1, "/a", 10), cgSeries(2, "/b", 10), cgSeries(3, "/c", 41)},
		Other:   otherOf(2),
	}, all, t0, t2)
	require.Equal(t, map[string][2]uint64{"/b": {10, 100}, "/c": {40, 200}, otherPath: {3, 100}}, counts(got))

	// B is removed after 2 more (12 in all, now in the probe's Other), A does 1 more: A takes B's slot
	// and is shown from its 10 (start t2), other grows by B's last 2 only; C did nothing and keeps its
	// series.
	got = f.fold(&biolat.CgroupSnapshot{
		Cgroups: []biolat.CgroupSeries{cgSeries(1, "/a", 11), cgSeries(3, "/c", 41)},
		Other:   otherOf(2 + 12),
	}, all, t0, t3)
	require.Equal(t, map[string][2]uint64{"/a": {1, 300}, "/c": {40, 200}, otherPath: {5, 100}}, counts(got))
	// Occupancy in the interval: A's 1 ms, C's none, other's 2 ms (B's last two requests).
	for _, p := range got {
		want := map[string]float64{"/a": 0.001, "/c": 0, otherPath: 0.002}[p.path]
		require.InDelta(t, want, p.busy, 1e-12, p.path)
	}
	// 57 requests were done (18, 35, 4); the series' increases over their lives add up to them:
	// a 10 + 1, b 10, c 40 (from its 1, which other has), other 5.
	// Devices not kept are left out, and their state is freed.
	got = f.fold(&biolat.CgroupSnapshot{Cgroups: []biolat.CgroupSeries{cgSeries(1, "/a", 12)}, Other: otherOf(14)},
		func(biolat.Dev) bool { return false }, t0, t3+100)
	require.Empty(t, got)
	require.Empty(t, f.states)
	require.Empty(t, f.holders)
}

// A cgroup idle for k scrapes keeps its series: the same start and cumulative values every scrape,
// while a less busy cgroup stays in other; when it reads again its series goes on from there.
func TestFolderIdleCgroupKeepsItsSeries(t *testing.T) {
	all := func(biolat.Dev) bool { return true }
	f := newFolder(1, 100)
	ts := pcommon.Timestamp(200)
	got := f.fold(&biolat.CgroupSnapshot{Cgroups: []biolat.CgroupSeries{cgSeries(1, "/pod", 100)}}, all, 100, ts)
	require.Equal(t, map[string][2]uint64{"/pod": {100, 100}}, counts(got))
	// The pod pauses for 5 scrapes while another cgroup does 5 requests each.
	for k := range uint64(5) {
		ts += 100
		got = f.fold(&biolat.CgroupSnapshot{Cgroups: []biolat.CgroupSeries{cgSeries(1, "/pod", 100), cgSeries(2, "/job", 5*(k+1))}}, all, 100, ts)
		require.Equal(t, map[string][2]uint64{"/pod": {100, 100}, otherPath: {5 * (k + 1), 100}}, counts(got), "idle scrape %d", k+1)
	}
	ts += 100
	got = f.fold(&biolat.CgroupSnapshot{Cgroups: []biolat.CgroupSeries{cgSeries(1, "/pod", 130), cgSeries(2, "/job", 25)}}, all, 100, ts)
	require.Equal(t, map[string][2]uint64{"/pod": {130, 100}, otherPath: {25, 100}}, counts(got))
}

// Eviction is bounded: many cgroups busy in turn on one device never show more than top_n series,
// every series only grows while it lasts (a start never moves under a live series), the increases of
// all series add up to the requests done, and the state held is for live cgroups only: a removed
// cgroup's is freed at the next scrape.
func TestFolderEvictionBounded(t *testing.T) {
	all := func(biolat.Dev) bool { return true }
	const topN, cgroups, scrapes = 3, 40, 200
	f := newFolder(topN, 0)
	total := map[uint64]uint64{}
	gone := map[uint64]bool{}
	var done, other uint64
	type seen struct{ start, count uint64 }
	last := map[string]seen{}
	var ended uint64 // the final counts of series that ended
	for i := range uint64(scrapes) {
		var s biolat.CgroupSnapshot
		// Each cgroup reads in 3 scrapes of 10, now and then with a burst; every 7th is removed at
		// scrape 5 × its id (its counts are then in the probe's Other).
		for id := uint64(1); id <= cgroups; id++ {
			if id%7 == 0 && i == 5*id {
				gone[id] = true
				other += total[id]
			}
			if gone[id] {
				continue
			}
			n := uint64(0)
			if (i+id)%10 < 3 {
				n = id % 5
			}
			if (i*id)%37 == 0 {
				n += 50
			}
			total[id] += n
			done += n
			s.Cgroups = append(s.Cgroups, cgSeries(id, fmt.Sprintf("/cg%02d", id), total[id]))
		}
		s.Other = otherOf(other)
		got := f.fold(&s, all, 0, pcommon.Timestamp(i+1))
		now := map[string]seen{}
		sum := uint64(0)
		for _, p := range got {
			sum += p.hist.Count
			if p.path == otherPath {
				continue
			}
			if prev, ok := last[p.path]; ok {
				require.Equal(t, prev.start, uint64(p.start), "%s: the start of a live series moved", p.path)
				require.GreaterOrEqual(t, p.hist.Count, prev.count, "%s went down", p.path)
			}
			now[p.path] = seen{uint64(p.start), p.hist.Count}
		}
		require.LessOrEqual(t, len(now), topN, "scrape %d", i)
		for path, prev := range last {
			if _, ok := now[path]; !ok {
				ended += prev.count
			}
		}
		last = now
		require.Equal(t, done, ended+sum, "scrape %d: every request in exactly one series", i)
		require.Len(t, f.states, len(s.Cgroups), "state for live cgroups only")
		live := 0
		for _, h := range f.holders {
			live += h.Live()
		}
		require.Equal(t, len(s.Cgroups), live)
		require.LessOrEqual(t, f.holders[biolat.Dev{Major: 8}].Len(), topN)
	}
	require.Positive(t, ended, "no eviction happened")
}

package latencyscraper

import (
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

// The top N per device by requests in the interval get series; the rest is one other series;
// a cgroup entering the top N is shown from the value it had then; a removed cgroup's counts reach
// other once. Every series only grows, and the increases add up to the requests done.
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

	// A did nothing, B 5 more, C 10 more: C and B shown, C from its 1 (start t1); A's series stops.
	got = f.fold(&biolat.CgroupSnapshot{
		Cgroups: []biolat.CgroupSeries{cgSeries(1, "/a", 10), cgSeries(2, "/b", 10), cgSeries(3, "/c", 11)},
		Other:   otherOf(2),
	}, all, t0, t2)
	require.Equal(t, map[string][2]uint64{"/b": {10, 100}, "/c": {10, 200}, otherPath: {3, 100}}, counts(got))

	// B is removed after 2 more (12 in all, now in the probe's Other), A does 1 more: A is shown from
	// its 10 (start t2), other grows by B's last 2 only; C did nothing and stops.
	got = f.fold(&biolat.CgroupSnapshot{
		Cgroups: []biolat.CgroupSeries{cgSeries(1, "/a", 11), cgSeries(3, "/c", 11)},
		Other:   otherOf(2 + 12),
	}, all, t0, t3)
	require.Equal(t, map[string][2]uint64{"/a": {1, 300}, otherPath: {5, 100}}, counts(got))
	// Occupancy in the interval: A's 1 ms, other's 2 ms (B's last two requests).
	for _, p := range got {
		want := map[string]float64{"/a": 0.001, otherPath: 0.002}[p.path]
		require.InDelta(t, want, p.busy, 1e-12, p.path)
	}
	// 36 requests were done (18, 15, 3); the series' increases over their lives add up to them:
	// a 10 + 1, b 10, c 10 (from its 1, which other has), other 5.
	// Devices not kept are left out.
	got = f.fold(&biolat.CgroupSnapshot{Cgroups: []biolat.CgroupSeries{cgSeries(1, "/a", 12)}, Other: otherOf(14)},
		func(biolat.Dev) bool { return false }, t0, t3+100)
	require.Empty(t, got)
}

func TestCombineHistograms(t *testing.T) {
	a := biolat.Histogram{ZeroCount: 1, Offset: -10, Buckets: []uint64{1, 0, 2}, Count: 4, Sum: 1}
	b := biolat.Histogram{ZeroCount: 2, Offset: -12, Buckets: []uint64{3}, Count: 5, Sum: 2}
	sum := addHist(a, b)
	require.Equal(t, biolat.Histogram{ZeroCount: 3, Offset: -12, Buckets: []uint64{3, 0, 1, 0, 2}, Count: 9, Sum: 3}, sum)
	require.Equal(t, a, subHist(sum, b))
	require.Equal(t, biolat.Histogram{}, subHist(a, a))
	require.Equal(t, a, addHist(biolat.Histogram{}, a))
}

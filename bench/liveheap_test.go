package bench

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/stretchr/testify/require"
)

// heapProfileFlag names a file for the heap profile BenchmarkLiveHeap takes while the receiver still
// runs (-memprofile is written after every receiver has stopped, when its state is gone).
var heapProfileFlag = flag.String("heapprofile", "", "write BenchmarkLiveHeap's heap profile here")

// liveScrapes is how many scrapes BenchmarkLiveHeap lets the receiver run before it measures: the state
// the sources keep per mount and domain is all there after the first, and six give the issue-33 numbers.
const liveScrapes = 6

// BenchmarkLiveHeap is the heap a receiver's filesystem sources keep alive after liveScrapes scrapes
// (live-MiB: after a GC, less the heap before it started, the tree's description included in both), at
// each mount count, the mean over b.N receivers started afresh; -heapprofile writes where it goes (the
// last one's). The tree's mount points are directories of TMPDIR's filesystem, whose usage moves with
// whatever else writes there: TMPDIR=/dev/shm keeps every mount still.
func BenchmarkLiveHeap(b *testing.B) {
	for _, m := range sizes(b, *mountsFlag) {
		for _, r := range Receivers {
			b.Run(fmt.Sprintf("mounts=%d/recv=%s", m, r), func(b *testing.B) {
				tree(b, 1, m)
				var live int64
				for i := range b.N {
					live += liveAfterScrapes(b, r, m, i == b.N-1)
				}
				b.ReportMetric(float64(live)/float64(b.N)/(1<<20), "live-MiB")
			})
		}
	}
}

// liveAfterScrapes starts r on the tree of m mounts and returns the heap it keeps after liveScrapes
// scrapes, with profile set writing -heapprofile's profile before it stops.
func liveAfterScrapes(b *testing.B, r Receiver, m int, profile bool) int64 {
	before := liveHeap()
	run, err := Start(b.Context(), r, Filesystem, root, m, nil)
	require.NoError(b, err)
	defer func() { require.NoError(b, run.Stop(b.Context())) }()
	require.NoError(b, run.Wait(liveScrapes, runTimeout))
	after := liveHeap()
	if profile && *heapProfileFlag != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d.%s", *heapProfileFlag, m, r))
		require.NoError(b, err)
		require.NoError(b, pprof.WriteHeapProfile(f))
		require.NoError(b, f.Close())
	}
	return after - before
}

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

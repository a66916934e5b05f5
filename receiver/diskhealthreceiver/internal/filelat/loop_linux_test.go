//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelat

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
)

// readPass reads path from start to end with read(2) in chunk-sized calls, as a data loader does,
// and returns the calls it made and the time it spent in them.
func readPass(t *testing.T, path string, chunk int) (calls uint64, inCalls time.Duration) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, chunk)
	for {
		start := time.Now()
		n, err := f.Read(buf)
		inCalls += time.Since(start)
		calls++
		if err == io.EOF {
			return calls, inCalls
		}
		require.NoError(t, err)
		require.Positive(t, n)
	}
}

// mountSeries is the read series of the mount at mnt, resolved through /proc/self/mountinfo.
func mountSeries(t *testing.T, p *Probe, mnt string) Series {
	t.Helper()
	return mountOps(t, p, mnt)[Read]
}

// mountOps is every series of the mount at mnt, by operation.
func mountOps(t *testing.T, p *Probe, mnt string) map[Op]Series {
	t.Helper()
	s, err := p.Collect()
	require.NoError(t, err)
	require.Zero(t, s.Drops.Full)
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	mounts, err := fsusage.ParseMountInfo(b)
	require.NoError(t, err)
	resolved, _ := Resolve(s.Series, mounts)
	out := map[Op]Series{}
	for _, x := range resolved {
		if x.Mount.MountPoint == mnt {
			out[x.Op] = x.Series
		}
	}
	return out
}

// passStats is what one pass added to a read series: calls, seconds, pages and the bucket counts.
type passStats struct {
	count                      uint64
	sum                        float64
	bytes, pages, hits, misses uint64
	buckets                    map[int32]uint64
}

func delta(before, after Series) passStats {
	hb, mb := before.CachePages()
	ha, ma := after.CachePages()
	d := passStats{
		count: after.Histogram.Count - before.Histogram.Count, sum: after.Histogram.Sum - before.Histogram.Sum,
		bytes: after.Bytes - before.Bytes, pages: after.Pages - before.Pages, hits: ha - hb, misses: ma - mb,
		buckets: map[int32]uint64{math.MinInt32: after.Histogram.ZeroCount - before.Histogram.ZeroCount},
	}
	for j, n := range after.Histogram.Buckets {
		d.buckets[after.Histogram.Offset+int32(j)] += n
	}
	for j, n := range before.Histogram.Buckets {
		d.buckets[before.Histogram.Offset+int32(j)] -= n
	}
	return d
}

func (d passStats) quantile(q float64) time.Duration {
	return time.Duration(testkit.QuantileLowerBound(d.buckets, d.count, q, biolat.Scale) * 1e9)
}

// A data loader reading a file twice: the first pass, after the file's pages were dropped, misses the
// page cache and waits for the disk; the second is served from memory. The probe must count the
// reader's own calls and bytes, see the misses and hits, and time the calls within what the reader
// measured around them.
func TestColdAndWarmReadsOnLoopExt4(t *testing.T) {
	const size, chunk = 256 << 20, 128 << 10
	mnt := testkit.Ext4OnLoop(t, size+64<<20)
	path := filepath.Join(mnt, "data")
	writeFile(t, path, size)

	p, err := Open(Options{})
	require.NoError(t, err)
	defer p.Close()

	var passes [2]passStats
	for i, name := range []string{"cold", "warm"} {
		before := mountSeries(t, p, mnt)
		calls, inCalls := readPass(t, path, chunk)
		d := delta(before, mountSeries(t, p, mnt))
		passes[i] = d
		t.Logf("%s: %d calls (reader), %d (probe); %.3f s in calls (reader), %.3f s (probe); pages %d: hits %d, misses %d; p50 ≥ %v, p99 ≥ %v",
			name, calls, d.count, inCalls.Seconds(), d.sum, d.pages, d.hits, d.misses, d.quantile(0.5), d.quantile(0.99))
		require.InDelta(t, float64(calls), float64(d.count), float64(calls)/100, "%s: calls", name)
		require.Equal(t, uint64(size), d.bytes, "%s: bytes", name)
		require.Equal(t, uint64(size/os.Getpagesize()), d.pages, "%s: pages", name)
		// The probe's interval lies inside the reader's: entry to return of the same calls. No bound
		// from below: on a busy machine the reader's share (Go's syscall entry and exit, waiting for a
		// P after a blocking call) was measured at more than half of its time.
		require.LessOrEqual(t, d.sum, inCalls.Seconds(), "%s: probe time within the reader's", name)
	}
	cold, warm := passes[0], passes[1]
	require.GreaterOrEqual(t, float64(cold.misses), 0.95*float64(cold.pages), "cold: miss ratio")
	require.GreaterOrEqual(t, float64(warm.hits), 0.95*float64(warm.pages), "warm: hit ratio")
	// Memory speed: a 128 KiB copy from the page cache takes microseconds. Readahead keeps most cold
	// reads short too, so the disk shows in the tail and the total.
	require.Less(t, warm.quantile(0.5), 200*time.Microsecond, "warm: median at memory speed")
	require.Greater(t, cold.quantile(0.99), 10*warm.quantile(0.99), "cold: the tail waits for the disk")
	require.Greater(t, cold.sum, 4*warm.sum, "cold: the disk's time")
}

// writeFile writes size bytes to path, flushes them and drops them from the page cache, so that the
// next read misses it (FADV_DONTNEED on clean pages: only this file's, no drop_caches).
func writeFile(t *testing.T, path string, size int) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	for range size / len(buf) {
		_, err := f.Write(buf)
		require.NoError(t, err)
	}
	require.NoError(t, f.Sync())
	require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
}

// Writes and fsyncs are their own series: the writer's calls and bytes, each fsync and fdatasync once,
// and no read pages.
func TestWritesAndFsyncsOnLoopExt4(t *testing.T) {
	const writes, size = 100, 64 << 10
	mnt := testkit.Ext4OnLoop(t, 64<<20)
	p, err := Open(Options{})
	require.NoError(t, err)
	defer p.Close()

	f, err := os.Create(filepath.Join(mnt, "out"))
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, size)
	for range writes {
		_, err := f.Write(buf)
		require.NoError(t, err)
	}
	require.NoError(t, f.Sync())
	require.NoError(t, unix.Fdatasync(int(f.Fd())))

	ops := mountOps(t, p, mnt)
	w, s := ops[Write], ops[Fsync]
	t.Logf("write: %d calls, %.6f s; fsync: %d calls, %.6f s", w.Histogram.Count, w.Histogram.Sum, s.Histogram.Count, s.Histogram.Sum)
	require.Equal(t, uint64(writes), w.Histogram.Count)
	require.Equal(t, uint64(writes*size), w.Bytes)
	require.Zero(t, w.Pages)
	require.Equal(t, uint64(2), s.Histogram.Count)
	require.Positive(t, s.Histogram.Sum)
	require.NotContains(t, ops, Read)
}

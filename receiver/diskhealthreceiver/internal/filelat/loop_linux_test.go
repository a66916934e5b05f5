//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelat

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
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

// A data loader in a cgroup of its own reads a 1 GiB file twice on an ext4 whose disk takes a known
// time per request: fio, 128 KiB pread calls with readahead off (POSIX_FADV_RANDOM, as a loader reading
// samples in random order gets), so that each call of the first pass, after the file's pages were
// dropped, misses the page cache and waits for its own request to the disk, and each call of the second
// is served from memory. The probe must count fio's own calls and bytes in fio's cgroup, see the misses
// and the hits, put every cold call at the disk's speed or slower and the warm median far below it, and
// time each call within what fio measured around it; and its p50 and p99 of each pass must be within one
// log2 bucket of bpftrace's on the same calls (issue 35's peer).
func TestColdAndWarmReadsOnLoopExt4(t *testing.T) {
	requireRoot(t)
	h, err := cgroupio.Detect("/sys/fs/cgroup")
	if err != nil {
		testkit.Unavailable(t, "no io/blkio cgroup hierarchy: %v", err)
	}
	tools := testkit.Debian.Tools(t, map[string]string{"fio": "fio", "bpftrace": "bpftrace", "unshare": "util-linux"})
	// The disk's time per read request; a call is one request (FUSE's 128 KiB). A page-cache copy of
	// 128 KiB takes microseconds (~15 µs measured): the passes are apart by two orders of magnitude.
	const size, chunk, disk = 1 << 30, 128 << 10, time.Millisecond
	mnt := testkit.Ext4OnDelayDisk(t, testkit.DelayDisk{Size: size + 128<<20, Fixed: disk, FastWrites: true})
	path := filepath.Join(mnt, "data")
	writeFile(t, path, size)
	loader := testkit.ChildCgroup(t, h.Dir, "loader")
	m := mountOf(t, mnt)
	dev := uint64(m.Major)<<20 | uint64(m.Minor)

	p, err := Open(roomy(Options{PerCgroup: true}))
	require.NoError(t, err)
	defer p.Close()

	var passes [2]passStats
	for i, name := range []string{"cold", "warm"} {
		// The peer on the same run: bpftrace on every process's reads of this ext4 (its device), which
		// only fio reads.
		peer := startPeer(t, tools["bpftrace"], tools["unshare"], 0, dev)
		before, cgBefore := mountSeries(t, p, mnt), cgroupSeries(t, p, h, loader, mnt)
		run := fioRead(t, tools["fio"], loader, path, chunk)
		d, cg := delta(before, mountSeries(t, p, mnt)), delta(cgBefore, cgroupSeries(t, p, h, loader, mnt))
		theirs := peer.stop(t)
		passes[i] = d
		t.Logf("%s: %d calls (fio), %d (probe), %d (probe, fio's cgroup); %.3f s in calls (fio), %.3f s (probe); pages %d: hits %d, misses %d; p50 ≥ %v (fio %v), p99 ≥ %v (fio %v)",
			name, run.calls, d.count, cg.count, run.inCalls.Seconds(), d.sum, d.pages, d.hits, d.misses,
			d.quantile(0.5), run.p50, d.quantile(0.99), run.p99)
		require.InDelta(t, float64(run.calls), float64(cg.count), float64(run.calls)/100, "%s: calls in fio's cgroup", name)
		require.Equal(t, d.count, cg.count, "%s: the mount's calls are fio's", name)
		require.Equal(t, uint64(size), cg.bytes, "%s: bytes", name)
		require.Equal(t, uint64(size/os.Getpagesize()), cg.pages, "%s: pages", name)
		// The probe's interval lies inside fio's (its clock is read before and after each pread), so its
		// time and its quantiles are at most fio's; fio's mean is rounded, hence the 1 %.
		require.LessOrEqual(t, d.sum, 1.01*run.inCalls.Seconds(), "%s: probe time within fio's", name)
		require.LessOrEqual(t, d.quantile(0.5), run.p50, "%s: p50 within fio's", name)
		require.LessOrEqual(t, d.quantile(0.99), run.p99, "%s: p99 within fio's", name)
		require.Equal(t, d.count, theirs.count(), "%s: bpftrace counts the same calls", name)
		agreeWithPeer(t, name+": ", d, theirs)
	}
	cold, warm := passes[0], passes[1]
	require.GreaterOrEqual(t, float64(cold.misses), 0.95*float64(cold.pages), "cold: miss ratio")
	require.GreaterOrEqual(t, float64(warm.hits), 0.95*float64(warm.pages), "warm: hit ratio")
	// Device speed: a cold call waits for at least one request, so no more than a stray 1 % of them
	// falls below the bucket that holds the disk's time. Memory speed: the warm median is below it.
	diskBucket := time.Duration(float64(disk) * math.Exp2(-1.0/(1<<biolat.Scale)))
	require.GreaterOrEqual(t, cold.quantile(0.01), diskBucket, "cold: every call waits for the disk")
	require.Less(t, warm.quantile(0.5), diskBucket/10, "warm: median at memory speed")
}

// fioRun is what fio measured of its own reads.
type fioRun struct {
	calls    uint64
	inCalls  time.Duration
	p50, p99 time.Duration
}

// fioRead runs fio in cgroup dir reading path once from start to end in chunk-sized pread calls with
// readahead off, and returns fio's own count and latencies of them (its completion latency: for a
// synchronous engine, the time around the call).
func fioRead(t *testing.T, fio, dir, path string, chunk int) fioRun {
	t.Helper()
	out, err := testkit.CgroupCommand(dir, fio, "--name=loader", "--filename="+path, "--rw=read",
		"--bs="+strconv.Itoa(chunk), "--ioengine=psync", "--fadvise_hint=random", "--invalidate=0",
		"--percentile_list=50:99", "--output-format=json").Output()
	require.NoError(t, err, "%s", out)
	var r struct {
		Jobs []struct {
			Read struct {
				TotalIOs uint64 `json:"total_ios"`
				ClatNs   struct {
					Mean       float64            `json:"mean"`
					Percentile map[string]float64 `json:"percentile"`
				} `json:"clat_ns"`
			} `json:"read"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal(out, &r), "%s", out)
	require.Len(t, r.Jobs, 1)
	rd := r.Jobs[0].Read
	return fioRun{
		calls:   rd.TotalIOs,
		inCalls: time.Duration(rd.ClatNs.Mean * float64(rd.TotalIOs)),
		p50:     time.Duration(rd.ClatNs.Percentile["50.000000"]),
		p99:     time.Duration(rd.ClatNs.Percentile["99.000000"]),
	}
}

// cgroupSeries is the read series of cgroup dir (a child of h.Dir) on the mount at mnt.
func cgroupSeries(t *testing.T, p *Probe, h cgroupio.Hierarchy, dir, mnt string) Series {
	t.Helper()
	s, err := p.Collect()
	require.NoError(t, err)
	ids, err := cgroupio.IDs(h.Dir)
	require.NoError(t, err)
	mountID := uint32(mountOf(t, mnt).ID)
	for _, c := range s.Cgroups {
		if c.MountID == mountID && c.Op == Read && ids[c.CgroupID] == "/"+filepath.Base(dir) {
			return c.Series
		}
	}
	return Series{MountID: mountID, Op: Read}
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
	p, err := Open(roomy(Options{}))
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

//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelat

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
)

// peerReadLatency is the peer: bpftrace timing the same calls the probe times, from the same points.
// The probe's hooks are the raw sys_enter/sys_exit tracepoints; the syscalls:sys_enter_*/sys_exit_*
// tracepoints bpftrace attaches to are the kernel's per-syscall events fed from those same two
// tracepoints (they are not separate points in the syscall path), so both clocks start and stop at the
// same instants of the same calls, a program's run apart. The calls are the ones the probe counts as
// reads (read, pread64, readv, preadv, preadv2) by the test's process ($1, a tgid: every thread of the
// Go test binary; 0: any process) on a regular file whose superblock's device is the mount's ($2, the kernel's dev_t,
// major<<20|minor). The probe keys by mount ID instead; the test's FUSE mount is the only mount of its
// superblock, so the two select the same calls. hist() is bpftrace's: log2 buckets of nanoseconds.
// BEGIN fires once every other probe is attached, so "ready" means the peer sees the next call.
const peerReadLatency = `
BEGIN { printf("ready\n"); }
tracepoint:syscalls:sys_enter_read, tracepoint:syscalls:sys_enter_pread64,
tracepoint:syscalls:sys_enter_readv, tracepoint:syscalls:sys_enter_preadv,
tracepoint:syscalls:sys_enter_preadv2
/$1 == 0 || pid == $1/
{
	$f = *(curtask->files->fdt->fd + args->fd);
	if (($f->f_inode->i_mode & 0170000) == 0100000 && $f->f_inode->i_sb->s_dev == $2) {
		@start[tid] = nsecs;
	}
}
tracepoint:syscalls:sys_exit_read, tracepoint:syscalls:sys_exit_pread64,
tracepoint:syscalls:sys_exit_readv, tracepoint:syscalls:sys_exit_preadv,
tracepoint:syscalls:sys_exit_preadv2
/@start[tid]/
{
	@ns = hist(nsecs - @start[tid]);
	delete(@start[tid]);
}
`

// Against a peer (issue 35): on the same reads, the mount's read p50 and p99 in the probe's histogram
// (biolat's buckets, base 2^(1/8) seconds) are within one bucket of bpftrace's (log2 nanoseconds) for the
// same calls: our quantile's bucket overlaps the peer's quantile bucket or one next to it. The reads are
// on a FUSE file whose daemon (testkit.DelayDisk, direct I/O: each read one request) takes a known time,
// Fixed plus PerMiB per MiB, so the distribution is the daemon's and not the machine's load: 95 reads of
// 4 KiB (≈ 27 ms) and 5 of 128 KiB (≈ 100 ms), both mid-way through a log2 bucket ([16.8, 33.6) ms and
// [67.1, 134.2) ms), so that p50 is a short read and p99 a long one in both tools.
func TestReadQuantilesAgreeWithBpftrace(t *testing.T) {
	requireRoot(t)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testkit.Unavailable(t, "no FUSE here: %v", err)
	}
	tools := testkit.Debian.Tools(t, map[string]string{"bpftrace": "bpftrace", "unshare": "util-linux"})

	const fixed, perMiB = 25 * time.Millisecond, 600 * time.Millisecond
	const short, long, reads, longEvery = 4 << 10, 128 << 10, 100, 20
	sizes := make([]int, reads)
	var size int64
	for i := range sizes {
		sizes[i] = short
		if i%longEvery == longEvery-1 {
			sizes[i] = long
		}
		size += int64(sizes[i])
	}
	path := testkit.DelayDisk{Size: size, Fixed: fixed, PerMiB: perMiB}.Serve(t, t.TempDir())
	mnt := mountOf(t, path)
	require.Zero(t, mnt.Major, "a FUSE mount: the daemon's delay, not a disk's")

	p, err := Open(roomy(Options{}))
	require.NoError(t, err)
	defer p.Close()
	peer := startPeer(t, tools["bpftrace"], tools["unshare"], os.Getpid(), uint64(mnt.Major)<<20|uint64(mnt.Minor))

	before := mountSeries(t, p, mnt.MountPoint)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, long)
	for i, n := range sizes {
		got, err := f.Read(buf[:n])
		require.NoError(t, err, "read %d", i)
		require.Equal(t, n, got, "read %d", i)
	}
	ours := delta(before, mountSeries(t, p, mnt.MountPoint))
	theirs := peer.stop(t)

	t.Logf("probe (scale %d, s): %d calls, mean %v: %s", biolat.Scale, ours.count,
		time.Duration(ours.sum/float64(ours.count)*1e9), ours.histogram())
	t.Logf("bpftrace (log2, ns): %d calls: %s", theirs.count(), theirs)
	require.Equal(t, uint64(reads), ours.count, "probe: the reader's calls")
	require.Equal(t, uint64(reads), theirs.count(), "bpftrace: the reader's calls")

	p50, p99 := agreeWithPeer(t, "", ours, theirs)
	// The long reads are the tail in the peer's view too, so p99 compares a different bucket from p50.
	require.Greater(t, p99.lo, p50.lo, "bpftrace: p99 is a 128 KiB read, p50 a 4 KiB one")
}

// agreeWithPeer requires the probe's p50 and p99 of a pass within one log2 bucket of the peer's, on the
// same calls, and returns the peer's p50 and p99 buckets.
func agreeWithPeer(t *testing.T, pass string, ours passStats, theirs log2Hist) (p50, p99 log2Bucket) {
	t.Helper()
	var peerBuckets []log2Bucket
	for _, q := range []float64{0.5, 0.99} {
		lo := ours.quantile(q)
		hi := time.Duration(float64(lo) * math.Exp2(1.0/(1<<biolat.Scale)))
		pb := theirs.quantile(q)
		peerBuckets = append(peerBuckets, pb)
		t.Logf("%sp%g: probe [%v, %v), bpftrace %s", pass, q*100, lo, hi, pb)
		// Within one log2 bucket: [lo, hi) meets [pb.lo/2, 2·pb.hi), the peer's bucket and its neighbours.
		// Our bucket edges are powers of 2^(1/8) s, the peer's powers of 2 ns, so ours may straddle the
		// peer's edge; "overlap or adjacent" then holds for a call the two tools put a few µs apart.
		require.Less(t, lo, 2*pb.hi, "%sp%g: probe's bucket more than one log2 bucket above bpftrace's", pass, q*100)
		require.Greater(t, hi, pb.lo/2, "%sp%g: probe's bucket more than one log2 bucket below bpftrace's", pass, q*100)
	}
	return peerBuckets[0], peerBuckets[1]
}

// peerRun is a bpftrace running peerReadLatency, its JSON lines (-f json) read as they come.
type peerRun struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr strings.Builder
}

// startPeer starts bpftrace on the reads of pid on the device dev and returns once it sees them. It
// runs in a mount namespace of its own with tracefs mounted there (bpftrace reads the tracepoints'
// formats from it, and the host need not have it mounted), as biolat's benchmark runs its peer: the
// host's mount table is left alone. The namespace changes no pid, and the peer filters on the device,
// not on a path, so it sees the test's calls as the probe does.
func startPeer(t *testing.T, bpftrace, unshare string, pid int, dev uint64) *peerRun {
	t.Helper()
	r := &peerRun{lines: make(chan string, 64)}
	r.cmd = exec.Command(unshare, "-m", "sh", "-c", `mount -t tracefs tracefs /sys/kernel/tracing && exec "$0" "$@"`,
		bpftrace, "-f", "json", "-e", peerReadLatency, strconv.Itoa(pid), strconv.FormatUint(dev, 10))
	r.cmd.Stderr = &r.stderr
	out, err := r.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, r.cmd.Start())
	go func() {
		defer close(r.lines)
		s := bufio.NewScanner(out)
		s.Buffer(make([]byte, 1<<16), 1<<20)
		for s.Scan() {
			r.lines <- s.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		// A test that failed before stop: the peer must not outlive it.
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			for range r.lines {
			}
			_ = r.cmd.Wait()
		}
	})
	// Compiling against the kernel's BTF takes seconds on a busy machine.
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				err := r.cmd.Wait()
				testkit.Unavailable(t, "bpftrace did not attach on this kernel: %v: %s", err, r.stderr.String())
			}
			var m struct{ Type, Data json.RawMessage }
			if json.Unmarshal([]byte(line), &m) == nil && string(m.Type) == `"printf"` && string(m.Data) == `"ready\n"` {
				return r
			}
		case <-timeout:
			t.Fatalf("bpftrace not ready in 2 minutes: %s", r.stderr.String())
		}
	}
}

// stop ends bpftrace with SIGINT, on which it prints its maps, and returns its histogram.
func (r *peerRun) stop(t *testing.T) log2Hist {
	t.Helper()
	require.NoError(t, r.cmd.Process.Signal(os.Interrupt))
	var h log2Hist
	found := false
	for line := range r.lines {
		var m struct {
			Type string
			Data map[string][]struct{ Min, Max, Count int64 }
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.Type != "hist" {
			continue
		}
		for _, b := range m.Data["@ns"] {
			h = append(h, log2Bucket{lo: time.Duration(b.Min), hi: time.Duration(b.Max + 1), n: uint64(b.Count)})
		}
		found = true
	}
	require.NoError(t, r.cmd.Wait(), "bpftrace: %s", r.stderr.String())
	require.True(t, found, "bpftrace printed no @ns histogram: %s", r.stderr.String())
	slices.SortFunc(h, func(a, b log2Bucket) int { return int(a.lo - b.lo) })
	return h
}

// log2Bucket is one of bpftrace's hist() buckets: [lo, hi) ns, n calls.
type log2Bucket struct {
	lo, hi time.Duration
	n      uint64
}

func (b log2Bucket) String() string { return fmt.Sprintf("[%v, %v)", b.lo, b.hi) }

// log2Hist is bpftrace's histogram, its non-empty buckets in ascending order.
type log2Hist []log2Bucket

func (h log2Hist) count() uint64 {
	var n uint64
	for _, b := range h {
		n += b.n
	}
	return n
}

// quantile is the bucket holding the q-quantile, ranked as testkit.QuantileLowerBound ranks ours.
func (h log2Hist) quantile(q float64) log2Bucket {
	rank := uint64(math.Ceil(q * float64(h.count())))
	var seen uint64
	for _, b := range h {
		seen += b.n
		if seen >= rank && b.n > 0 {
			return b
		}
	}
	return log2Bucket{lo: math.MaxInt64, hi: math.MaxInt64}
}

func (h log2Hist) String() string {
	parts := make([]string, len(h))
	for i, b := range h {
		parts[i] = fmt.Sprintf("%s %d", b, b.n)
	}
	return strings.Join(parts, ", ")
}

// histogram is the pass's non-empty buckets of the probe as [lower, upper) count, ascending.
func (d passStats) histogram() string {
	idx := make([]int32, 0, len(d.buckets))
	for i, n := range d.buckets {
		if n > 0 {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	parts := make([]string, len(idx))
	for k, i := range idx {
		if i == math.MinInt32 {
			parts[k] = fmt.Sprintf("zero %d", d.buckets[i])
			continue
		}
		bound := func(j int32) time.Duration {
			return time.Duration(math.Exp2(float64(j)/(1<<biolat.Scale)) * 1e9).Round(10 * time.Microsecond)
		}
		parts[k] = fmt.Sprintf("[%v, %v) %d", bound(i), bound(i+1), d.buckets[i])
	}
	return strings.Join(parts, ", ")
}

//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelat

import (
	"fmt"
	"math"
	"os"
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

// A FUSE filesystem whose daemon takes a known time per read (testkit.DelayDisk, direct I/O: every
// read(2) is one request to the daemon, no page cache, no readahead): the mount's read median is that
// time, within 10 %. The block layer never sees these reads: a FUSE mount has an anonymous device
// number (major 0) with no block device behind it, so the latency source's histograms, keyed by block
// device, have nothing for it however slow its reads are. The same holds per pod: a reader in a cgroup of
// its own gets its calls, and that median, in its cgroup's series on the mount.
func TestFUSEReadsTakeTheDaemonsTime(t *testing.T) {
	requireRoot(t)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testkit.Unavailable(t, "no FUSE here: %v", err)
	}
	const delay, reads, chunk = 50 * time.Millisecond, 40, 4096
	path := testkit.DelayDisk{Size: reads * chunk, Fixed: delay}.Serve(t, t.TempDir())
	mnt := mountOf(t, path)
	require.Equal(t, "fuse.testkitdelay", mnt.FSType)
	require.Zero(t, mnt.Major, "a FUSE mount's device is anonymous")
	_, err := os.Stat(fmt.Sprintf("/sys/dev/block/%d:%d", mnt.Major, mnt.Minor))
	require.ErrorIs(t, err, os.ErrNotExist, "no block device behind a FUSE mount")

	h, err := cgroupio.Detect("/sys/fs/cgroup")
	if err != nil {
		testkit.Unavailable(t, "no io/blkio cgroup hierarchy: %v", err)
	}
	dd := testkit.Tool(t, "dd", "coreutils")
	pod := testkit.ChildCgroup(t, h.Dir, "fuse-reader")

	p, err := Open(roomy(Options{PerCgroup: true}))
	require.NoError(t, err)
	defer p.Close()
	blk, err := biolat.Open(biolat.Options{})
	require.NoError(t, err)
	defer blk.Close()

	before := mountSeries(t, p, mnt.MountPoint)
	calls, inCalls := readPass(t, path, chunk)
	d := delta(before, mountSeries(t, p, mnt.MountPoint))
	p50 := d.quantile(0.5)
	t.Logf("FUSE, daemon delay %v: %d calls (reader), %d (probe); mean %v (probe), %v (reader); p50 bucket [%v, %v)",
		delay, calls, d.count, time.Duration(d.sum/float64(d.count)*1e9), inCalls/time.Duration(calls),
		p50, time.Duration(float64(p50)*math.Exp2(1.0/(1<<biolat.Scale))))
	require.Equal(t, calls, d.count, "calls")
	require.Equal(t, uint64(reads*chunk), d.bytes, "bytes")
	// Every call is a request the daemon delays, the last one (EOF) too, so none is shorter. p50 is the
	// lower bound of its bucket (scale 3: 9 % wide; 50 ms is in [48.2, 52.6) ms), so the median may be up
	// to 57.3 ms: 7.3 ms for the FUSE round trip and a busy machine (the mean, which a few slow calls
	// move, was measured 15 % above a 20 ms delay while other tests ran).
	require.InEpsilon(t, float64(delay), float64(p50), 0.10, "p50 within 10 %% of the daemon's delay")
	require.GreaterOrEqual(t, d.sum/float64(d.count), delay.Seconds(), "no call shorter than the daemon's delay")

	// Per pod: a reader in a cgroup of its own (dd, as a pod's container would) reads the file again, its
	// calls charged to its cgroup on that mount with the same median.
	out, err := testkit.CgroupCommand(pod, dd, "if="+path, "of=/dev/null", "bs="+strconv.Itoa(chunk), "count="+strconv.Itoa(reads)).CombinedOutput()
	require.NoError(t, err, "%s", out)
	pd := delta(Series{}, cgroupSeries(t, p, h, pod, mnt.MountPoint))
	t.Logf("FUSE, the reader's cgroup: %d calls, p50 bucket from %v", pd.count, pd.quantile(0.5))
	require.Equal(t, uint64(reads), pd.count, "the pod's calls: dd's, count=%d", reads)
	require.Equal(t, uint64(reads*chunk), pd.bytes, "the pod's bytes")
	require.InEpsilon(t, float64(delay), float64(pd.quantile(0.5)), 0.10, "the pod's p50 within 10 %% of the daemon's delay")

	bs, err := blk.Collect()
	require.NoError(t, err)
	for _, s := range bs.Series {
		require.NotEqual(t, biolat.Dev{Major: mnt.Major, Minor: mnt.Minor}, s.Dev, "block histograms of a FUSE mount")
	}
}

// mountOf is the mount that holds path, from /proc/self/mountinfo.
func mountOf(t *testing.T, path string) fsusage.Mount {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(path, &st))
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	mounts, err := fsusage.ParseMountInfo(b)
	require.NoError(t, err)
	for _, m := range mounts {
		if m.Major == unix.Major(st.Dev) && m.Minor == unix.Minor(st.Dev) {
			return m
		}
	}
	t.Fatalf("no mount of %s (dev %d:%d)", path, unix.Major(st.Dev), unix.Minor(st.Dev))
	return fsusage.Mount{}
}

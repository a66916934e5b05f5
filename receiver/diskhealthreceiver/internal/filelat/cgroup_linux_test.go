//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelat

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
)

// A reader in a cgroup of its own (dd in a child of the io/blkio hierarchy) and the test process in
// its cgroup read the same file: each call is charged to the cgroup of the task that made it, under
// the id cgroupio.IDs maps to that cgroup's path (the resolution biolat's per-cgroup probe uses), and
// the cgroups' series add up to the mount's.
func TestReadsChargedToTheCallersCgroup(t *testing.T) {
	requireRoot(t)
	h, err := cgroupio.Detect("/sys/fs/cgroup")
	if err != nil {
		testkit.Unavailable(t, "no io/blkio cgroup hierarchy: %v", err)
	}
	dd := testkit.Tool(t, "dd", "coreutils")
	const ddReads, ownReads, chunk = 100, 10, 4096
	mnt := testkit.Ext4OnLoop(t, 64<<20)
	path := filepath.Join(mnt, "data")
	writeFile(t, path, 1<<20)
	child := testkit.ChildCgroup(t, h.Dir, "reader")

	p, err := Open(roomy(Options{PerCgroup: true}))
	require.NoError(t, err)
	defer p.Close()

	out, err := testkit.CgroupCommand(child, dd, "if="+path, "of=/dev/null", "bs="+strconv.Itoa(chunk), "count="+strconv.Itoa(ddReads)).CombinedOutput()
	require.NoError(t, err, "%s", out)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, chunk)
	for i := range ownReads {
		_, err := unix.Pread(int(f.Fd()), buf, int64(i*chunk))
		require.NoError(t, err)
	}

	s, err := p.Collect()
	require.NoError(t, err)
	ids, err := cgroupio.IDs(h.Dir)
	require.NoError(t, err)
	mountID := uint32(mountOf(t, path).ID)
	reads := map[string]CgroupSeries{} // by cgroup path
	var total Series
	for _, c := range s.Series {
		if c.MountID == mountID && c.Op == Read {
			total = c
		}
	}
	var sum uint64
	for _, c := range s.Cgroups {
		if c.MountID != mountID {
			continue
		}
		require.Equal(t, Read, c.Op, "only reads on the mount")
		cgPath, ok := ids[c.CgroupID]
		require.True(t, ok, "cgroup id %d resolves to a path of %s", c.CgroupID, h.Dir)
		reads[cgPath] = c
		sum += c.Histogram.Count
		t.Logf("cgroup %d %s: %d reads, %d bytes, %.6f s", c.CgroupID, cgPath, c.Histogram.Count, c.Bytes, c.Histogram.Sum)
	}
	own := ownCgroup(t, h)
	require.Len(t, reads, 2, "dd's cgroup and the test's: %v", slices.Collect(maps.Keys(reads)))
	ddSeries := reads["/"+filepath.Base(child)]
	require.Equal(t, uint64(ddReads), ddSeries.Histogram.Count, "dd's reads in its cgroup")
	require.Equal(t, uint64(ddReads*chunk), ddSeries.Bytes)
	require.Equal(t, uint64(ownReads), reads[own].Histogram.Count, "the test's reads in its cgroup %s", own)
	require.Equal(t, total.Histogram.Count, sum, "the cgroups' reads are the mount's")

	// A removed cgroup's series go, the mount's stay; an unmounted mount's go from every cgroup.
	require.NoError(t, p.ForgetCgroups(ddSeries.CgroupID))
	left := func() (cgroups []uint64) {
		s, err := p.Collect()
		require.NoError(t, err)
		for _, c := range s.Cgroups {
			if c.MountID == mountID {
				cgroups = append(cgroups, c.CgroupID)
			}
		}
		return cgroups
	}
	require.Equal(t, []uint64{reads[own].CgroupID}, left())
	require.Equal(t, total, mountSeries(t, p, mnt))
	require.NoError(t, p.Forget(mountID))
	require.Empty(t, left())
}

// ownCgroup is this process's cgroup in hierarchy h, from /proc/self/cgroup.
func ownCgroup(t *testing.T, h cgroupio.Hierarchy) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		fields := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(fields) != 3 {
			continue
		}
		if h.Version == cgroupio.V2 && fields[0] == "0" || h.Version == cgroupio.V1 && slices.Contains(strings.Split(fields[1], ","), "blkio") {
			return fields[2]
		}
	}
	t.Fatalf("no %v cgroup in /proc/self/cgroup:\n%s", h.Version, b)
	return ""
}

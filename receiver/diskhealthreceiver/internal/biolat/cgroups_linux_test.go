//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package biolat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
)

// blkioHierarchy is the host's v1 blkio hierarchy, or a skip (outside CI) where there is none: these
// tests create child cgroups in it and never remount or rebind the host's cgroups.
func blkioHierarchy(t testing.TB) string {
	t.Helper()
	h, err := cgroupio.Detect("/sys/fs/cgroup")
	if err != nil || h.Version != cgroupio.V1 {
		testkit.Unavailable(t, "needs a cgroup v1 blkio hierarchy (this host: %+v, %v)", h, err)
	}
	return h.Dir
}

// inCgroup runs argv in cgroup dir (the shell joins it, then execs) and returns its stdout.
func inCgroup(dir string, argv ...string) ([]byte, error) {
	return testkit.CgroupCommand(dir, argv...).Output()
}

// servicedOps is a cgroup's v1 blkio.throttle.io_serviced (its own I/O, not its children's) for one device.
func servicedOps(t *testing.T, cg string, d Dev) [2]uint64 {
	t.Helper()
	ops, err := os.ReadFile(filepath.Join(cg, "blkio.throttle.io_serviced"))
	require.NoError(t, err)
	stats, err := cgroupio.ParseBlkio(nil, ops, nil)
	require.NoError(t, err)
	for _, s := range stats {
		if s.Major == d.Major && s.Minor == d.Minor {
			return [2]uint64{s.ReadOps, s.WriteOps}
		}
	}
	return [2]uint64{}
}

// cgroupCounts is the probe's completions per cgroup path and direction on d, and on d in Other.
func cgroupCounts(t *testing.T, p *CgroupProbe, dir string, d Dev) (map[string][2]uint64, [2]uint64, CgroupSnapshot) {
	t.Helper()
	s, err := p.Collect(func() (map[uint64]string, error) { return cgroupio.IDs(dir) })
	require.NoError(t, err)
	out := map[string][2]uint64{}
	for _, x := range s.Cgroups {
		if x.Dev == d && x.Direction <= Write {
			c := out[x.Path]
			c[x.Direction] = x.Histogram.Count
			out[x.Path] = c
		}
	}
	var other [2]uint64
	for _, x := range s.Other {
		if x.Dev == d && x.Direction <= Write {
			other[x.Direction] = x.Histogram.Count
		}
	}
	return out, other, s
}

// Two child blkio cgroups run fixed-size direct-I/O fio jobs on one loop device at the same time: A
// random reads and writes, B random writes. Each cgroup's histograms count exactly its own requests:
// what its blkio.throttle.io_serviced counted for the device and what fio did; nothing lands in
// Other; and bytes are fio's. Then the cgroups are removed: from the next collection on their counts
// are in Other and no series names them; the one after frees their entries, Other unchanged.
func TestCgroupsAgreeWithBlkioServiced(t *testing.T) {
	requireRoot(t)
	fio := requireTool(t, "fio", "fio")
	hier := blkioHierarchy(t)
	name, dev := loopDevice(t, 64<<20)

	p, err := OpenCgroups(CgroupOptions{})
	require.NoError(t, err)
	defer p.Close()
	require.Equal(t, "block_io_done", p.Hook())

	a, b := testkit.ChildCgroup(t, hier, "a"), testkit.ChildCgroup(t, hier, "b")
	rel := func(cg string) string { return "/" + filepath.Base(cg) }
	common := []string{fio, "--output-format=json", "--filename=/dev/" + name, "--ioengine=psync", "--direct=1",
		"--bs=4k", "--randrepeat=1", "--clocksource=clock_gettime"}
	jobs := map[string][]string{
		a: {"--name=a", "--rw=randrw", "--rwmixread=60", "--size=16M"},
		b: {"--name=b", "--rw=randwrite", "--size=8M", "--offset=32M"},
	}
	// blkio.throttle.io_serviced counts only on a queue where throttling is active (blk_should_throtl):
	// a limit no job comes near, on the test's own cgroups, turns it on.
	for _, cg := range []string{a, b} {
		for _, f := range []string{"blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"} {
			require.NoError(t, os.WriteFile(filepath.Join(cg, f), []byte(dev.String()+" 100000000"), 0o644))
		}
	}
	s0 := map[string][2]uint64{a: servicedOps(t, a, dev), b: servicedOps(t, b, dev)}
	h0, other0, _ := cgroupCounts(t, p, hier, dev)
	require.Empty(t, h0[rel(a)])

	fioOps := map[string][2]uint64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for cg, job := range jobs {
		wg.Go(func() {
			out, err := inCgroup(cg, append(common, job...)...)
			var report struct{ Jobs []fioJob }
			if err == nil {
				err = json.Unmarshal(out[bytes.IndexByte(out, '{'):], &report)
			}
			mu.Lock()
			defer mu.Unlock()
			if !assertNoError(t, err, cg, out) || len(report.Jobs) != 1 {
				return
			}
			fioOps[cg] = [2]uint64{report.Jobs[0].Read.TotalIOs, report.Jobs[0].Write.TotalIOs}
		})
	}
	wg.Wait()
	require.Len(t, fioOps, 2)

	// As in the per-device test, the last completions can be accounted just after fio returns.
	var h1 map[string][2]uint64
	var other1 [2]uint64
	var snap CgroupSnapshot
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		h1, other1, snap = cgroupCounts(t, p, hier, dev)
		if (h1[rel(a)] == fioOps[a] && h1[rel(b)] == fioOps[b]) || time.Now().After(deadline) {
			break
		}
	}
	for _, cg := range []string{a, b} {
		s1 := servicedOps(t, cg, dev)
		for dir := range 2 {
			served := s1[dir] - s0[cg][dir]
			got := h1[rel(cg)][dir]
			t.Logf("cgroup %s %-5s fio %5d  io_serviced %5d  histogram %5d", rel(cg), Direction(dir), fioOps[cg][dir], served, got)
			require.Equal(t, fioOps[cg][dir], served, "%s %s: io_serviced vs fio", cg, Direction(dir))
			require.InDelta(t, float64(served), float64(got), float64(served)/100, "%s %s: histogram vs io_serviced", cg, Direction(dir))
		}
	}
	require.Equal(t, other0, other1, "no completion of the device without its owner: counts %+v", snap.Counts)
	for _, x := range snap.Cgroups {
		if x.Dev == dev && x.Path == rel(b) && x.Direction == Write {
			requireCounted(t, 4096*fioOps[b][1], x.Bytes, 4096*testkit.UncountedCompletions(fioOps[b][1]), "b's bytes")
			require.Positive(t, x.Histogram.Sum)
		}
	}

	// The cgroups go: their entries are freed into Other at the next collection, counts kept.
	var idA uint64
	for _, x := range snap.Cgroups {
		if x.Path == rel(a) {
			idA = x.CgroupID
		}
	}
	require.NotZero(t, idA)
	for _, cg := range []string{a, b} {
		require.NoError(t, os.Remove(cg))
	}
	h2, other2, snap2 := cgroupCounts(t, p, hier, dev)
	require.Empty(t, h2[rel(a)])
	require.Empty(t, h2[rel(b)])
	require.Zero(t, snap2.Counts.Freed, "freed at the next collection")
	// What the cgroups held, not what fio did: a completion the probe missed (above) was never theirs.
	for dir := range 2 {
		require.Equal(t, other1[dir]+h1[rel(a)][dir]+h1[rel(b)][dir], other2[dir], "%s: Other took the removed cgroups' counts", Direction(dir))
	}
	for _, x := range snap2.Cgroups {
		require.NotEqual(t, idA, x.CgroupID)
		require.NotEmpty(t, x.Path)
	}
	_, other3, snap3 := cgroupCounts(t, p, hier, dev)
	require.Equal(t, other2, other3, "Other is cumulative after the free")
	require.GreaterOrEqual(t, snap3.Counts.Freed, uint64(3))
	_, other4, snap4 := cgroupCounts(t, p, hier, dev)
	require.Equal(t, other2, other4)
	require.Zero(t, snap4.Counts.Freed)
}

// requireCounted requires got to be want, or short of it by at most slack, never more: the completions
// the probes may miss with nothing to show for it (testkit.UncountedCompletions; one of 1 054 here once),
// and for bytes also a bio merged into a request after its start (docs/block-latency.md).
func requireCounted(t *testing.T, want, got, slack uint64, msg string) {
	t.Helper()
	require.LessOrEqual(t, got, want, msg)
	require.LessOrEqual(t, want-got, slack, msg)
}

func assertNoError(t *testing.T, err error, cg string, out []byte) bool {
	t.Helper()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = strings.TrimSpace(string(ee.Stderr))
		}
		t.Errorf("fio in %s: %v: %s %s", cg, err, out, stderr)
		return false
	}
	return true
}

// stackedLoop attaches a loop device with direct I/O over the block device below (a loop device
// too) and returns its name and number: its requests are served by the loop driver's worker thread,
// which submits the I/O to below on behalf of the requests' cgroup.
func stackedLoop(t *testing.T, below string) (string, Dev) {
	t.Helper()
	losetup := requireTool(t, "mount", "losetup")
	out, err := exec.Command(losetup, "--direct-io=on", "--find", "--show", "/dev/"+below).CombinedOutput()
	require.NoError(t, err, "%s", out)
	path := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command(losetup, "-d", path).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", path, err, out)
		}
	})
	var d Dev
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(path), "dev"))
	require.NoError(t, err)
	_, err = fmt.Sscanf(strings.TrimSpace(string(b)), "%d:%d", &d.Major, &d.Minor)
	require.NoError(t, err)
	return filepath.Base(path), d
}

// Where attribution to the bio's owner and attribution to the submitting task (what PID- and
// current-based tools do) differ: cgroup A writes and reads with direct I/O to a loop device stacked
// on another. On the upper device both charge A. The lower device's requests are submitted by the
// loop driver's kernel worker: the bio's owner is still A (the worker submits on A's blkcg), and its
// count is A's blkio.throttle.io_serviced on the lower device; the task is the worker, in the root
// cgroup, so the task-based probe charges none of them to A.
func TestCgroupsOwnerVersusTaskThroughLoopWorker(t *testing.T) {
	requireRoot(t)
	fio := requireTool(t, "fio", "fio")
	hier := blkioHierarchy(t)
	lower, lowerDev := loopDevice(t, 64<<20)
	upper, upperDev := stackedLoop(t, lower)

	byOwner, err := OpenCgroups(CgroupOptions{})
	require.NoError(t, err)
	defer byOwner.Close()
	byTask, err := OpenCgroups(CgroupOptions{ownerIsTask: true})
	require.NoError(t, err)
	defer byTask.Close()

	a := testkit.ChildCgroup(t, hier, "a")
	for _, d := range []Dev{upperDev, lowerDev} {
		for _, f := range []string{"blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"} {
			require.NoError(t, os.WriteFile(filepath.Join(a, f), []byte(d.String()+" 100000000"), 0o644))
		}
	}
	rel := "/" + filepath.Base(a)
	served0 := servicedOps(t, a, lowerDev)
	owner0, _, _ := cgroupCounts(t, byOwner, hier, lowerDev)
	task0, _, _ := cgroupCounts(t, byTask, hier, lowerDev)

	out, err := inCgroup(a, fio, "--output-format=json", "--name=a", "--filename=/dev/"+upper, "--ioengine=psync",
		"--direct=1", "--bs=4k", "--rw=randrw", "--rwmixread=50", "--size=8M", "--randrepeat=1")
	require.True(t, assertNoError(t, err, a, out))
	var report struct{ Jobs []fioJob }
	require.NoError(t, json.Unmarshal(out[bytes.IndexByte(out, '{'):], &report))
	require.Len(t, report.Jobs, 1)
	fioOps := [2]uint64{report.Jobs[0].Read.TotalIOs, report.Jobs[0].Write.TotalIOs}

	var owner1, task1 map[string][2]uint64
	var served1 [2]uint64
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		served1 = servicedOps(t, a, lowerDev)
		owner1, _, _ = cgroupCounts(t, byOwner, hier, lowerDev)
		task1, _, _ = cgroupCounts(t, byTask, hier, lowerDev)
		if owner1[rel][0]-owner0[rel][0] == served1[0]-served0[0] && owner1[rel][1]-owner0[rel][1] == served1[1]-served0[1] ||
			time.Now().After(deadline) {
			break
		}
	}
	upperOwner, _, _ := cgroupCounts(t, byOwner, hier, upperDev)
	upperTask, _, _ := cgroupCounts(t, byTask, hier, upperDev)
	for dir := range 2 {
		served := served1[dir] - served0[dir]
		owner := owner1[rel][dir] - owner0[rel][dir]
		task := task1[rel][dir] - task0[rel][dir]
		rootTask := task1["/"][dir] - task0["/"][dir]
		t.Logf("%-5s fio %4d | upper %s: owner %4d task %4d | lower %s: io_serviced(A) %4d owner(A) %4d task(A) %4d task(root) %4d",
			Direction(dir), fioOps[dir], upper, upperOwner[rel][dir], upperTask[rel][dir], lower, served, owner, task, rootTask)
		requireCounted(t, fioOps[dir], upperOwner[rel][dir], testkit.UncountedCompletions(fioOps[dir]), "upper, by owner")
		requireCounted(t, fioOps[dir], upperTask[rel][dir], testkit.UncountedCompletions(fioOps[dir]), "upper, by task")
		require.Positive(t, served, "A's I/O reached the lower device")
		require.InDelta(t, float64(served), float64(owner), float64(served)/100, "lower: owner vs io_serviced")
		require.Zero(t, task, "lower: the task is the loop worker, not A")
		require.GreaterOrEqual(t, rootTask+testkit.UncountedCompletions(served), served, "lower: the task-based probe charges the root cgroup")
	}
}

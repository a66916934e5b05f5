//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package biolat

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
)

// 5 000 blkio cgroups are created, each does direct I/O on a loop device, and is removed, while
// another cgroup keeps the device busy with fio, on a probe bounded to 256 cgroups. Every 500 the
// probe is read: no series has an id that is not a live cgroup, the table holds no more than its
// bound and, after the read, only live cgroups' entries (the removed ones' are freed), the Go heap
// stays flat, and no request is lost: the series and Other together count what /proc/diskstats
// counted on the device (within the per-device probe's tolerance for an uncounted completion).
func TestCgroupChurn5000(t *testing.T) {
	requireRoot(t)
	fio := requireTool(t, "fio", "fio")
	hier := blkioHierarchy(t)
	name, dev := loopDevice(t, 64<<20)
	const maxCgroups, total, every = 256, 5000, 500

	p, err := OpenCgroups(CgroupOptions{MaxCgroups: maxCgroups})
	require.NoError(t, err)
	defer p.Close()
	live := func() (map[uint64]string, error) { return cgroupio.IDs(hier) }
	d0 := diskstat(t, name)

	load := testkit.ChildCgroup(t, hier, "load")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		cmd := exec.CommandContext(ctx, "sh", "-c", `echo $$ > "$0/cgroup.procs" && shift && exec "$@"`, load, "_", fio,
			"--name=load", "--thread", "--filename=/dev/"+name, "--direct=1", "--ioengine=psync", "--rw=randread", "--bs=4k",
			"--size=16M", "--time_based", "--runtime=600s")
		done <- cmd.Run()
	}()
	stopLoad := func() {
		cancel()
		t.Logf("the load ended: %v (killed by the cancel)", <-done)
	}
	defer func() {
		if ctx.Err() == nil {
			stopLoad()
		}
	}()

	fd, err := unix.Open("/dev/"+name, unix.O_RDWR|unix.O_DIRECT, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	require.NoError(t, err)
	defer func() { _ = unix.Munmap(buf) }()

	// This goroutine's thread joins each cgroup in turn (v1 moves single threads through "tasks").
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := []byte(strconv.Itoa(unix.Gettid()))
	rootTasks := filepath.Join(hier, "tasks")
	var heap0 uint64
	for i := range total {
		cg := filepath.Join(hier, fmt.Sprintf("diskhealth-churn-%d-%d", os.Getpid(), i))
		require.NoError(t, os.Mkdir(cg, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(cg, "tasks"), tid, 0o644))
		_, err = unix.Pwrite(fd, buf, int64(i%1024)*4096)
		require.NoError(t, err)
		_, err = unix.Pread(fd, buf, int64(i%1024)*4096)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(rootTasks, tid, 0o644))
		require.NoError(t, os.Remove(cg))

		if (i+1)%every != 0 {
			continue
		}
		s, err := p.Collect(live)
		require.NoError(t, err)
		ids, err := live()
		require.NoError(t, err)
		for _, x := range s.Cgroups {
			require.Contains(t, ids, x.CgroupID, "a series of a cgroup that is gone: %+v", x)
			require.NotEmpty(t, x.Path)
		}
		require.LessOrEqual(t, len(s.Cgroups), 2*maxCgroups)
		entries := 0
		var k rawCgKey
		var v rawCgVal
		for it := p.coll.Maps[cglatMapCghists].Iterate(); it.Next(&k, &v); {
			entries++
		}
		require.LessOrEqual(t, entries, 2*maxCgroups)
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if heap0 == 0 {
			heap0 = ms.HeapAlloc
		}
		t.Logf("%4d cgroups done: %3d series, %3d table entries, Other %d series, freed %4d, table full %d, heap %.1f MiB",
			i+1, len(s.Cgroups), entries, len(s.Other), s.Counts.Freed, s.Counts.TableFull, float64(ms.HeapAlloc)/(1<<20))
		require.Less(t, ms.HeapAlloc, heap0+4<<20, "Go heap grows with churn")
	}
	stopLoad()

	// Conservation: every accounted read and write on the device is in one series.
	var sum [2]uint64
	var s CgroupSnapshot
	var d1 [2]uint64
	for range 200 {
		st := diskstat(t, name)
		d1 = [2]uint64{st.ReadIOs - d0.ReadIOs, st.WriteIOs - d0.WriteIOs}
		s, err = p.Collect(live)
		require.NoError(t, err)
		sum = [2]uint64{}
		for _, x := range append(s.Cgroups, s.Other...) {
			if x.Dev == dev && x.Direction <= Write {
				sum[x.Direction] += x.Histogram.Count
			}
		}
		if sum == d1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("device %s: diskstats reads %d writes %d; series and Other %d %d; counts %+v", name, d1[0], d1[1], sum[0], sum[1], s.Counts)
	for dir := range 2 {
		// Exact but for skipped program runs and the per-device probe's known rare uncounted
		// completion under heavy load (testkit.UncountedCompletions), which this probe shares.
		require.LessOrEqual(t, sum[dir], d1[dir], Direction(dir))
		require.LessOrEqual(t, d1[dir]-sum[dir], s.Counts.NotRun+testkit.UncountedCompletions(d1[dir]), Direction(dir))
	}
}

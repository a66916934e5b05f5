//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package biolat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// The benchmarks behind BENCHMARKS.md's "Block latency source" section (`make bench`, as root):
// the BPF run time per I/O, side by side with a bpftrace biolatency on the same I/O; fio's IOPS with
// the probe attached and not; the probe's memory per device; and reading its maps per device. The
// scrape's user-space cost per device is latencyscraper's BenchmarkLatencyScrape.

// peerBpftrace is the peer: bcc biolatency's tracepoint-only design in bpftrace (start keyed by
// dev+sector at block_io_start, a log2 histogram per device at block_io_done). It measures the same
// interval as our default path, with a hash insert and delete per I/O as our device time does.
const peerBpftrace = `tracepoint:block:block_io_start { @start[args->dev, args->sector] = nsecs; }
tracepoint:block:block_io_done /@start[args->dev, args->sector]/ {
	@usecs[args->dev] = hist((nsecs - @start[args->dev, args->sector]) / 1000);
	delete(@start[args->dev, args->sector]);
}`

// costs reads the cumulative run time of a set of BPF programs, by program name.
type costs func(b *testing.B) map[string]ProgramStats

// BenchmarkBPFRunTimePerIO reports what the attached programs cost per I/O, from the kernel's own BPF
// statistics (run_time_ns / run_cnt, the counters kernel.bpf_stats_enabled turns on; enabled here
// through BPF_ENABLE_STATS, which ends with the benchmark). Each iteration is one direct 4 KiB read
// or write on a fresh loop device. peer=bpftrace runs the peer instead of the probe, on the same
// I/O; it is skipped where bpftrace cannot be installed or the kernel has no block_io_* tracepoints.
func BenchmarkBPFRunTimePerIO(b *testing.B) {
	for _, bc := range []struct {
		name   string
		attach func(b *testing.B) costs
	}{
		{"default", probeCosts(Options{})},
		{"device_time", probeCosts(Options{DeviceTime: true})},
		{"default+per_cgroup", perCgroupCosts},
		{"peer=bpftrace", bpftraceCosts},
	} {
		b.Run(bc.name, func(b *testing.B) { benchRunTime(b, bc.attach) })
	}
}

func probeCosts(opts Options) func(b *testing.B) costs {
	return func(b *testing.B) costs {
		p, err := Open(opts)
		require.NoError(b, err)
		b.Cleanup(func() { _ = p.Close() }) // a benchmark's probe; nothing to report
		return func(b *testing.B) map[string]ProgramStats {
			st, err := p.Stats()
			require.NoError(b, err)
			out := map[string]ProgramStats{}
			for _, s := range st {
				out[s.Program] = s
			}
			return out
		}
	}
}

// perCgroupCosts attaches the default probe and the per-cgroup one: its programs' cost (cglat_*,
// summed as per-cgroup-ns/io) is what turning it on adds to the default path.
func perCgroupCosts(b *testing.B) costs {
	device := probeCosts(Options{})(b)
	p, err := OpenCgroups(CgroupOptions{})
	require.NoError(b, err)
	b.Cleanup(func() { _ = p.Close() }) // a benchmark's probe; nothing to report
	return func(b *testing.B) map[string]ProgramStats {
		out := device(b)
		st, err := p.Stats()
		require.NoError(b, err)
		for _, s := range st {
			out[s.Program] = s
		}
		return out
	}
}

// bpftraceCosts starts bpftrace with peerBpftrace in a mount namespace of its own (it needs tracefs,
// which the host need not have mounted) and finds its programs through its file descriptors.
func bpftraceCosts(b *testing.B) costs {
	bt := requireTool(b, "bpftrace", "bpftrace")
	unshare := requireTool(b, "util-linux", "unshare")
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		b.Skip("SKIPPED: no kernel BTF")
	}
	cmd := exec.Command(unshare, "-m", "sh", "-c",
		`mount -t tracefs tracefs /sys/kernel/tracing && exec "$0" -e "$1"`, bt, peerBpftrace)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT) // bpftrace prints its maps and exits
		_ = cmd.Wait()                         // its exit status says nothing about the benchmark
	})
	attached := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Attaching") {
				attached <- true
			}
		}
		close(attached)
	}()
	select {
	case ok := <-attached:
		if !ok {
			b.Skipf("SKIPPED: bpftrace did not attach (no block_io_* tracepoints before 6.5?): %s", stderr.String())
		}
	case <-time.After(time.Minute):
		b.Fatalf("bpftrace did not attach within a minute: %s", stderr.String())
	}
	var ids []ebpf.ProgramID
	for deadline := time.Now().Add(10 * time.Second); len(ids) < 2 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ids = progIDs(cmd.Process.Pid)
	}
	require.Len(b, ids, 2, "bpftrace's programs (fds of pid %d)", cmd.Process.Pid)
	return func(b *testing.B) map[string]ProgramStats {
		out := map[string]ProgramStats{}
		for _, id := range ids {
			prog, err := ebpf.NewProgramFromID(id)
			require.NoError(b, err)
			info, err := prog.Info()
			require.NoError(b, err)
			st, err := prog.Stats()
			require.NoError(b, err)
			require.NoError(b, prog.Close())
			out["bpftrace_"+info.Name] = ProgramStats{Program: info.Name, RunTime: st.Runtime, RunCount: st.RunCount}
		}
		return out
	}
}

// progIDs returns the BPF programs a process holds, from the prog_id lines of its fdinfo.
func progIDs(pid int) []ebpf.ProgramID {
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, _ := os.ReadDir(dir) // the process may be starting or gone: no programs yet
	var ids []ebpf.ProgramID
	for _, e := range ents {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "prog_id:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil && !slices.Contains(ids, ebpf.ProgramID(n)) {
					ids = append(ids, ebpf.ProgramID(n))
				}
			}
		}
	}
	return ids
}

func benchRunTime(b *testing.B, attach func(b *testing.B) costs) {
	if unix.Geteuid() != 0 {
		b.Skip("SKIPPED: needs root")
	}
	name, _ := loopDevice(b, 32<<20)
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	require.NoError(b, err)
	defer stats.Close()
	read := attach(b)

	fd, err := unix.Open("/dev/"+name, unix.O_RDWR|unix.O_DIRECT, 0)
	require.NoError(b, err)
	defer unix.Close(fd)
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE) // page-aligned for O_DIRECT
	require.NoError(b, err)
	defer func() { _ = unix.Munmap(buf) }()

	before := read(b)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		off := int64(i%4096) * 4096
		if i%2 == 0 {
			_, err = unix.Pread(fd, buf, off)
		} else {
			_, err = unix.Pwrite(fd, buf, off)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after := read(b)
	var total, perCgroup time.Duration
	for prog, st := range after {
		ns := st.RunTime - before[prog].RunTime
		total += ns
		if strings.HasPrefix(prog, "cglat_") {
			perCgroup += ns
		}
		b.ReportMetric(float64(ns.Nanoseconds())/float64(b.N), prog+"-ns/io")
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "bpf-ns/io")
	if perCgroup > 0 {
		b.ReportMetric(float64(perCgroup.Nanoseconds())/float64(b.N), "per-cgroup-ns/io")
	}
}

// BenchmarkFioIOPS runs fio (4 KiB random reads, libaio, queue depth 16, direct) on a loop device
// over a tmpfs file, in 3 A/B pairs, probe not attached (A) and attached (B). The loop device serves
// reads from the page cache, so the run is CPU-bound and the probe's cost shows in full. The machine
// is shared (other work comes in bursts of seconds), so each pair is 6 rounds of two adjacent 1 s
// slices, A B, B A, A B, ..., and its loss is the median of the rounds' losses: a burst spoils a round,
// not the pair. It reports the medians over the pairs of IOPS without and with, and of the loss in
// percent. One iteration is the whole set of pairs. control runs the same with nothing attached in
// B either: its loss is the noise floor of this machine at that moment.
func BenchmarkFioIOPS(b *testing.B) {
	for _, bc := range []struct {
		name      string
		opts      *Options
		perCgroup bool
	}{
		{"control", nil, false}, {"default", &Options{}, false}, {"device_time", &Options{DeviceTime: true}, false},
		// B with the per-cgroup probe added to the default one, A with the default alone: the loss is
		// what turning per-cgroup latency on costs.
		{"per_cgroup", &Options{}, true},
	} {
		b.Run(bc.name, func(b *testing.B) { benchFio(b, bc.opts, bc.perCgroup) })
	}
}

func benchFio(b *testing.B, opts *Options, perCgroup bool) {
	if unix.Geteuid() != 0 {
		b.Skip("SKIPPED: needs root")
	}
	fio := requireTool(b, "fio", "fio")
	name := shmLoopDevice(b, 256<<20)
	job := []string{"--name=ab", "--filename=/dev/" + name, "--direct=1",
		"--ioengine=libaio", "--iodepth=16", "--rw=randread", "--bs=4k", "--runtime=1s", "--time_based",
		"--randrepeat=1", "--norandommap"}
	run := func() float64 { return testkit.FioReadIOPS(b, fio, job...).IOPS }
	attached := func() float64 {
		if opts == nil {
			return run()
		}
		p, err := Open(*opts)
		require.NoError(b, err)
		defer func() { require.NoError(b, p.Close()) }()
		return run()
	}
	if perCgroup {
		// The default probe stays attached through A and B; B adds the per-cgroup one.
		p, err := Open(*opts)
		require.NoError(b, err)
		defer func() { require.NoError(b, p.Close()) }()
		attached = func() float64 {
			cp, err := OpenCgroups(CgroupOptions{})
			require.NoError(b, err)
			defer func() { require.NoError(b, cp.Close()) }()
			return run()
		}
	}
	run() // warm the page cache and the loop worker
	var off, on, loss []float64
	for b.Loop() {
		for range 3 {
			a, c, l, _ := testkit.ABRounds(6, run, attached)
			off, on, loss = append(off, a), append(on, c), append(loss, l)
		}
	}
	b.ReportMetric(testkit.Median(off), "iops-off")
	b.ReportMetric(testkit.Median(on), "iops-on")
	b.ReportMetric(testkit.Median(loss), "loss-%")
	b.Logf("pairs: IOPS without %.0f, with %.0f, loss %% %.1f", off, on, loss)
}

// shmLoopDevice is a loop device over a file in /dev/shm (tmpfs: no disk under it, no O_DIRECT, so
// the loop device reads from the page cache).
func shmLoopDevice(b *testing.B, size int64) string {
	losetup := requireTool(b, "mount", "losetup")
	f, err := os.CreateTemp("/dev/shm", "biolat-bench-*.img")
	require.NoError(b, err)
	b.Cleanup(func() { _ = os.Remove(f.Name()) }) // tmpfs; a leftover goes at reboot
	require.NoError(b, f.Truncate(size))
	require.NoError(b, f.Close())
	out, err := exec.Command(losetup, "--find", "--show", f.Name()).CombinedOutput()
	require.NoError(b, err, "%s", out)
	path := strings.TrimSpace(string(out))
	b.Cleanup(func() {
		if out, err := exec.Command(losetup, "-d", path).CombinedOutput(); err != nil {
			b.Errorf("losetup -d %s: %v: %s", path, err, out)
		}
	})
	// Fill it, so reads are of pages that exist.
	out, err = exec.Command("dd", "if=/dev/zero", "of="+path, "bs=1M", fmt.Sprintf("count=%d", size>>20), "oflag=direct").CombinedOutput()
	require.NoError(b, err, "%s", out)
	return filepath.Base(path)
}

// BenchmarkProbeMemory opens the probe with max_devices 16, 64 and 256 and reports the kernel memory
// of its maps (memlock, what the memory cgroup is charged) in total and per device: the slope between
// 16 and 256 devices is the per-device cost, the rest is fixed (the in-flight table with device time,
// the drop counters). go-heap-B/device is the same slope for the Go heap the open probe keeps (the
// buffers Collect reads the maps into, one slot per map entry). An iteration is one Open and Close.
func BenchmarkProbeMemory(b *testing.B) {
	if unix.Geteuid() != 0 {
		b.Skip("SKIPPED: needs root")
	}
	for _, bc := range []struct {
		name string
		opts Options
	}{{"default", Options{}}, {"device_time", Options{DeviceTime: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			mem, heap := map[int]uint64{}, map[int]float64{}
			for _, n := range []int{16, 64, 256} {
				opts := bc.opts
				opts.MaxDevices = n
				p, h := testkit.HeapKept(func() *Probe { p, err := Open(opts); require.NoError(b, err); return p })
				heap[n] = h
				mem[n] = testkit.MapsMemlock(b, p.coll)
				require.NoError(b, p.Close())
			}
			opts := bc.opts
			opts.MaxDevices = 64
			for b.Loop() {
				p, err := Open(opts)
				if err != nil {
					b.Fatal(err)
				}
				_ = p.Close() // nothing was attached long enough to fail
			}
			perDevice := float64(mem[256]-mem[16]) / 240
			b.ReportMetric(perDevice, "map-B/device")
			b.ReportMetric(float64(mem[64]), "map-B@64")
			b.ReportMetric(float64(mem[16])-16*perDevice, "map-B-fixed")
			b.ReportMetric((heap[256]-heap[16])/240, "go-heap-B/device")
		})
	}
}

// BenchmarkSnapshot reads the probe's maps holding histograms of every direction for n devices (each
// with 60 non-empty buckets) and reports the cost per device.
func BenchmarkSnapshot(b *testing.B) {
	if unix.Geteuid() != 0 {
		b.Skip("SKIPPED: needs root")
	}
	for _, n := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			p, err := Open(Options{MaxDevices: n + 2})
			require.NoError(b, err)
			defer p.Close()
			var val rawHist
			for i := range 60 {
				val[8*(100+i)] = byte(i + 1)
			}
			for d := range n {
				for dir := range numDirections {
					k := histKey(Dev{Major: 250, Minor: uint32(d)}, dir, Total)
					require.NoError(b, p.coll.Maps["hists"].Put(&k, &val))
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				s, err := p.Collect()
				if err != nil || len(s.Series) < n*int(numDirections) {
					b.Fatal(err, len(s.Series))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/device")
		})
	}
}

// BenchmarkCgroupProbeMemory is BenchmarkProbeMemory for the per-cgroup probe: the kernel memory of
// its maps and the Go heap it keeps, at max_cgroups 64, 256 and 1024; the slopes are the cost per
// tracked cgroup (two table entries), the rest is fixed (the owner table, Other, the counters).
func BenchmarkCgroupProbeMemory(b *testing.B) {
	testkit.RequireRoot(b, "loads BPF")
	mem, heap := map[int]uint64{}, map[int]float64{}
	for _, n := range []int{64, 256, 1024} {
		p, h := testkit.HeapKept(func() *CgroupProbe {
			p, err := OpenCgroups(CgroupOptions{MaxCgroups: n})
			require.NoError(b, err)
			return p
		})
		heap[n] = h
		mem[n] = testkit.MapsMemlock(b, p.coll)
		require.NoError(b, p.Close())
	}
	for b.Loop() {
		p, err := OpenCgroups(CgroupOptions{MaxCgroups: 256})
		if err != nil {
			b.Fatal(err)
		}
		_ = p.Close() // nothing was attached long enough to fail
	}
	perCgroup := float64(mem[1024]-mem[64]) / 960
	b.ReportMetric(perCgroup, "map-B/cgroup")
	b.ReportMetric(float64(mem[1024]), "map-B@1024")
	b.ReportMetric(float64(mem[64])-64*perCgroup, "map-B-fixed")
	b.ReportMetric((heap[1024]-heap[64])/960, "go-heap-B/cgroup")
}

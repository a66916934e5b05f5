//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelat

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// The benchmarks behind BENCHMARKS.md's "File latency (issue 35)" section (`make bench`, as root):
// what the programs cost per operation by the kernel's own accounting and in wall time, fio's IOPS
// with the probe attached and not, and the probe's memory per mount and per cgroup series.

// syscallCalls are the calls the per-call benchmarks make: one that is no file operation (getppid:
// the entry program returns after one array lookup, the exit program after a task-storage lookup), a
// cached 4 KiB pread and a 4 KiB pwrite into the page cache (the file lookup at entry, two clock
// reads, the histogram update at exit).
func syscallCalls(b *testing.B) []struct {
	name string
	call func()
} {
	path := filepath.Join(b.TempDir(), "f")
	require.NoError(b, os.WriteFile(path, make([]byte, 4096), 0o600))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(b, err)
	b.Cleanup(func() { _ = f.Close() }) // a benchmark's scratch file
	fd, buf := int(f.Fd()), make([]byte, 4096)
	return []struct {
		name string
		call func()
	}{
		{"getppid", func() { unix.Getppid() }},
		{"pread4k", func() { _, _ = unix.Pread(fd, buf, 0) }},
		{"pwrite4k", func() { _, _ = unix.Pwrite(fd, buf, 0) }},
	}
}

// attachMode is what a benchmark attaches: nothing, the probe (per-cgroup or not), or two empty
// programs on the probe's syscall tracepoints (the kernel's price for running any program there).
// It returns the attached programs by name.
type attachMode struct {
	name  string
	probe bool
	opts  Options
	empty bool
}

var attachModes = []attachMode{
	{name: "probe=off"},
	{name: "empty_programs", empty: true},
	{name: "probe=on", probe: true},
	{name: "probe=on,cgroups=on", probe: true, opts: Options{PerCgroup: true}},
}

func (m attachMode) attach(b *testing.B) map[string]*ebpf.Program {
	switch {
	case m.probe:
		p, err := Open(m.opts)
		require.NoError(b, err)
		b.Cleanup(func() { _ = p.Close() }) // a benchmark's probe; nothing to report
		return p.coll.Programs
	case m.empty:
		return emptyPrograms(b)
	}
	return nil
}

// emptyPrograms attaches a program that returns at once to each of the raw syscall tracepoints the
// probe uses (tp_btf/sys_enter, sys_exit) and returns them.
func emptyPrograms(b *testing.B) map[string]*ebpf.Program {
	progs := map[string]*ebpf.Program{}
	for _, tp := range []string{"sys_enter", "sys_exit"} {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: "empty_" + tp, Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: tp,
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}, License: "GPL",
		})
		require.NoError(b, err)
		l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
		require.NoError(b, err)
		b.Cleanup(func() { _ = l.Close(); _ = prog.Close() }) // a benchmark's programs
		progs["empty_"+tp] = prog
	}
	return progs
}

// BenchmarkSyscallOverhead is the wall time of a call with nothing attached, with two empty programs
// on the probe's tracepoints, with the probe and with its per-cgroup table: the programs run on every
// system call of the machine, so their cost is what any syscall costs more with the probe attached.
// Compare the lines of one run.
func BenchmarkSyscallOverhead(b *testing.B) {
	requireRoot(b)
	for _, c := range syscallCalls(b) {
		for _, mode := range attachModes {
			b.Run(c.name+"/"+mode.name, func(b *testing.B) {
				mode.attach(b)
				for b.Loop() {
					c.call()
				}
			})
		}
	}
}

// BenchmarkBPFRunTimePerOp reports what the attached programs cost per call by the kernel's own
// statistics (run_time_ns and run_cnt of each program, the counters kernel.bpf_stats_enabled turns
// on; enabled here through BPF_ENABLE_STATS for the benchmark's duration), divided by the calls the
// benchmark made: bpf-ns/op in all and <program>-ns/op each, with bpf-runs/op (2 when only this
// benchmark made system calls). The programs run on every syscall of the machine, so other
// processes' calls during the run count too: runs/op above 2 shows how many; ns/run is the run time
// per program run, theirs included. Each figure includes the kernel's own dispatch and statistics per
// run (the empty_programs lines: two programs that return at once).
func BenchmarkBPFRunTimePerOp(b *testing.B) {
	requireRoot(b)
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	require.NoError(b, err)
	defer stats.Close()
	for _, c := range syscallCalls(b) {
		for _, mode := range attachModes[1:] {
			b.Run(c.name+"/"+mode.name, func(b *testing.B) {
				progs := mode.attach(b)
				before := programStats(b, progs)
				for b.Loop() {
					c.call()
				}
				ns, runs := sinceStats(b, progs, before, true)
				// Other processes' calls in the run: priced at what a run costs when this benchmark
				// makes only non-file calls (getppid), so that own-bpf-ns/op is this call's.
				const probes = 200000
				before = programStats(b, progs)
				for range probes {
					unix.Getppid()
				}
				nfNs, nfRuns := sinceStats(b, progs, before, false)
				perRun := float64(nfNs.Nanoseconds()) / float64(nfRuns)
				n := float64(b.N)
				b.ReportMetric(float64(ns.Nanoseconds())/n, "bpf-ns/op")
				b.ReportMetric(float64(runs)/n, "bpf-runs/op")
				b.ReportMetric((float64(ns.Nanoseconds())-(float64(runs)-2*n)*perRun)/n, "own-bpf-ns/op")
				b.ReportMetric(perRun, "nonfile-ns/run")
			})
		}
	}
}

// sinceStats is the run time and runs of progs since before, reported per program and op when report.
func sinceStats(b *testing.B, progs map[string]*ebpf.Program, before map[string]ebpf.ProgramStats, report bool) (time.Duration, uint64) {
	var ns time.Duration
	var runs uint64
	for name, st := range programStats(b, progs) {
		d := st.Runtime - before[name].Runtime
		ns += d
		runs += st.RunCount - before[name].RunCount
		if report {
			b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), name+"-ns/op")
		}
	}
	return ns, runs
}

func programStats(b *testing.B, progs map[string]*ebpf.Program) map[string]ebpf.ProgramStats {
	out := map[string]ebpf.ProgramStats{}
	for name, prog := range progs {
		st, err := prog.Stats()
		require.NoError(b, err, name)
		out[name] = *st
	}
	return out
}

// BenchmarkFileFioIOPS runs fio 4 KiB random reads (psync: one read system call per I/O, one job) of a
// 128 MiB file, 2 s at a time, in 8 rounds of two adjacent runs with the probe not attached and
// attached, in alternating order (testkit.ABRounds), and reports the medians of IOPS without and with
// and of the rounds' losses in percent. page_cache: the file, on an ext4 over a loop device, is read
// once before and fio does not drop it (--invalidate=0), so every read is a page-cache hit and the
// run is CPU-bound: the probe's cost shows in full. disk: O_DIRECT reads of the file on an ext4 over
// a disk of known speed (testkit.DelayDisk, 100 µs a request, served over FUSE: each read waits for
// its request). control: nothing attached in either arm, the noise floor of the machine at that
// moment. A shared machine gives fio a varying share of its CPUs, which moves IOPS by tens of percent
// between adjacent runs; fio's CPU time per read does not move with it, so cpu-loss-% (the IOPS a
// CPU-bound job loses at a full CPU: 1 − CPU per read off / on, median of the rounds) is the figure
// that resolves the page-cache arm. One iteration is the whole set of rounds.
func BenchmarkFileFioIOPS(b *testing.B) {
	requireRoot(b)
	fio := testkit.Tool(b, "fio", "fio")
	for _, bc := range []struct {
		name   string
		disk   bool
		attach *Options
	}{
		{"page_cache/control", false, nil},
		{"page_cache/probe=on", false, &Options{}},
		{"page_cache/probe=on,cgroups=on", false, &Options{PerCgroup: true}},
		{"disk/control", true, nil},
		{"disk/probe=on", true, &Options{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var mnt string
			direct := "--direct=0"
			if bc.disk {
				mnt = testkit.Ext4OnDelayDisk(b, testkit.DelayDisk{Size: 256 << 20, Fixed: 100 * time.Microsecond, FastWrites: true})
				direct = "--direct=1"
			} else {
				mnt = testkit.Ext4OnLoop(b, 256<<20)
			}
			job := []string{"--name=ab", "--filename=" + filepath.Join(mnt, "f"), "--size=128m", direct,
				"--invalidate=0", "--ioengine=psync", "--rw=randread", "--bs=4k", "--runtime=2s", "--time_based",
				"--randrepeat=1", "--norandommap"}
			// Each run's CPU per read goes in cpu[arm], paired by round: ABRounds runs each arm once a round.
			cpu := [2][]float64{}
			run := func(arm int) float64 {
				r := testkit.FioReadIOPS(b, fio, job...)
				cpu[arm] = append(cpu[arm], float64(r.CPUPerRead.Nanoseconds()))
				return r.IOPS
			}
			off := func() float64 { return run(0) }
			on := func() float64 { return run(1) }
			if bc.attach != nil {
				on = func() float64 {
					p, err := Open(*bc.attach)
					require.NoError(b, err)
					defer func() { require.NoError(b, p.Close()) }()
					return run(1)
				}
			}
			off() // lay the file out and, without O_DIRECT, read it into the page cache
			cpu[0] = nil
			var offMed, onMed, loss float64
			var losses []float64
			load := loadAverage(b)
			for b.Loop() {
				offMed, onMed, loss, losses = testkit.ABRounds(8, off, on)
			}
			// The IOPS a CPU-bound job would lose at a full CPU: 1 − (CPU per read off / on), per round.
			var cpuLoss []float64
			for r := range cpu[0] {
				cpuLoss = append(cpuLoss, 100*(1-cpu[0][r]/cpu[1][r]))
			}
			b.ReportMetric(offMed, "iops-off")
			b.ReportMetric(onMed, "iops-on")
			b.ReportMetric(loss, "loss-%")
			b.ReportMetric(testkit.Median(cpu[0]), "cpu-ns/read-off")
			b.ReportMetric(testkit.Median(cpu[1]), "cpu-ns/read-on")
			b.ReportMetric(testkit.Median(cpuLoss), "cpu-loss-%")
			b.Logf("load average %s → %s; rounds' IOPS losses %% %.1f; CPU-per-read losses %% %.1f", load, loadAverage(b), losses, cpuLoss)
		})
	}
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute averages.
func loadAverage(b *testing.B) string {
	data, err := os.ReadFile("/proc/loadavg")
	require.NoError(b, err)
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

// BenchmarkFileProbeMemory opens the probe at several sizes and reports the kernel memory of its maps
// (testkit.MapsMemlock: the memlock of each map, what the memory cgroup is charged; the tables are
// preallocated, so this is what they hold from the start): per mount, the slope between MaxMounts 16
// and 256 (3 series of a mount's operations each); per cgroup series ({cgroup, mount, operation}:
// a cgroup reading and writing on one mount takes 2), the slope between MaxCgroupSeries 64 and 1024
// with PerCgroup; the rest is fixed (the syscall table, the drop counters; task storage grows with
// the tasks in a call, not with mounts). go-heap-B/mount is the Go heap an open probe keeps per
// mount of its size (none: Collect reads into fresh slices); collect-B/series is what one Collect
// allocates per series the table holds (the snapshot the scraper then turns into points). An
// iteration is one Open and Close at the defaults.
func BenchmarkFileProbeMemory(b *testing.B) {
	requireRoot(b)
	open := func(opts Options) (*Probe, uint64, float64) {
		p, heap := testkit.HeapKept(func() *Probe { p, err := Open(opts); require.NoError(b, err); return p })
		return p, testkit.MapsMemlock(b, p.coll), heap
	}
	// The probe is attached while this runs, so the machine's own file calls take entries too: the
	// benchmark fills up to half the table with mounts of made-up IDs and divides by the series
	// Collect got.
	mounts, mountHeap, collect, series := map[int]uint64{}, map[int]float64{}, map[int]float64{}, map[int]float64{}
	for _, n := range []int{16, 256} {
		p, mem, heap := open(Options{MaxMounts: n})
		mounts[n], mountHeap[n] = mem, heap
		val := make([]byte, valSize)
	fill:
		for id := range n / 2 {
			for op := Read; op <= maxOp; op++ {
				k := fileKey(uint32(1<<30+id), op)
				if err := p.coll.Maps[filelatMapFiles].Put(k[:], val); err != nil {
					break fill // full (the machine's calls took the rest): Collect counts what is there
				}
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s, err := p.Collect()
		runtime.ReadMemStats(&after)
		require.NoError(b, err)
		collect[n], series[n] = float64(after.TotalAlloc-before.TotalAlloc), float64(len(s.Series))
		require.NoError(b, p.Close())
	}
	cgroups := map[int]uint64{}
	for _, n := range []int{64, 1024} {
		p, mem, _ := open(Options{PerCgroup: true, MaxCgroupSeries: n})
		cgroups[n] = mem
		require.NoError(b, p.Close())
	}
	for b.Loop() {
		p, err := Open(Options{})
		if err != nil {
			b.Fatal(err)
		}
		_ = p.Close() // nothing was attached long enough to fail
	}
	perMount := float64(mounts[256]-mounts[16]) / 240
	b.ReportMetric(perMount, "map-B/mount")
	b.ReportMetric(float64(mounts[16])-16*perMount, "map-B-fixed")
	b.ReportMetric(float64(mounts[256]), "map-B@256mounts")
	b.ReportMetric((mountHeap[256]-mountHeap[16])/240, "go-heap-B/mount")
	b.ReportMetric((collect[256]-collect[16])/(series[256]-series[16]), "collect-B/series")
	perSeries := float64(cgroups[1024]-cgroups[64]) / 960
	b.ReportMetric(perSeries, "map-B/cgroup-series")
	b.ReportMetric(float64(cgroups[1024]-mounts[256]), "map-B-per-cgroup-table@1024")
}

// BenchmarkBPFParts is the profile of the programs' run time: the price on this kernel of each kind
// of step on_enter and on_exit take, as a program on tp_btf/sys_enter made of that step alone,
// measured by the kernel's statistics over getppid calls (ns/run; the empty program's is the kernel's
// dispatch and its statistics' two clock reads, which every program pays). on_enter pays for a file
// call one array lookup, one task-storage get, six bpf_probe_read_kernel (the fd table slot, the
// inode and its mode, the vfsmount, the mount ID, the mapping) and one clock read; on_exit a
// task-storage get, a clock read, a hash lookup and 5 atomic adds (4 without bytes).
func BenchmarkBPFParts(b *testing.B) {
	requireRoot(b)
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	require.NoError(b, err)
	defer stats.Close()
	newMap := func(spec *ebpf.MapSpec) *ebpf.Map {
		m, err := ebpf.NewMap(spec)
		require.NoError(b, err)
		b.Cleanup(func() { _ = m.Close() }) // a benchmark's map
		return m
	}
	array := newMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	hash := newMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 16})
	require.NoError(b, hash.Put(uint64(0), uint64(0)))
	task := newMap(&ebpf.MapSpec{Type: ebpf.TaskStorage, KeySize: 4, ValueSize: 8, Flags: unix.BPF_F_NO_PREALLOC,
		Key: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}, Value: &btf.Int{Name: "u64", Size: 8}})
	ret := asm.Instructions{asm.Mov.Imm(asm.R0, 0).WithSymbol("out"), asm.Return()}
	// lookup looks up the key 0 (8 bytes on the stack; the array's is the first 4) in m.
	lookup := func(m *ebpf.Map) asm.Instructions {
		return asm.Instructions{asm.StoreImm(asm.RFP, -8, 0, asm.Word), asm.StoreImm(asm.RFP, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, m.FD()), asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -8), asm.FnMapLookupElem.Call()}
	}
	parts := []struct {
		name  string
		insns asm.Instructions
	}{
		{"empty", nil},
		{"ktime_get_ns", asm.Instructions{asm.FnKtimeGetNs.Call()}},
		{"probe_read_kernel", asm.Instructions{asm.Mov.Reg(asm.R1, asm.RFP), asm.Add.Imm(asm.R1, -8),
			asm.Mov.Imm(asm.R2, 8), asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -16), asm.FnProbeReadKernel.Call()}},
		{"array_lookup", lookup(array)},
		{"hash_lookup", lookup(hash)},
		{"hash_lookup+atomic_add", append(lookup(hash), asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Imm(asm.R1, 1), asm.StoreXAdd(asm.R0, asm.R1, asm.DWord))},
		{"task_storage_get", asm.Instructions{asm.FnGetCurrentTaskBtf.Call(), asm.Mov.Reg(asm.R2, asm.R0),
			asm.LoadMapPtr(asm.R1, task.FD()), asm.Mov.Imm(asm.R3, 0), asm.Mov.Imm(asm.R4, 1), asm.FnTaskStorageGet.Call()}},
	}
	for _, part := range parts {
		b.Run(part.name, func(b *testing.B) {
			prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
				Name: "part", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: "sys_enter",
				Instructions: append(slices.Clone(part.insns), ret...), License: "GPL",
			})
			require.NoError(b, err)
			defer prog.Close()
			l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
			require.NoError(b, err)
			defer l.Close()
			progs := map[string]*ebpf.Program{part.name: prog}
			before := programStats(b, progs)
			for b.Loop() {
				unix.Getppid()
			}
			ns, runs := sinceStats(b, progs, before, false)
			b.ReportMetric(float64(ns.Nanoseconds())/float64(runs), "ns/run")
		})
	}
}

//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package biolat

import (
	"fmt"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// BenchmarkBPFRunTimePerIO reports what the attached programs cost per I/O, from the kernel's own BPF
// statistics (run_time_ns / run_cnt, the counters kernel.bpf_stats_enabled turns on; enabled here
// through BPF_ENABLE_STATS, which ends with the benchmark). Each iteration is one direct 4 KiB read
// or write on a fresh loop device.
func BenchmarkBPFRunTimePerIO(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts Options
	}{{"default", Options{}}, {"device_time", Options{DeviceTime: true}}} {
		b.Run(bc.name, func(b *testing.B) { benchRunTime(b, bc.opts) })
	}
}

func benchRunTime(b *testing.B, opts Options) {
	if unix.Geteuid() != 0 {
		b.Skip("SKIPPED: needs root")
	}
	name, _ := loopDevice(b, 32<<20)
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	require.NoError(b, err)
	defer stats.Close()
	p, err := Open(opts)
	require.NoError(b, err)
	defer p.Close()

	fd, err := unix.Open("/dev/"+name, unix.O_RDWR|unix.O_DIRECT, 0)
	require.NoError(b, err)
	defer unix.Close(fd)
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE) // page-aligned for O_DIRECT
	require.NoError(b, err)
	defer func() { _ = unix.Munmap(buf) }()

	before := runTotals(b, p)
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
	after := runTotals(b, p)
	var total time.Duration
	for prog, st := range after {
		ns := st.RunTime - before[prog].RunTime
		total += ns
		b.ReportMetric(float64(ns.Nanoseconds())/float64(b.N), prog+"-ns/io")
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "bpf-ns/io")
}

func runTotals(b *testing.B, p *Probe) map[string]ProgramStats {
	st, err := p.Stats()
	require.NoError(b, err)
	out := map[string]ProgramStats{}
	for _, s := range st {
		out[s.Program] = s
	}
	return out
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

package noisy

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// devices is n cgroups of one device, each with some requests, the first holding most of the device.
func devicesOf(n int) []Device {
	d := Device{Device: "nvme0n1"}
	for i := range n {
		d.Samples = append(d.Samples, Sample{Cgroup: fmt.Sprintf("/kubepods.slice/pod-%04d", i), IOs: 50, Busy: 0.01, Latency: 0.001})
	}
	d.Samples[0].Busy = float64(n)
	return []Device{d}
}

// BenchmarkUpdate is one interval of 1 000 cgroups on a device: the verdict's cost per scrape.
func BenchmarkUpdate(b *testing.B) {
	e := New(DefaultConfig())
	devs := devicesOf(1000)
	ts := time.Unix(0, 0)
	b.ReportAllocs()
	for b.Loop() {
		ts = ts.Add(time.Second)
		e.Update(ts, devs)
	}
}

// BenchmarkMemoryPerTracked reports the engine's heap per (cgroup, device) it holds, the path
// strings (the caller's) aside.
func BenchmarkMemoryPerTracked(b *testing.B) {
	const n = 10000
	devs := devicesOf(n)
	var before, after runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		e := New(DefaultConfig())
		e.Update(time.Unix(1, 0), devs)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/tracked")
		runtime.KeepAlive(e)
	}
}

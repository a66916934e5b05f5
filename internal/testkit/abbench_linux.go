//go:build linux

package testkit

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/require"
)

// The side-by-side cost benchmarks of the BPF probes (biolat's and filelat's BenchmarkFioIOPS and
// BenchmarkProbeMemory) share these.

// Median is the median of vs (the mean of the middle two for an even count); vs is not changed.
func Median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ABRounds runs rounds of two adjacent measurements, off (the probe not attached) and on, in
// alternating order (off on, on off, off on, ...), so that both arms see the same load on a shared
// machine and a burst of other work spoils a round rather than an arm. It returns the medians of the
// off and on values and of the rounds' losses in percent (100 × (off − on) / off), and those losses.
func ABRounds(rounds int, off, on func() float64) (offMed, onMed, lossMed float64, losses []float64) {
	var offs, ons []float64
	for r := range rounds {
		var a, c float64
		if r%2 == 0 {
			a, c = off(), on()
		} else {
			c, a = on(), off()
		}
		offs, ons, losses = append(offs, a), append(ons, c), append(losses, 100*(a-c)/a)
	}
	return Median(offs), Median(ons), Median(losses), losses
}

// FioRead is one fio job's reads: IOPS, and the job's CPU time (user and system, fio's own included)
// per read. On a shared machine IOPS moves with the CPU share the job gets; CPU per read does not, so
// a CPU-bound job's cost difference between two arms is in CPUPerRead even when IOPS is noise.
type FioRead struct {
	IOPS       float64
	CPUPerRead time.Duration
}

// FioReadIOPS runs fio with args (one job) and returns the job's reads from its JSON report.
func FioReadIOPS(tb testing.TB, fio string, args ...string) FioRead {
	tb.Helper()
	out, err := exec.Command(fio, append([]string{"--output-format=json"}, args...)...).Output()
	require.NoError(tb, err, "%s", out)
	var report struct {
		Jobs []struct {
			Read struct {
				IOPS     float64 `json:"iops"`
				TotalIOs float64 `json:"total_ios"`
			} `json:"read"`
			UsrCPU     float64 `json:"usr_cpu"`
			SysCPU     float64 `json:"sys_cpu"`
			JobRuntime float64 `json:"job_runtime"` // ms
		} `json:"jobs"`
	}
	start := bytes.IndexByte(out, '{')
	require.GreaterOrEqual(tb, start, 0, "fio printed no JSON: %s", out)
	require.NoError(tb, json.Unmarshal(out[start:], &report))
	require.Len(tb, report.Jobs, 1)
	j := report.Jobs[0]
	r := FioRead{IOPS: j.Read.IOPS}
	if j.Read.TotalIOs > 0 {
		r.CPUPerRead = time.Duration((j.UsrCPU + j.SysCPU) / 100 * j.JobRuntime * 1e6 / j.Read.TotalIOs)
	}
	return r
}

// MapsMemlock is the kernel memory of every map in coll as the kernel accounts it (the memlock of
// the map's fdinfo: what the memory cgroup is charged).
func MapsMemlock(tb testing.TB, coll *ebpf.Collection) uint64 {
	tb.Helper()
	var total uint64
	for name, m := range coll.Maps {
		info, err := m.Info()
		require.NoError(tb, err, name)
		ml, ok := info.Memlock()
		require.True(tb, ok, "%s: the kernel reports no memlock", name)
		total += ml
	}
	return total
}

// HeapKept is how much the live Go heap grew across open (after a collection either side): what the
// value open returns keeps.
func HeapKept[T any](open func() T) (T, float64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := open()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return v, float64(after.HeapAlloc) - float64(before.HeapAlloc)
}

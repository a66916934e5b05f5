package checkpoint

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
)

// learned returns n learners that have each seen a keep-3 job for six saves (so every sample runs the
// whole prediction), the usage they were at, and the time of the next sample.
func learned(tb testing.TB, n int) ([]*Learner, []uint64, time.Time) {
	j := job{limit: 4 * tib, base: 900 * gib, size: 300 * gib, rate: gib, cadence: 2 * time.Hour, scrape: time.Minute, keep: 3, rotation: RotationAfter}
	ls := make([]*Learner, n)
	used := make([]uint64, n)
	var p []Prediction
	for i := range ls {
		ls[i] = NewLearner(Config{})
		var u []uint64
		p, u = j.run(ls[i], 6)
		used[i] = u[len(u)-1]
	}
	require.NotEqual(tb, Learning, p[len(p)-1].State)
	return ls, used, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(7 * 2 * time.Hour)
}

// observeAll is one scrape's learning for every domain.
func observeAll(ls []*Learner, used []uint64, at time.Time) {
	for i, l := range ls {
		l.Observe(Sample{Time: at, Used: used[i], Free: 4*tib - used[i]})
	}
}

// BenchmarkLearning100Domains: one scrape's learning for 100 domains with learned patterns (a scrape a
// second, so that the patterns stay current for up to 20 000 iterations), with its thread CPU per scrape.
func BenchmarkLearning100Domains(b *testing.B) {
	ls, used, at := learned(b, 100)
	b.ReportAllocs()
	cpu := dhtest.ThreadCPU(b, func() {
		for i := range b.N {
			observeAll(ls, used, at.Add(time.Duration(i+1)*time.Second))
		}
	})
	// The thread's CPU, beside the wall time: what the learning costs the collector (target ≤ 1 ms).
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/scrape")
}

package fsusage

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const gib = 1 << 30

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func newTestForecaster(t *testing.T) *Forecaster[string] {
	t.Helper()
	f, err := NewForecaster[string](ForecastConfig{})
	require.NoError(t, err)
	return f
}

func TestForecastDefaults(t *testing.T) {
	f := newTestForecaster(t)
	assert.Equal(t, ForecastConfig{
		Window: 6 * time.Hour, Buckets: 72, MinPoints: 16, MinSpan: time.Hour,
		ResetFraction: 0.01, MinR2: 0.6, MinTStat: 3,
	}, f.Config())
}

func TestForecastConfigErrors(t *testing.T) {
	for _, cfg := range []ForecastConfig{
		{Window: -time.Hour},
		{MinR2: 1.5},
		{MinPoints: 2},
		{Buckets: 10, MinPoints: 11},
		{Window: time.Hour, MinSpan: time.Hour},
	} {
		_, err := NewForecaster[string](cfg)
		assert.Error(t, err, "%+v", cfg)
	}
}

func TestForecastLinearFill(t *testing.T) {
	const limit = 100 * gib
	for _, tc := range []struct {
		name     string
		interval time.Duration
		rate     float64 // bytes/s
	}{
		{"10s scrapes, 1 GiB/h", 10 * time.Second, gib / 3600.0},
		{"1m scrapes, 5 GiB/h", time.Minute, 5 * gib / 3600.0},
		{"5m scrapes, 100 MiB/h", 5 * time.Minute, 100 << 20 / 3600.0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestForecaster(t)
			free0 := 60.0 * gib
			var fc Forecast
			first := time.Duration(-1)
			for d := time.Duration(0); d <= 8*time.Hour; d += tc.interval {
				free := free0 - tc.rate*d.Seconds()
				fc = f.Observe("sda1", t0.Add(d), uint64(free), limit)
				if fc.OK && first < 0 {
					first = d
				}
				if d >= 80*time.Minute {
					require.True(t, fc.OK, "no forecast after %s: %+v", d, fc)
					truth := free / tc.rate
					assert.InEpsilon(t, truth, fc.Seconds, 0.05, "at %s", d)
					assert.InEpsilon(t, tc.rate, fc.FillRate, 0.05)
				}
			}
			// Not before the minimum history of 16 five-minute buckets.
			assert.GreaterOrEqual(t, first, 75*time.Minute)
			assert.InDelta(t, 1, fc.R2, 1e-9)
			assert.Equal(t, 72, fc.Points, "a full window of buckets")
		})
	}
}

func TestForecastTooFewPoints(t *testing.T) {
	f := newTestForecaster(t)
	// A steep, perfect fill, but only 70 minutes of it: no forecast.
	for d := time.Duration(0); d <= 70*time.Minute; d += 10 * time.Second {
		fc := f.Observe("x", t0.Add(d), uint64(50*gib-float64(d.Seconds())*1e6), 100*gib)
		require.False(t, fc.OK, "at %s", d)
	}
	// Sparse points over a long span: span is met, point count is not.
	g := newTestForecaster(t)
	for i := range 6 {
		fc := g.Observe("x", t0.Add(time.Duration(i)*time.Hour), uint64(50-i)*gib, 100*gib)
		require.False(t, fc.OK)
		assert.LessOrEqual(t, fc.Points, 6)
	}
}

func TestForecastFillThenDelete(t *testing.T) {
	const limit = 100 * gib
	f := newTestForecaster(t)
	rate := 2.0 * gib / 3600
	free := 50.0 * gib
	now := t0
	step := func(d time.Duration, delta float64) Forecast {
		now = now.Add(d)
		free += delta
		return f.Observe("data", now, uint64(free), limit)
	}
	// Two hours of filling: forecast.
	var fc Forecast
	for range 2 * 60 {
		fc = step(time.Minute, -rate*60)
	}
	require.True(t, fc.OK)

	// A cleanup frees 20 GiB at once: history restarts, no forecast.
	fc = step(time.Minute, 20*gib)
	assert.False(t, fc.OK)
	assert.Equal(t, 1, fc.Points)

	// Freeing gradually (each step below the reset threshold): never a
	// forecast while free space grows.
	for range 3 * 60 {
		fc = step(time.Minute, rate*60/4)
		require.False(t, fc.OK, "%+v", fc)
	}
	// Filling again: a forecast returns once the freeing has left the
	// window's fit or is outweighed.
	back := -1
	for i := range 6 * 60 {
		fc = step(time.Minute, -rate*60)
		if fc.OK && back < 0 {
			back = i
		}
	}
	require.True(t, fc.OK)
	assert.Greater(t, back, 60, "not straight away")
	assert.InEpsilon(t, free/rate, fc.Seconds, 0.05)
}

func TestForecastPureNoiseNeverForecasts(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 42))
		f := newTestForecaster(t)
		for d := time.Duration(0); d <= 24*time.Hour; d += 30 * time.Second {
			free := 40*gib + rng.NormFloat64()*0.2*gib
			fc := f.Observe("x", t0.Add(d), uint64(free), 100*gib)
			require.False(t, fc.OK, "seed %d at %s: %+v", seed, d, fc)
		}
	}
}

func TestForecastNoisyFill(t *testing.T) {
	// A real trend under heavy scrape-to-scrape noise (sd 1 GiB around a
	// 1 GiB/h fill): the buckets average the noise away.
	const rate = gib / 3600.0
	hits := 0
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 7))
		f := newTestForecaster(t)
		var fc Forecast
		var truth float64
		for d := time.Duration(0); d <= 6*time.Hour; d += 30 * time.Second {
			trend := 60*gib - rate*d.Seconds()
			fc = f.Observe("x", t0.Add(d), uint64(trend+rng.NormFloat64()*0.3*gib), 100*gib)
			truth = trend / rate
		}
		if fc.OK {
			hits++
			// The forecast starts from the last (noisy) sample, so allow
			// for its noise as well as the slope's.
			assert.InEpsilon(t, truth, fc.Seconds, 0.15, "seed %d", seed)
		}
	}
	assert.GreaterOrEqual(t, hits, 9, "a clear trend is forecast")
}

func TestForecastResets(t *testing.T) {
	build := func(f *Forecaster[string]) {
		for d := time.Duration(0); d <= 2*time.Hour; d += time.Minute {
			f.Observe("x", t0.Add(d), uint64(50*gib-float64(d/time.Minute)*(10<<20)), 100*gib)
		}
	}
	t.Run("resize", func(t *testing.T) {
		f := newTestForecaster(t)
		build(f)
		fc := f.Observe("x", t0.Add(2*time.Hour+time.Minute), 30*gib, 200*gib)
		assert.False(t, fc.OK)
		assert.Equal(t, 1, fc.Points)
	})
	t.Run("clock goes back", func(t *testing.T) {
		f := newTestForecaster(t)
		build(f)
		fc := f.Observe("x", t0.Add(time.Hour), 30*gib, 100*gib)
		assert.False(t, fc.OK)
		assert.Equal(t, 1, fc.Points)
	})
	t.Run("small rise keeps history", func(t *testing.T) {
		f := newTestForecaster(t)
		build(f)
		// 100 MiB freed on a 100 GiB filesystem: below 1 %.
		fc := f.Observe("x", t0.Add(2*time.Hour+time.Minute), uint64(50*gib-120*(10<<20)+100<<20), 100*gib)
		assert.True(t, fc.OK)
		assert.Greater(t, fc.Points, 20)
	})
}

func TestForecastFullAndFlat(t *testing.T) {
	f := newTestForecaster(t)
	var fc Forecast
	for d := time.Duration(0); d <= 2*time.Hour; d += time.Minute {
		free := max(0, 3*gib-float64(d.Seconds())*1e6)
		fc = f.Observe("full", t0.Add(d), uint64(free), 100*gib)
	}
	// Free space hit zero 50 minutes in and stayed there: the decline
	// still dominates the window, and the time left is none.
	require.True(t, fc.OK, "%+v", fc)
	assert.Zero(t, fc.Seconds)
	assert.Less(t, fc.R2, 0.9, "no longer a line")

	g := newTestForecaster(t)
	for d := time.Duration(0); d <= 3*time.Hour; d += time.Minute {
		fc = g.Observe("flat", t0.Add(d), 10*gib, 100*gib)
	}
	assert.False(t, fc.OK, "a constant series has no trend")
	assert.True(t, !math.IsNaN(fc.R2) && !math.IsNaN(fc.TStat))
}

func TestForecastGapsAndPrune(t *testing.T) {
	f := newTestForecaster(t)
	rate := 1e6
	obs := func(key string, d time.Duration) Forecast {
		return f.Observe(key, t0.Add(d), uint64(50*gib-rate*d.Seconds()), 100*gib)
	}
	for d := time.Duration(0); d <= 2*time.Hour; d += time.Minute {
		obs("a", d)
		obs("b", d)
	}
	// "a" goes quiet for 10 hours (a mount that was stuck), then returns:
	// its old buckets have left the window and are not used.
	fc := obs("a", 12*time.Hour)
	assert.False(t, fc.OK)
	assert.Equal(t, 1, fc.Points)

	require.Equal(t, 2, f.Len())
	f.Prune(t0.Add(12 * time.Hour))
	assert.Equal(t, 1, f.Len(), "b, silent for 10 hours, is forgotten")
	f.Prune(t0.Add(19 * time.Hour))
	assert.Zero(t, f.Len())
}

func BenchmarkForecastObserve(b *testing.B) {
	f, err := NewForecaster[MountKey](ForecastConfig{})
	require.NoError(b, err)
	keys := make([]MountKey, 100)
	for i := range keys {
		keys[i] = MountKey{MountPoint: "/m" + string(rune('a'+i%26)), Major: 8, Minor: uint32(i)}
	}
	b.ReportAllocs()
	now := t0
	for i := 0; b.Loop(); i++ {
		now = now.Add(100 * time.Millisecond)
		f.Observe(keys[i%len(keys)], now, uint64(50*gib)-uint64(i), 100*gib)
	}
}

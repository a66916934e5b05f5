package fsusage

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stillThenFilling is a mount's observations: n scrapes (about a minute apart) at a free space that does
// not move, then a fill with noise over more than a window, with gaps that skip buckets (one into the next
// lap before the ring has reached its end), and a deletion that restarts the series, then another gap.
func stillThenFilling(n int) []struct {
	at   time.Duration
	free uint64
} {
	rng := rand.New(rand.NewPCG(33, uint64(n)))
	type obs = struct {
		at   time.Duration
		free uint64
	}
	var out []obs
	var at time.Duration
	free := 60.0 * gib
	for range n {
		at += time.Minute + time.Duration(rng.IntN(2000))*time.Millisecond
		out = append(out, obs{at, uint64(free)})
	}
	for i := range 900 {
		switch i {
		case 50:
			// Most of a window later (about 65 buckets): into a slot of the next lap, while slots of
			// this one are not reached yet and the buckets before the gap are still in the window.
			at += 5*time.Hour + 25*time.Minute
		case 300:
			at += 7 * time.Hour // past a window: every bucket before the gap leaves it
		case 600:
			free += 5 * gib // a deletion
		case 650:
			at += 2 * time.Hour // past slots the restarted series has not reached, the old lap's
		}
		at += time.Minute + time.Duration(rng.IntN(2000))*time.Millisecond
		free -= 2e6 + 1e6*rng.NormFloat64()
		out = append(out, obs{at, uint64(free)})
	}
	return out
}

// TestForecastRingIsTheWholeRing: a series' ring grown as its time reaches slots holds the buckets a
// whole ring (allocated at the first observation, as before issue 33) holds, slot for slot, and every
// forecast is the whole ring's: after a still prefix of none, one and many observations (more than a
// window), through skipped buckets, a lap and a restart.
func TestForecastRingIsTheWholeRing(t *testing.T) {
	const limit = 100 * gib
	for _, n := range []int{0, 1, 500} {
		f := newTestForecaster(t)
		buckets := f.cfg.Buckets
		whole := make([]bucket, buckets)
		var origin time.Time
		var oks int
		for i, o := range stillThenFilling(n) {
			now := t0.Add(o.at)
			fc := f.Observe("m", now, o.free, limit)
			s := f.series["m"]
			require.LessOrEqual(t, cap(s.ring), buckets)
			// The whole ring, kept here as Observe kept it: emptied when the series restarts.
			if !s.origin.Equal(origin) {
				origin = s.origin
				clear(whole)
			}
			x := now.Sub(origin).Seconds()
			idx := int64(x / f.width)
			b := &whole[idx%int64(buckets)]
			if b.idx != idx || b.n == 0 {
				*b = bucket{idx: idx}
			}
			b.n++
			b.sumT += x
			b.sumF += float64(o.free)

			grown := append(make([]bucket, 0, buckets), s.ring...)
			require.Equal(t, whole, grown[:buckets], "n=%d, observation %d", n, i)
			old := *s
			old.ring = whole
			require.Equal(t, f.fit(&old), fc, "n=%d, observation %d", n, i)
			if fc.OK {
				oks++
			}
		}
		assert.Positive(t, oks, "n=%d: the fill is forecast", n)
	}
}

// TestForecastRingHoldsWhatItReached: a mount observed for less than a bucket width, however often, holds
// one bucket (not a window's), and one observed for longer holds at most Buckets.
func TestForecastRingHoldsWhatItReached(t *testing.T) {
	f := newTestForecaster(t)
	for i := range 1000 {
		f.Observe("still", t0.Add(time.Duration(i)*100*time.Millisecond), 40*gib, 100*gib)
	}
	assert.Equal(t, 1, cap(f.series["still"].ring))
	for d := time.Duration(0); d <= 3*f.cfg.Window; d += time.Minute {
		f.Observe("long", t0.Add(d), 40*gib, 100*gib)
	}
	assert.Equal(t, f.cfg.Buckets, cap(f.series["long"].ring))
}

package noisy

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// interval is one device's interval with a victim V (ios requests at lat seconds, busy vBusy) and
// an aggressor B holding bBusy.
func interval(ios uint64, lat, vBusy, bBusy float64) []Device {
	return []Device{{Device: "loop0", Busy: vBusy + bBusy, Samples: []Sample{
		{Cgroup: "/V", IOs: ios, Busy: vBusy, Latency: lat},
		{Cgroup: "/B", IOs: 500, Busy: bBusy, Latency: 0.02},
	}}}
}

// run feeds devs at consecutive seconds from step and returns every event.
type run struct {
	e    *Engine
	step int
}

func (r *run) feed(devs []Device) []Event {
	r.step++
	return r.e.Update(t0.Add(time.Duration(r.step)*time.Second), devs)
}

// warm teaches V a 1 ms baseline with B idle, with ±30 % variance.
func warm(t *testing.T, r *run, n int) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range n {
		require.Empty(t, r.feed(interval(50, 0.001*(0.7+0.6*rng.Float64()), 0.05, 0)))
	}
}

func TestEpisodeOpensHoldsAndClears(t *testing.T) {
	cfg := DefaultConfig()
	r := &run{e: New(cfg)}
	warm(t, r, cfg.WarmUp)
	base, ok := r.e.Baseline("/V", "loop0")
	require.True(t, ok)
	require.InDelta(t, 0.001, base, 0.0003)

	ev := r.feed(interval(40, 0.008, 0.1, 0.9))
	require.Len(t, ev, 1)
	require.Equal(t, Opened, ev[0].Kind)
	require.Equal(t, "/V", ev[0].Victim)
	require.Equal(t, "loop0", ev[0].Device)
	require.Equal(t, []Aggressor{{"/B", 0.9}}, ev[0].Aggressors)
	require.InDelta(t, 0.1, ev[0].VictimShare, 1e-9)
	require.Equal(t, 0.008, ev[0].Latency)
	require.Equal(t, base, ev[0].LatencyBaseline)
	require.Equal(t, t0.Add(time.Duration(r.step)*time.Second), ev[0].Since)
	require.Len(t, r.e.Open(), 1)

	// Held: one event per episode, however long; one interval below (hysteresis) does not close it.
	for range 5 {
		require.Empty(t, r.feed(interval(40, 0.009, 0.1, 0.9)))
	}
	require.Empty(t, r.feed(interval(40, 0.001, 0.5, 0.5)))
	require.Empty(t, r.feed(interval(40, 0.009, 0.1, 0.9)))
	// Too few victim requests while B still holds the device: held, not cleared.
	for range cfg.ClearAfter + 1 {
		require.Empty(t, r.feed(interval(3, 0.001, 0.01, 0.99)))
	}
	// The aggressor throttled: the latency comes back and B's share falls; cleared after ClearAfter.
	for i := range cfg.ClearAfter {
		ev = r.feed(interval(40, 0.0012, 0.6, 0.4))
		if i < cfg.ClearAfter-1 {
			require.Empty(t, ev)
		}
	}
	require.Len(t, ev, 1)
	require.Equal(t, Cleared, ev[0].Kind)
	require.Equal(t, "/B", ev[0].Aggressors[0].Cgroup)
	require.Empty(t, r.e.Open())
}

// The victim alone, however its latency varies (a log-normal with σ = 1, spikes of 20×), never makes
// an episode: no other cgroup holds the device.
func TestNoEventForVictimAlone(t *testing.T) {
	r := &run{e: New(DefaultConfig())}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 600 {
		lat := 0.001 * math.Exp(rng.NormFloat64())
		if i%50 == 49 {
			lat = 0.02
		}
		devs := []Device{{Device: "loop0", Busy: 0.05, Samples: []Sample{
			{Cgroup: "/V", IOs: 50, Busy: 0.049, Latency: lat},
			{Cgroup: "/", IOs: 1, Busy: 0.001, Latency: 0.001},
		}}}
		require.Empty(t, r.feed(devs), "interval %d", i)
	}
}

// B slows V by 10× but holds less than Share of the device: not B's doing by this verdict.
func TestNoEventBelowShare(t *testing.T) {
	cfg := DefaultConfig()
	r := &run{e: New(cfg)}
	warm(t, r, cfg.WarmUp)
	// A few intervals: fewer than a warm-up, so the rise is not yet the new normal.
	for range 3 {
		// B at 0.45, the unowned rest (flusher, removed cgroups) at 0.45: neither is ≥ 0.5.
		devs := interval(40, 0.01, 0.1, 0.45)
		devs[0].Busy = 1
		require.Empty(t, r.feed(devs))
	}
	// At 0.5 exactly it is.
	devs := interval(40, 0.01, 0.1, 0.5)
	devs[0].Busy = 1
	ev := r.feed(devs)
	require.Len(t, ev, 1)
	require.InDelta(t, 0.5, ev[0].Aggressors[0].Share, 1e-9)
}

// Below k × baseline, or before the warm-up ends, nothing opens even with B holding the device.
func TestNoEventBelowKOrBeforeWarm(t *testing.T) {
	cfg := DefaultConfig()
	r := &run{e: New(cfg)}
	for range cfg.WarmUp - 1 {
		require.Empty(t, r.feed(interval(40, 0.05, 0.1, 0.9)))
	}
	r = &run{e: New(cfg)}
	warm(t, r, cfg.WarmUp)
	base, _ := r.e.Baseline("/V", "loop0")
	require.Empty(t, r.feed(interval(40, 2.9*base, 0.1, 0.9)))
	// Too few requests: no verdict.
	require.Empty(t, r.feed(interval(cfg.MinVictimIOs-1, 10*base, 0.1, 0.9)))
}

// While an episode is open the baseline does not learn the episode's latency.
func TestBaselineFrozenDuringEpisode(t *testing.T) {
	cfg := DefaultConfig()
	r := &run{e: New(cfg)}
	warm(t, r, cfg.WarmUp)
	base, _ := r.e.Baseline("/V", "loop0")
	require.Len(t, r.feed(interval(40, 0.01, 0.1, 0.9)), 1)
	for range 100 {
		require.Empty(t, r.feed(interval(40, 0.01, 0.1, 0.9)))
	}
	got, _ := r.e.Baseline("/V", "loop0")
	require.Equal(t, base, got)
	// After the episode it learns again.
	for range cfg.ClearAfter + 5 {
		r.feed(interval(40, 0.002, 0.9, 0.1))
	}
	got, _ = r.e.Baseline("/V", "loop0")
	require.Greater(t, got, base)
}

// The interval an aggressor starts in, with its share a hair under Share, is a 10× spike: it is not
// learned, so the episode that opens a scrape later is judged against what V's normal was (the
// loop device test saw the baseline raised 1.26× by exactly that interval).
func TestSpikeBelowShareNotLearned(t *testing.T) {
	cfg := DefaultConfig()
	r := &run{e: New(cfg)}
	warm(t, r, cfg.WarmUp)
	base, _ := r.e.Baseline("/V", "loop0")
	require.Empty(t, r.feed(interval(40, 10*base, 0.51, 0.49)))
	got, _ := r.e.Baseline("/V", "loop0")
	require.Equal(t, base, got)
	ev := r.feed(interval(40, 10*base, 0.1, 0.9))
	require.Len(t, ev, 1)
	require.Equal(t, base, ev[0].LatencyBaseline)
	// Below k × the baseline it learns as before.
	r = &run{e: New(cfg)}
	warm(t, r, cfg.WarmUp)
	require.Empty(t, r.feed(interval(40, 2*base, 0.9, 0.1)))
	got, _ = r.e.Baseline("/V", "loop0")
	require.Greater(t, got, base)
}

// A rise with no aggressor that holds for a whole warm-up is the new normal: the baseline becomes
// the run's geometric mean, and a neighbour is then judged against it. A run broken by one normal
// interval starts again.
func TestNewNormalAfterAWarmUpOfSpikes(t *testing.T) {
	cfg := DefaultConfig()
	r := &run{e: New(cfg)}
	warm(t, r, cfg.WarmUp)
	base, _ := r.e.Baseline("/V", "loop0")
	for range cfg.WarmUp - 1 {
		require.Empty(t, r.feed(interval(40, 5*base, 0.9, 0)))
	}
	require.Empty(t, r.feed(interval(40, base, 0.9, 0)))
	for range cfg.WarmUp - 1 {
		require.Empty(t, r.feed(interval(40, 5*base, 0.9, 0)))
	}
	got, _ := r.e.Baseline("/V", "loop0")
	require.Less(t, got, 1.2*base, "a broken run is not a new normal")
	require.Empty(t, r.feed(interval(40, 5*base, 0.9, 0)))
	got, _ = r.e.Baseline("/V", "loop0")
	require.InEpsilon(t, 5*base, got, 1e-9)
	// 10× the old normal is 2× the new one: no episode, even with B holding the device.
	require.Empty(t, r.feed(interval(40, 10*base, 0.1, 0.9)))
}

// Cgroups and devices not seen for ForgetAfter intervals are freed; an open episode of a removed
// victim is cleared first.
func TestStateFreed(t *testing.T) {
	cfg := DefaultConfig()
	r := &run{e: New(cfg)}
	warm(t, r, cfg.WarmUp)
	require.Len(t, r.feed(interval(40, 0.01, 0.1, 0.9)), 1)
	require.Equal(t, 2, r.e.Tracked())
	var cleared int
	for i := range cfg.ForgetAfter {
		// Only an unrelated device is seen.
		ev := r.feed([]Device{{Device: "sda", Busy: 1, Samples: []Sample{{Cgroup: "/C", IOs: 5, Busy: 1, Latency: 0.001}}}})
		for _, e := range ev {
			require.Equal(t, Cleared, e.Kind)
			require.Equal(t, cfg.ClearAfter-1, i, "cleared when the victim has been gone ClearAfter intervals")
			cleared++
		}
	}
	require.Equal(t, 1, cleared)
	require.Equal(t, 1, r.e.Tracked(), "only /C on sda is left")
	_, ok := r.e.Baseline("/V", "loop0")
	require.False(t, ok)
}

// On cgroup v2 a stall of the victim at k × its (floored) baseline opens an episode though its
// latency did not rise.
func TestStallOpens(t *testing.T) {
	cfg := DefaultConfig()
	r := &run{e: New(cfg)}
	with := func(stall, lat float64) []Device {
		d := interval(40, lat, 0.1, 0.9)
		d[0].Samples[0].Stall, d[0].Samples[0].HasStall = stall, true
		return d
	}
	// The baseline is learned without B; the first interval has no length, so no stall sample.
	for range cfg.WarmUp + 1 {
		d := with(0, 0.001)
		d[0].Samples[1].Busy = 0
		require.Empty(t, r.feed(d))
	}
	require.Empty(t, r.feed(with(0.02, 0.001)), "2 % stalled is below 3 × the 1 % floor")
	ev := r.feed(with(0.2, 0.001))
	require.Len(t, ev, 1)
	require.True(t, ev[0].HasStall)
	require.InDelta(t, 0.2, ev[0].Stall, 1e-9)
	require.Less(t, ev[0].StallBaseline, StallFloor, "judged against the floor")
}

func TestQuantile(t *testing.T) {
	// Scale 0: bucket i is (2^i, 2^(i+1)]. 10 values: 1 zero, 8 in (1,2], 1 in (4,8].
	b := []uint64{8, 0, 1}
	require.Equal(t, 0.5, Quantile(1, 0.5, 0, b, 0, 0.1))
	require.Equal(t, 2.0, Quantile(1, 0.5, 0, b, 0, 0.9))
	require.Equal(t, 8.0, Quantile(1, 0.5, 0, b, 0, 0.95))
	require.Equal(t, 8.0, Quantile(1, 0.5, 0, b, 0, 1))
	require.Equal(t, 0.0, Quantile(0, 0.5, 0, nil, 0, 0.9))
	// Scale 3 at offset -80: (2^-10, 2^(-79/8)] s.
	require.InDelta(t, math.Exp2(-79.0/8), Quantile(0, 0, -80, []uint64{3}, 3, 0.9), 1e-15)
}

package checkpoint

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The simulations run in compressed time: a save every 5–30 s, sampled every 250 ms (a scrape), the
// filesystem's usage moving in 50 ms steps.
const (
	simLimit = 100 << 30
	simStep  = 50 * time.Millisecond
	simEvery = 5 // steps per sample
)

var simT0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// simFS is a filesystem of simLimit bytes; a write that does not fit fails (ENOSPC) and is recorded.
type simFS struct {
	used   float64
	failed bool
}

func (f *simFS) write(n float64) {
	if f.used+n > simLimit {
		f.failed = true
		return
	}
	f.used += n
}

func (f *simFS) remove(n float64) { f.used = max(0, f.used-n) }

// ckptRun is one seeded training job: saves of size (±3 %) every cadence (±2 %) with keep-N rotation,
// next to background growth that fills the filesystem after several cycles.
type ckptRun struct {
	size, cadence, duration, background, used0 float64
	keep                                       int
	rotation                                   Rotation
}

func newCkptRun(seed uint64) ckptRun {
	rng := rand.New(rand.NewPCG(seed, 21))
	r := ckptRun{
		size:    (0.02 + 0.18*rng.Float64()) * simLimit,
		cadence: 5 + 25*rng.Float64(),
	}
	r.duration = max(1, (0.2+0.2*rng.Float64())*r.cadence)
	maxKeep := min(4, max(1, int(0.6*simLimit/r.size)-1))
	r.keep = 1 + rng.IntN(maxKeep)
	r.rotation = RotationBefore
	if seed%2 == 1 {
		r.rotation = RotationAfter
	}
	// The background writes a tenth to a half of a save per cycle (logs, datasets, caches) and, with
	// the copies at their peak, fills the filesystem after keep+5 to keep+12 cycles.
	peak := float64(r.keep) * r.size
	if r.rotation == RotationAfter {
		peak += r.size
	}
	cycles := float64(r.keep) + 5 + 7*rng.Float64()
	perCycle := min((0.1+0.4*rng.Float64())*r.size, (0.9*simLimit-peak)/cycles)
	r.background = perCycle / r.cadence
	r.used0 = simLimit - peak - perCycle*cycles
	return r
}

// simOutcome is what a run showed.
type simOutcome struct {
	failAt time.Time // first ENOSPC (zero: none)
	// willFailFrom is when the state last turned will_fail before the failure (zero: it was not
	// will_fail when the failure came).
	willFailFrom time.Time
	willFails    int // transitions into will_fail
	sizeOK       bool
	first        Prediction // after the third save
	last         Prediction
}

// simulate runs the job (or, with noise, a job-less filesystem) through a Learner until ENOSPC or
// horizon, sampling every simEvery steps.
func simulate(horizon time.Duration, seed uint64, used0 float64, tick func(rng *rand.Rand, t time.Duration, fs *simFS)) simOutcome {
	rng := rand.New(rand.NewPCG(seed, 7))
	fs := &simFS{used: used0}
	l := NewLearner(Config{})
	var out simOutcome
	out.sizeOK = true
	for i := 0; time.Duration(i)*simStep < horizon; i++ {
		t := time.Duration(i) * simStep
		tick(rng, t, fs)
		if fs.failed {
			out.failAt = simT0.Add(t)
			if out.last.State != WillFail {
				out.willFailFrom = time.Time{}
			}
			return out
		}
		if i%simEvery != 0 {
			continue
		}
		p := l.Observe(Sample{Time: simT0.Add(t), Used: uint64(fs.used), Free: uint64(simLimit - fs.used)})
		if p.Alert {
			out.willFails++
			out.willFailFrom = simT0.Add(t)
		}
		if p.Saves == 3 && out.first.Saves == 0 {
			out.first = p
		}
		out.last = p
	}
	return out
}

// job returns the tick of run r: the writer and the background.
func (r ckptRun) job(sizes *[]float64) func(rng *rand.Rand, t time.Duration, fs *simFS) {
	var copies []float64
	var writing, remaining, rate float64
	next := 10.0 // the collector runs before the job starts
	return func(rng *rand.Rand, t time.Duration, fs *simFS) {
		now, h := t.Seconds(), simStep.Seconds()
		fs.write(r.background * h * (0.5 + rng.Float64()))
		if writing == 0 && now >= next {
			if r.rotation == RotationBefore && len(copies) == r.keep {
				fs.remove(copies[0])
				copies = copies[1:]
			}
			writing = r.size * (0.97 + 0.06*rng.Float64())
			*sizes = append(*sizes, writing)
			remaining, rate = writing, writing/r.duration
			next += r.cadence * (0.98 + 0.04*rng.Float64())
		}
		if writing > 0 {
			n := min(remaining, rate*h)
			fs.write(n)
			remaining -= n
			if remaining <= 0 {
				copies = append(copies, writing)
				writing = 0
				if r.rotation == RotationAfter && len(copies) > r.keep {
					fs.remove(copies[0])
					copies = copies[1:]
				}
			}
		}
	}
}

// TestSimulatedCheckpointJobs: 20 seeded jobs (saves of 2–20 % of the filesystem every 5–30 s, keep-1..4
// with rotation before or after the save, background growth) each run to the first ENOSPC. The
// will_fail state must come at least one cadence before it in at least 19, the learned size be within
// ±10 % from the third save on, and the retention be learned right in all 20.
func TestSimulatedCheckpointJobs(t *testing.T) {
	const seeds = 20
	var inTime, retention, sized int
	var worstSize, leastLead, mostLead float64
	leastLead = math.Inf(1)
	for seed := range uint64(seeds) {
		r := newCkptRun(seed)
		var sizes []float64
		out := simulate(time.Duration(float64(r.keep+20)*r.cadence*float64(time.Second)), seed, r.used0, r.job(&sizes))
		if !assert.False(t, out.failAt.IsZero(), "seed %d: the run must end in ENOSPC", seed) {
			continue
		}
		cadence := time.Duration(r.cadence * float64(time.Second))
		lead := out.failAt.Sub(out.willFailFrom)
		if !out.willFailFrom.IsZero() && lead >= cadence {
			inTime++
		}
		mean := 0.0
		for _, s := range sizes {
			mean += s
		}
		mean /= float64(len(sizes))
		errFirst := math.Abs(float64(out.first.SizeP50)-mean) / mean
		errLast := math.Abs(float64(out.last.SizeP50)-mean) / mean
		worstSize = max(worstSize, errFirst, errLast)
		leastLead, mostLead = min(leastLead, lead.Seconds()/r.cadence), max(mostLead, lead.Seconds()/r.cadence)
		if errFirst <= 0.10 && errLast <= 0.10 {
			sized++
		}
		if out.last.Keep == r.keep && out.last.Rotation == r.rotation {
			retention++
		}
		t.Logf("seed %2d: size %4.1f%% every %4.1fs keep %d %-11s | will_fail %5.1fs (%.1f cadences) before ENOSPC, %d events | size err %4.1f%% / %4.1f%% | learned keep %d %s",
			seed, 100*r.size/simLimit, r.cadence, r.keep, r.rotation, lead.Seconds(), lead.Seconds()/r.cadence, out.willFails,
			100*errFirst, 100*errLast, out.last.Keep, out.last.Rotation)
	}
	t.Logf("will_fail at least one cadence before ENOSPC: %d/%d (%.1f–%.1f cadences ahead); size within ±10%% after 3 saves: %d/%d (worst %.1f%%); retention right: %d/%d",
		inTime, seeds, leastLead, mostLead, sized, seeds, 100*worstSize, retention, seeds)
	assert.GreaterOrEqual(t, inTime, 19)
	assert.Equal(t, seeds, sized)
	assert.Equal(t, seeds, retention)
}

// noiseKinds are filesystems with no checkpointing job, only what trips naive burst detectors. Each
// stays below 95 % full: nothing is going to fail, so nothing may be predicted to.
var noiseKinds = []struct {
	name  string
	used0 func(rng *rand.Rand) float64
	tick  func() func(rng *rand.Rand, t time.Duration, fs *simFS)
}{
	{
		// Logs growing at an uneven rate, rotated (compressed) now and then.
		name:  "log growth",
		used0: func(rng *rand.Rand) float64 { return (0.3 + 0.3*rng.Float64()) * simLimit },
		tick: func() func(rng *rand.Rand, t time.Duration, fs *simFS) {
			var rate, nextRotate float64
			return func(rng *rand.Rand, t time.Duration, fs *simFS) {
				if rate == 0 {
					rate = (0.9*simLimit - fs.used) / noiseHorizon.Seconds() * (0.3 + 0.7*rng.Float64())
					nextRotate = 20 + 100*rng.Float64()
				}
				fs.write(rate * simStep.Seconds() * 2 * rng.Float64())
				if t.Seconds() >= nextRotate {
					fs.remove((0.005 + 0.03*rng.Float64()) * simLimit)
					nextRotate += 20 + 100*rng.Float64()
				}
			}
		},
	},
	{
		// Archives unpacked, used a while and deleted, at random times and of random sizes.
		name:  "unpack and delete",
		used0: func(rng *rand.Rand) float64 { return (0.2 + 0.4*rng.Float64()) * simLimit },
		tick: staged{bg: 0.0001, size: [2]float64{0.02, 0.3}, dur: [2]float64{1, 4}, hold: [2]float64{1, 19},
			next: func(rng *rand.Rand, now, _ float64) float64 { return now + 3 + 57*rng.Float64() }}.tick,
	},
	{
		// A nightly backup staged on the disk and shipped off: one large burst a "day" (120 s), of
		// varying size, deleted after it is sent; logs grow slowly in between.
		name:  "nightly burst",
		used0: func(rng *rand.Rand) float64 { return (0.2 + 0.3*rng.Float64()) * simLimit },
		tick: staged{first: 30, bg: 0.0001, size: [2]float64{0.1, 0.3}, dur: [2]float64{10, 10}, hold: [2]float64{10, 20},
			next: func(rng *rand.Rand, _, prev float64) float64 { return prev + 115 + 10*rng.Float64() }}.tick,
	},
}

// staged writes bursts that are deleted again: each of a share size of the filesystem written over dur
// seconds and held hold seconds (each a lowest value and a spread: lowest + spread·U(0,1)); the first
// starts at first, the next when next says. The background grows by up to 2·bg of the filesystem per
// second meanwhile.
type staged struct {
	first, bg       float64
	size, dur, hold [2]float64
	next            func(rng *rand.Rand, now, prev float64) float64
}

func spread(rng *rand.Rand, r [2]float64) float64 { return r[0] + r[1]*rng.Float64() }

func (st staged) tick() func(rng *rand.Rand, t time.Duration, fs *simFS) {
	next, size, left, rate, deleteAt := st.first, 0.0, 0.0, 0.0, 0.0
	return func(rng *rand.Rand, t time.Duration, fs *simFS) {
		now := t.Seconds()
		fs.write(st.bg * simLimit * simStep.Seconds() * 2 * rng.Float64())
		switch {
		case size == 0 && now >= next:
			size = spread(rng, st.size) * simLimit
			left, rate = size, size/spread(rng, st.dur)
		case left > 0:
			n := min(left, rate*simStep.Seconds())
			fs.write(n)
			if left -= n; left <= 0 {
				deleteAt = now + spread(rng, st.hold)
			}
		case size > 0 && now >= deleteAt:
			fs.remove(size)
			size, next = 0, st.next(rng, now, next)
		}
	}
}

const noiseHorizon = 20 * time.Minute

// TestSimulatedNoiseOnly: 20 seeds of each noise kind give no will_fail at all.
func TestSimulatedNoiseOnly(t *testing.T) {
	for _, kind := range noiseKinds {
		var willFails, learned int
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, 99))
			out := simulate(noiseHorizon, seed, kind.used0(rng), kind.tick())
			assert.True(t, out.failAt.IsZero(), "%s seed %d: the noise itself filled the filesystem", kind.name, seed)
			willFails += out.willFails
			if out.last.State != Learning {
				learned++
			}
		}
		t.Logf("%s: %d will_fail events in 20 runs; %d ended with a learned pattern", kind.name, willFails, learned)
		assert.Zero(t, willFails, kind.name)
	}
}

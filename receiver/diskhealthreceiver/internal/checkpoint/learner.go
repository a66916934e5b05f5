// Package checkpoint learns a training job's checkpoint saves from a filesystem's usage over time and
// answers "will the next save fit": it sees write bursts as usage steps between samples, learns their
// size, cadence, duration and the retention around them (keep-N, rotation before or after the save), and
// predicts the headroom at the next saves. It is pure: samples and times in, a prediction out, no I/O.
//
// The model. A burst is a run of samples whose usage moves by more than the background noise. Within a
// burst the learner measures the rise (the largest increase from a low point), the fall (the largest
// decrease from a high point) and which came first. A burst that only rises is a save that kept every
// older copy; one that rises and falls is a save with rotation (the fall first: rotation before the
// save, at most N copies on disk; the rise first: rotation after it, N+1 copies at the peak); one that
// only falls is a deletion. The sizes of the copies on disk are kept oldest first, so the size of a
// save with rotation is exact (its net change plus the size of the copy it removed) even when the
// deletion and part of the write fall between the same two samples. The number of copies kept is how
// many were on disk when rotation was first seen.
//
// The prediction replays the learned cycle forward from now: the filesystem's growth (the larger of
// the usage slope between bursts and the recent trend, another writer's burst included) until each of
// the next Lookahead saves, each save's peak need (its size; minus the
// copy removed first when rotation runs before it) against the free space then. The state is
// will_fail when one of them does not fit, tight when the least headroom is under a quarter of a save,
// fits otherwise; nothing is predicted until three saves at a regular cadence and of one size (±10 %)
// have been seen, so log growth, unpack-and-delete bursts and one-off bulk writes predict nothing.
//
// Each save learned is reported once (Prediction.Saved, Save: its span of samples and its bytes), so
// that Writer can name the cgroup that wrote it from the per-cgroup write counters over that span.
package checkpoint // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/checkpoint"

import (
	"math"
	"slices"
	"time"
)

// State is the answer to "will the next save fit".
type State uint8

const (
	// Learning means: no regular save pattern (yet); nothing is predicted.
	Learning State = iota
	// Fits means: every predicted save fits with room to spare.
	Fits
	// Tight means: every predicted save fits, the closest with less than a quarter of a save to spare.
	Tight
	// WillFail means: one of the next Lookahead saves does not fit.
	WillFail
)

func (s State) String() string {
	switch s {
	case Fits:
		return "fits"
	case Tight:
		return "tight"
	case WillFail:
		return "will_fail"
	}
	return "learning"
}

// Rotation is when the job removes its oldest copy relative to writing a new one.
type Rotation uint8

const (
	// RotationUnknown means: no save has removed a copy yet (or none is removed: keep-all).
	RotationUnknown Rotation = iota
	// RotationBefore means: the oldest copy goes before the save; at most N copies are ever on disk.
	RotationBefore
	// RotationAfter means: the oldest copy goes after the save succeeds; N+1 copies at the peak.
	RotationAfter
)

func (r Rotation) String() string {
	switch r {
	case RotationBefore:
		return "before_save"
	case RotationAfter:
		return "after_save"
	}
	return "unknown"
}

// Reason is why a learner that had a save pattern is learning again.
type Reason uint8

const (
	// ReasonNone means: the pattern was never learned, or is known now.
	ReasonNone Reason = iota
	// ReasonStopped means: no save for three intervals; the job stopped saving (or its saves no longer show).
	ReasonStopped
	// ReasonChanged means: the saves changed size or cadence past what the pattern allows.
	ReasonChanged
	// ReasonNotSaves means: what was learned were not saves (a filesystem's allocation chunks).
	ReasonNotSaves
)

func (r Reason) String() string {
	switch r {
	case ReasonStopped:
		return "stopped_saving"
	case ReasonChanged:
		return "pattern_changed"
	case ReasonNotSaves:
		return "not_saves"
	}
	return "none"
}

// Sample is one reading of a filesystem.
type Sample struct {
	Time time.Time
	// Used is what is allocated (f_blocks − f_bfree); Free is what the writer can still allocate (for a
	// non-root writer f_bavail, or less when another limit binds first).
	Used, Free uint64
}

// Config tunes a Learner. Zero values take the defaults.
type Config struct {
	// History is how many saves (sizes, intervals) the estimates use. Default 5.
	History int
	// Lookahead is how many saves ahead are predicted. Default 2: a save that will not fit is seen
	// before the one ahead of it starts, at least one cadence before it fails.
	Lookahead int
	// MinSaves is how many saves must be seen before anything is predicted. Default 3.
	MinSaves int
	// NoiseFactor: a step is part of a burst when it is larger than this many times the background's
	// usual step. Default 4.
	NoiseFactor float64
	// MinStepFraction: and larger than this fraction of the filesystem. Default 0.0002.
	MinStepFraction float64
	// QuietSamples: a burst ends after this many quiet samples at least. Default 1, so that saves every
	// second scrape (a burst, one quiet sample, the next burst) are bursts of their own. A burst after a
	// long quiet spell may pause longer (see lullAllowance): a save written as fsync'd shards is one save.
	QuietSamples int
}

func (c Config) withDefaults() Config {
	if c.History <= 0 {
		c.History = 5
	}
	if c.Lookahead <= 0 {
		c.Lookahead = 3
	}
	if c.MinSaves <= 0 {
		c.MinSaves = 3
	}
	if c.NoiseFactor <= 0 {
		c.NoiseFactor = 4
	}
	if c.MinStepFraction <= 0 {
		c.MinStepFraction = 0.0002
	}
	if c.QuietSamples <= 0 {
		c.QuietSamples = 1
	}
	return c
}

// Prediction is what a Learner knows after a sample.
type Prediction struct {
	State State
	// Previous is the state before this sample.
	Previous State
	// Alert is set when the state turns will_fail for the first time in an episode: the will_fail
	// event is due. An episode ends once every predicted save has fit for a whole interval, so a
	// prediction that wavers around the limit (a filesystem that allocates in chunks, a save's last
	// step) alerts once, and a job that runs out of room again after space was freed alerts again.
	Alert bool
	// Saves is the number of saves seen.
	Saves int
	// SizeP50 and SizeP90 are the medians and 90th percentiles of the last History saves' sizes.
	SizeP50, SizeP90 uint64
	// Interval is the median time between the starts of the last saves.
	Interval time.Duration
	// NextSave is the time until the next save is expected to start (0 when it is due).
	NextSave time.Duration
	// Headroom is the free space at the next save minus what it needs at its peak (bytes, may be
	// negative); Need is that need.
	Headroom int64
	Need     uint64
	// FailingSave is which predicted save does not fit (1 the next), 0 when all fit; FailsIn the time
	// until it starts.
	FailingSave int
	FailsIn     time.Duration
	// LastDuration and LastThroughput (bytes/s) describe the last save.
	LastDuration   time.Duration
	LastThroughput float64
	// Keep is the number of copies the job keeps (0: unknown, no rotation seen); Rotation when it
	// removes the oldest.
	Keep     int
	Rotation Rotation
	// Background is the filesystem's usage growth outside the learned saves, bytes per second (≥ 0):
	// the larger of the smoothed growth between saves and the recent trend (the median of the last
	// trendWindow steps, the part of a burst past what the save can be included), so another writer
	// filling the disk counts from a few samples on.
	Background float64
	// Filling: the state is will_fail with no save pattern learned (Saves, SizeP50 and Interval are
	// what was seen so far, if anything): the filesystem fills before a save could come (FailsIn: when
	// it is full at the recent growth; Headroom: what is free at the horizon, negative).
	Filling bool
	// Relearning is why a pattern learned before is lost (ReasonNone while one is known, or none was
	// ever learned); Lost is set at the sample it was lost: the relearning event is due.
	Relearning Reason
	Lost       bool
	// Saved is set when this sample completed a save: Save is then that save, for naming its writer.
	Saved bool
	Save  Save
}

// Save is a save just learned: the samples between which the usage rose (From is the last one before
// the burst, To the first quiet one after it, so all of its writes fall in (From, To]) and the bytes it
// saved (its learned size).
type Save struct {
	From, To time.Time
	Bytes    uint64
}

// Learner follows one filesystem. Not safe for concurrent use.
type Learner struct {
	cfg Config

	// last and before are the two samples before this one.
	last, before Sample
	started      bool
	// rates are the last absolute usage changes per second, bursts included: their lower quartile is
	// the noise floor (saves take well under three quarters of any window longer than a cadence, so it
	// is the background's), known from the first samples on. growth is the signed change between
	// bursts, smoothed.
	rates     [noiseWindow]float64
	nrates    int
	growth    float64
	quietSeen int
	// trend holds the last trendWindow steps' usage rates outside the learned saves; excess is how far
	// the burst in progress has risen past what the learned save can be.
	trend  [trendWindow]float64
	ntrend int
	excess float64
	// settling: the last burst ended at the sample before.
	settling bool

	// The burst in progress: from its last quiet sample (burstStart) to its last active one
	// (burstEnd). levels are the usage from the sample before burstStart, so a partial first step of
	// the save, too small to stand out, is in it, to the first quiet sample after burstEnd (the
	// partial last step), spanning spanStart..spanEnd; the background over that span is taken out.
	inBurst            bool
	burstStart         time.Time
	burstEnd           time.Time
	spanStart, spanEnd time.Time
	levels             []uint64
	quiet              int
	// calm counts the samples since the last step of the last burst of a save's scale (or since the
	// first sample): the quiet between saves, a background burst included. burstCalm is the calm the
	// burst in progress began after, lulls how many quiet samples in a row it may pause for and still
	// go on (lullAllowance).
	calm, burstCalm, lulls int
	// trail counts the samples since the burst's last strong step (weak and quiet ones).
	trail int
	// floor is the background's smallest step rate seen in the trail of the last burst of a save's
	// scale (0: none seen; trailFloor).
	floor float64

	copies []uint64 // sizes of the copies on disk, oldest first
	sizes  []uint64 // the last History saves
	starts []time.Time
	// gaps are the calm each of starts' bursts began after, so that pieces of one save taken for saves
	// of their own can be joined once a longer calm shows what a pause is.
	gaps      []int
	saves     int
	keep      int
	rotation  Rotation
	pureSaves int // saves that removed nothing, before rotation was first seen
	// transient: what the last save wrote was deleted again before the next (unpack-and-delete,
	// staging): a save needs its size at its peak and leaves nothing behind.
	transient bool
	lastDur   time.Duration
	lastSize  uint64
	// saved is the save the current sample completed, reported once (saved.Bytes 0: none).
	saved Save
	// Estimates from the saves, as of the last one.
	p50, p90  uint64
	interval  time.Duration
	isRegular bool
	// replay is scratch for the copies predict replays forward.
	replay []uint64

	state State
	// alerted: an Alert was given in the episode still open; fitsSince: when the state last turned
	// fits (zero while it is not).
	alerted   bool
	fitsSince time.Time

	// hidden is the end of the last time the saves could not be seen (a burst of another writer, a
	// restart): the job is taken to have stopped only three intervals after it. gap: saves may have
	// gone unseen since the last one, so the next one's start may be whole intervals later.
	hidden time.Time
	gap    bool
	// unconfirmed: restored from a record not to be believed as it is (Restore's Trust); nothing is
	// predicted until a save is learned on top of it. resumed is a restored learner's first sample: a
	// burst that starts there was in flight across the restart.
	unconfirmed bool
	resumed     time.Time
	// foreign counts the bursts in a row too large to be the learned save: as many as MinSaves of them,
	// each shorter than the interval, are the job's saves grown, not another writer.
	foreign int
	// foreignBytes is what other writers' bursts wrote (at most), so that its deletion is not taken
	// for the job removing its copies.
	foreignBytes uint64
	// filling: the state is will_fail, from the filesystem filling with no pattern known (fillsFirst).
	filling bool
	// everRegular: a pattern was learned once; lost is why it was last dropped; relearn is the reason
	// reported while learning again.
	everRegular bool
	lost        Reason
	relearn     Reason
}

// NewLearner returns a Learner with cfg (zero values: defaults).
func NewLearner(cfg Config) *Learner {
	return &Learner{cfg: cfg.withDefaults()}
}

// Observe takes the next sample (times must increase; an older one is ignored) and returns the
// prediction after it.
func (l *Learner) Observe(s Sample) Prediction {
	prev := l.state
	l.saved = Save{}
	if !l.started {
		if l.gap {
			// Restored: the job's saves could not be seen until now. Its pattern is known, so a save
			// in shards right after the restart may pause as any other does.
			l.hidden = later(l.hidden, s.Time)
			l.calm = maxLulls * calmPerLull
		}
		l.before, l.last, l.started = s, s, true
		return l.predict(s, prev)
	}
	dt := s.Time.Sub(l.last.Time).Seconds()
	if dt <= 0 {
		return l.predict(l.last, prev)
	}
	delta := float64(s.Used) - float64(l.last.Used)
	limit := float64(s.Used + s.Free)
	// A step is judged against the noise before it: counted in its own noise, a fresh learner's first
	// step (a job saving right after the collector started) was always quiet and learned as the
	// background's growth, which then hid the saves after it.
	threshold := max(l.cfg.NoiseFactor*l.noise()*dt, l.cfg.MinStepFraction*limit)
	l.rates[l.nrates%noiseWindow] = math.Abs(delta) / dt
	l.nrates++
	// A burst goes on while steps stay above half the threshold: a save's steps on a filesystem that
	// allocates in chunks (XFS) fall now and then to the threshold, and one such step must not split the
	// save; the background's own steps, around the noise floor, still end it. Such weak steps at its end
	// are the background's, as the quiet ones are.
	strong := math.Abs(delta) > threshold
	active := strong || l.inBurst && math.Abs(delta) > threshold/2
	if active && l.inBurst && (l.quiet > 0 || strong) && !(strong && l.resumes(delta)) {
		// In a lull, only a step of the save's own scale is its next shard; a growing log's allocation
		// chunk (XFS) is the background's, as a quiet sample is. So is a strong step far smaller than
		// the save's: on an idle filesystem whose usage does not move at all (ext4, exact to the block)
		// the noise floor is zero, and a log the job starts with its first save steps well above the
		// threshold's floor for as long as the floor takes to learn it; taken for the save, its steps
		// made the first save run on into the next.
		strong, active = false, false
	}
	switch {
	case active && !l.inBurst:
		l.inBurst, l.burstStart, l.spanStart, l.quiet, l.trail, l.excess = true, l.last.Time, l.before.Time, 0, 0, 0
		l.burstCalm = l.calm
		l.lulls = l.lullAllowance(dt)
		l.levels = append(l.levels[:0], l.before.Used, l.last.Used, s.Used)
		l.burstEnd = s.Time
	case active && len(l.levels) >= MaxBurstSamples:
		// A burst this long is no save the model can use (a bulk copy, a runaway writer): it is
		// dropped and whatever follows starts afresh, so memory stays bounded.
		l.inBurst = false
	case strong:
		l.levels = append(l.levels, s.Used)
		l.burstEnd, l.quiet, l.trail = s.Time, 0, 0
	default:
		if !l.inBurst {
			break
		}
		l.levels = append(l.levels, s.Used)
		if l.trail++; l.trail == 1 {
			l.spanEnd = s.Time
		}
		if active {
			break
		}
		// Only a burst of a save's scale may pause: the background's small bursts (a growing log's
		// allocation chunks every few samples) end at the first quiet one, or they would chain.
		if l.quiet++; l.quiet >= l.lulls || l.quiet >= l.cfg.QuietSamples && !l.saveScale(threshold, limit) {
			if l.saveScale(threshold, limit) {
				l.trailFloor(dt)
			}
			// The samples after the first past the last strong step belong to the background, not the burst.
			l.endBurst(l.levels[:len(l.levels)-l.trail+1], threshold, limit)
			l.inBurst, l.settling = false, true
		}
	}
	l.calm++
	switch {
	case active || l.inBurst:
	case l.settling:
		// The sample after a burst may still hold its tail (a filesystem settling its allocation):
		// not the background's.
		l.settling = false
	default:
		l.learnBackground(delta / dt)
	}
	l.pushTrend(active, s, delta/dt, dt)
	l.before, l.last = l.last, s
	return l.predict(s, prev)
}

// maxLulls bounds the quiet samples a burst may pause for, and maxLull the time: a save's shards are
// fsync'd a second or two apart, so a longer pause is no longer the same save (and at a scrape of a
// minute a save is seen to end at the first quiet scrape, as without shards).
const (
	maxLulls = 3
	maxLull  = 3 * time.Second
)

// calmPerLull is how many samples of calm before a burst allow it one quiet sample of pause: a pause
// half as long as the calm around it is still a lull inside the save.
const calmPerLull = 2

// lullAllowance is how many quiet samples in a row a burst starting now, dt seconds after the sample
// before, may pause for: half the calm before it, at most maxLulls and maxLull, at least QuietSamples.
// A save written as shards, each fsync'd before the next (on a busy device a whole scrape), pauses
// briefly compared with the quiet between saves; saves every few scrapes have as little calm before
// them as their pauses and stay bursts of their own. The save is learned that many samples after its
// last step.
func (l *Learner) lullAllowance(dt float64) int {
	return max(l.cfg.QuietSamples, min(maxLulls, l.burstCalm/calmPerLull, int(maxLull.Seconds()/dt)))
}

// trailFloor keeps the smallest step of the ending burst's trail past its first sample (which may hold
// the save's partial last step), those steps being the background's, as the floor under the noise. On an
// idle ext4 the usage does not move at all (it is exact to the block), so the lower quartile of the rates
// is zero until a quarter of the window has moved, and the growth learned between bursts is zero; a log
// the job starts with its first save then steps far above the threshold, its steps taken for bursts that
// ran on into the next save, and its share of the first save taken for the save's (endBurst). The floor
// is kept only well under the save's own steps, so that the next save's still stand out.
func (l *Learner) trailFloor(dt float64) {
	tail := l.levels[len(l.levels)-l.trail:]
	step := math.Inf(1)
	for i := 1; i < len(tail); i++ {
		step = min(step, math.Abs(float64(tail[i])-float64(tail[i-1])))
	}
	l.floor = 0
	if len(tail) >= 2 && l.cfg.NoiseFactor*step < float64(largestStep(l.levels)) {
		l.floor = step / dt
	}
}

// saveScale reports whether the burst in progress has risen or fallen by as much as a save must.
func (l *Learner) saveScale(threshold, limit float64) bool {
	rise, fall, _, _ := excursions(l.levels)
	return float64(max(rise, fall)) > leastSave(threshold, limit)
}

// leastSave is how far a burst must rise to be a save (or fall to be a deletion): three thresholds and
// a fixed share of the filesystem. On a small one (a project quota of some MiB) the threshold's floor is
// below an allocation chunk (XFS: 64 KiB and more), and a slowly growing log's chunks, one every few
// samples, would be learned as frequent saves; a save smaller than that share cannot decide whether the
// next one fits.
func leastSave(threshold, limit float64) float64 {
	return max(3*threshold, minSaveFraction*limit)
}

// resumes reports whether a strong step of delta after a lull goes on with the burst in progress: a
// step of the save's own scale, a third of its largest step the same way so far (a shard's write may
// fall across two samples), is its next shard; a growing log's allocation chunk (XFS) is the
// background's. After a deletion alone, any strong rise is the save it made room for.
func (l *Learner) resumes(delta float64) bool {
	var largest float64
	for i := 1; i < len(l.levels); i++ {
		if step := float64(l.levels[i]) - float64(l.levels[i-1]); step*delta > 0 {
			largest = max(largest, math.Abs(step))
		}
	}
	return math.Abs(delta) >= largest/3
}

// joinPieces joins the last saves learned into one when the calm before the save ending now shows that
// the pauses between them were a save's lulls: the first save after a start, with little calm before
// it, is allowed no lull and is split at its first fsync. Only while the first pattern is learned and
// nothing was removed yet: the pieces' copies are then the last ones on disk, in order.
func (l *Learner) joinPieces() {
	if l.everRegular || l.rotation != RotationUnknown || l.transient {
		return
	}
	for n := len(l.starts); n >= 2 && len(l.gaps) == n && len(l.sizes) >= 2 && len(l.copies) >= 2; n = len(l.starts) {
		if gap := l.gaps[n-1]; gap > maxLulls || calmPerLull*gap > l.burstCalm {
			return
		}
		piece := l.sizes[len(l.sizes)-1]
		l.sizes = l.sizes[:len(l.sizes)-1]
		l.sizes[len(l.sizes)-1] += piece
		l.copies = l.copies[:len(l.copies)-1]
		l.copies[len(l.copies)-1] += piece
		l.starts, l.gaps = l.starts[:n-1], l.gaps[:n-1]
		l.saves, l.pureSaves = l.saves-1, l.pureSaves-1
		l.lastSize = l.sizes[len(l.sizes)-1]
		l.estimate()
	}
}

// trendWindow is how many recent steps the trend is the median of: a writer filling the disk moves it
// after half of them, a save of a few steps (its part past the learned size only) does not.
const trendWindow = 8

// pushTrend adds this step's usage rate outside the learned saves: a quiet step's rate, or, within a
// burst, the background's plus what the burst rose past the learned save this step (all it rose while
// no pattern is known).
func (l *Learner) pushTrend(active bool, s Sample, rate, dt float64) {
	if active && l.inBurst {
		// While no pattern is known, no save excuses any of it: another writer filling the disk is
		// in the trend from its first steps.
		ex := max(0, float64(s.Used)-float64(l.levels[0]))
		if l.isRegular {
			ex = max(0, ex-l.allowance(s.Time))
		}
		rate = max(0, l.growth) + max(0, ex-l.excess)/dt
		l.excess = max(l.excess, ex)
	}
	l.trend[l.ntrend%trendWindow] = rate
	l.ntrend++
}

// allowance is how far a burst that began at burstStart may rise by now and still be the learned save:
// its 90th percentile with a tenth to spare, and the background's growth over the burst.
func (l *Learner) allowance(now time.Time) float64 {
	return 1.1*float64(l.p90) + max(0, l.growth)*now.Sub(l.spanStart).Seconds()
}

// trendRate is the median of the recent trend.
func (l *Learner) trendRate() float64 {
	n := min(l.ntrend, trendWindow)
	return ringNth(l.trend[:n], n/2)
}

// ringNth is the k-th smallest of v (at most noiseWindow values, left unchanged; 0 when empty).
func ringNth(v []float64, k int) float64 {
	if len(v) == 0 {
		return 0
	}
	var buf [noiseWindow]float64
	r := buf[:len(v)]
	copy(r, v)
	return nth(r, k)
}

// MaxBurstSamples bounds the samples one burst keeps.
const MaxBurstSamples = 4096

// noiseWindow is how many recent rates the noise floor is taken from: at a 10 s scrape about 20
// minutes, so a save may last up to a quarter hour and still stand out of it.
const noiseWindow = 128

// noise is the lower quartile of the recent absolute rates. Each rate alone, not averaged over a few
// samples: saves every second scrape are half of the rates and would be in every average. A
// filesystem that allocates in chunks steps a growing log by a chunk now and then, above this floor:
// those bursts are far smaller than the saves and taken for the background (endBurst). It is never
// below the background's steps seen after the last save (trailFloor), which it may not have learned yet.
func (l *Learner) noise() float64 {
	n := min(l.nrates, noiseWindow)
	return max(l.floor, ringNth(l.rates[:n], n/4))
}

// nth returns the k-th smallest of v (reordering v): quickselect, linear on average, where a sort of
// the window every sample was most of a sample's cost.
func nth(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	for lo < hi {
		pivot := v[(lo+hi)/2]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

// learnBackground smooths the usage rate between bursts: the growth replayed forward.
func (l *Learner) learnBackground(rate float64) {
	const alpha = 0.1
	l.quietSeen++
	if l.quietSeen == 1 {
		l.growth = rate
		return
	}
	l.growth += alpha * (rate - l.growth)
}

// endBurst classifies the finished burst whose levels (the one before it first) are given.
func (l *Learner) endBurst(levels []uint64, threshold, limit float64) {
	if len(levels) < 2 {
		return
	}
	if !l.resumed.IsZero() && !l.burstStart.After(l.resumed) {
		// It was in flight when the collector restarted: only its second part was seen, no save's size
		// (a save's half would change the pattern). The saves it may hold count as unseen.
		l.hidden = later(l.hidden, l.burstEnd)
		return
	}
	rise, fall, riseAt, fallAt := excursions(levels)
	first, lastLevel := levels[0], levels[len(levels)-1]
	minSave, least := 3*threshold, leastSave(threshold, limit)
	if float64(max(rise, fall)) > least {
		// A burst of a save's scale, whatever it turns out to be: the calm before the next starts at
		// its last strong step (the quiet samples it waited for are calm), so that bursts closer
		// together than a lull are never one.
		l.calm = max(0, l.trail-1)
	}
	// The background kept writing during the burst: its share is not the save's.
	bgRate := l.growth
	if bgRate == 0 {
		// Every quiet sample so far was flat (an idle ext4 moves not one block): what the background
		// writes now is seen in the trail only. The floor is its smallest step, not its mean, so that a
		// save's tail in the trail is not taken out of the save.
		bgRate = l.floor
	}
	background := int64(max(0, bgRate) * l.spanEnd.Sub(l.spanStart).Seconds())
	net := int64(lastLevel) - int64(first) - background
	raw := max(rise, fall)
	rise = uint64(max(0, int64(rise)-background))

	wrote := float64(rise) > least
	if wrote {
		l.joinPieces()
	}
	// A fall counts as rotation when it is a real share of what was written, not the shrinking of a
	// temporary file next to the save.
	removed := float64(fall) > least && (float64(fall) > 0.3*float64(rise) || !wrote)
	// A filesystem that allocates in chunks (XFS preallocates past an appended file's end) steps a
	// slowly growing log's usage a chunk at a time: bursts as regular as saves, just above the noise
	// threshold, and far smaller than real saves. Such a burst is the background's growth; a save far
	// larger than every one learned, all of them that small, shows that those were such chunks.
	chunk := func(size uint64) bool { return float64(size) < scaleGap*minSave }
	size := uint64(max(net, int64(rise)))
	// A burst too small to be a save or a deletion is the background moving in a larger step than
	// usual (the noise floor is each step's own rate, and an allocation chunk stands out of it): its
	// growth is the background's, which would be underestimated without it.
	//
	// Its rate is learned over the steps not learned yet, once each: from the burst's first sample
	// (levels[1]) to its first quiet one. The step into it (from levels[0]) was a quiet one, learned as
	// such when it came; learned again inside the burst's rate, it took a log that XFS grows a 64 KiB
	// chunk (allocsize) every three or four scrapes for three quarters of its growth (50 of 70 KB/s on
	// the project quota of TestFSScraperCheckpointSeededProjectQuota), and every save on it was measured
	// larger by the rest over the save's span (+0.11 MiB of 3.4 MiB, carried from save to save).
	if !wrote && !removed || wrote && !removed && l.saves > 0 && chunk(size) && size*scaleGap < l.p50 {
		// Only a burst below a save's scale measures the background: a fresh learner's first save, judged
		// against a noise its own steps still dominate, or a save the background learned already hides,
		// would make the background larger still, and every save after it the background's.
		if span := l.spanEnd.Sub(l.burstStart).Seconds(); span > 0 && len(levels) > 2 && float64(raw) <= minSaveFraction*limit {
			rate := (float64(lastLevel) - float64(levels[1])) / span
			for range len(levels) - 2 {
				l.learnBackground(rate)
			}
		}
		return
	}
	if wrote && l.saves > 0 && chunk(slices.Max(l.sizes)) && rise > scaleGap*slices.Max(l.sizes) {
		l.forgetSaves(ReasonNotSaves)
	}
	if wrote && l.isRegular && float64(rise) > 2*float64(l.p90) {
		// Far more than the learned save: another writer (filling the disk, copying a data set), whose
		// writes may hide the job's saves but say nothing about them. The pattern stays; only bursts
		// like this one again and again, each as short as a save, are the job's saves grown.
		// A job that had stopped saving before it (three intervals) and saves this much now has
		// changed: learned afresh.
		short := l.burstEnd.Sub(l.burstStart) < l.interval
		stale := l.burstStart.Sub(later(l.starts[len(l.starts)-1], l.hidden)) > 3*l.interval
		if l.foreign++; !stale && (!short || l.foreign < l.cfg.MinSaves) {
			l.hidden, l.gap, l.foreignBytes = l.burstEnd, true, l.foreignBytes+rise
			return
		}
		l.forgetSaves(ReasonChanged)
	}
	l.foreign = 0
	switch {
	case wrote && !removed:
		l.save(uint64(max(net, int64(rise))))
	case wrote && removed:
		old, known := l.popOldest()
		size = rise
		if known && net+int64(old) > 0 {
			// Exact when the copy's own size is. The rise alone misses the part of the write that shares
			// a step with the removal: at most its largest step or, when the removal came first and the
			// fall is short of the copy removed, what it is short by (a save's first shard written in
			// the removal's step; after the save, a filesystem freeing the copy in the background, as
			// XFS does, falls short too). Kept within those bounds, an error in one copy's size does
			// not carry into every later one.
			hidden := largestStep(levels)
			if fallAt < riseAt && old > fall {
				hidden = max(hidden, old-fall)
			}
			size = min(max(uint64(net+int64(old)), rise), rise+hidden)
		}
		if l.rotation == RotationUnknown && l.keep == 0 && l.pureSaves > 0 && known {
			// Copies on disk when rotation first ran: the ones kept.
			l.keep = len(l.copies) + 1
		}
		if fallAt < riseAt {
			l.rotation = RotationBefore
		} else {
			l.rotation = RotationAfter
		}
		l.save(size)
	case removed:
		// A deletion outside a save: what other writers wrote goes first, then copies, oldest first,
		// until the freed space is accounted for.
		freed := min(fall, l.foreignBytes)
		l.foreignBytes -= freed
		for len(l.copies) > 0 && freed+l.copies[0]/2 < fall {
			old, _ := l.popOldest()
			freed += old
		}
		l.transient = l.saves > 0 && len(l.copies) == 0
	}
}

// minSaveFraction is the share of the filesystem a burst must rise by to be a save.
const minSaveFraction = 0.002

// scaleGap is how many times smaller than the saves learned a burst is background, and how many times
// larger than all of them a save shows that they were not saves.
const scaleGap = 8

// forgetSaves drops what was learned from saves (the bursts taken for saves were not, or the saves
// changed), for reason.
func (l *Learner) forgetSaves(reason Reason) {
	if l.isRegular {
		l.lost = reason
	}
	l.copies, l.sizes, l.starts, l.gaps = l.copies[:0], l.sizes[:0], l.starts[:0], l.gaps[:0]
	l.saves, l.keep, l.rotation, l.pureSaves, l.transient = 0, 0, RotationUnknown, 0, false
	l.p50, l.p90, l.interval, l.isRegular = 0, 0, 0, false
}

// save records a save of size bytes that took the burst's time.
func (l *Learner) save(size uint64) {
	if len(l.copies) > 0 {
		// The previous save is still there: saves are kept.
		l.transient = false
	}
	if l.rotation == RotationUnknown {
		l.pureSaves++
	}
	l.saves++
	l.copies = append(l.copies, size)
	l.sizes = appendBounded(l.sizes, size, l.cfg.History)
	if l.gap && l.isRegular && len(l.starts) > 0 {
		// Saves went unseen (another writer's burst, a restart): a start whole intervals after the last
		// one seen is the cadence going on, and the starts before are moved up to keep it.
		if k := math.Round(float64(l.burstStart.Sub(l.starts[len(l.starts)-1])) / float64(l.interval)); k >= 2 {
			for i := range l.starts {
				l.starts[i] = l.starts[i].Add(time.Duration(k-1) * l.interval)
			}
		}
	}
	l.gap, l.unconfirmed = false, false
	l.starts = appendBounded(l.starts, l.burstStart, l.cfg.History+1)
	l.gaps = appendBounded(l.gaps, l.burstCalm, l.cfg.History+1)
	l.lastDur = l.burstEnd.Sub(l.burstStart)
	l.lastSize = size
	l.saved = Save{From: l.spanStart, To: l.spanEnd, Bytes: size}
	wasRegular := l.isRegular
	l.estimate()
	if wasRegular && !l.isRegular {
		l.lost = ReasonChanged
	}
}

// estimate computes the size and cadence estimates from the saves kept: once per save (or restore),
// not once per sample.
func (l *Learner) estimate() {
	l.p50, l.p90 = quantile(l.sizes, 0.5), quantile(l.sizes, 0.9)
	l.interval = 0
	if len(l.starts) >= 2 {
		l.interval = quantile(intervals(l.starts), 0.5)
	}
	wasRegular := l.isRegular
	l.isRegular = l.regular(l.interval)
	if l.isRegular && !wasRegular {
		// The trend held the saves themselves while none was known (fillsFirst): from now on it holds
		// what goes past them, starting from the background learned between them, so that it moves
		// only after half the window, as it does otherwise. Started empty, its first step alone was
		// the trend: on XFS, a growing log's allocation chunk in that step (a whole chunk a scrape)
		// predicted will_fail at the save the pattern was learned at.
		for i := range l.trend {
			l.trend[i] = max(0, l.growth)
		}
		l.ntrend = trendWindow
	}
	l.everRegular = l.everRegular || l.isRegular
}

func (l *Learner) popOldest() (uint64, bool) {
	if len(l.copies) == 0 {
		return 0, false
	}
	old := l.copies[0]
	l.copies = l.copies[1:]
	return old, true
}

func appendBounded[T any](s []T, v T, n int) []T {
	if len(s) == n {
		copy(s, s[1:])
		s = s[:n-1]
	}
	return append(s, v)
}

// largestStep is the largest increase between consecutive levels.
func largestStep(levels []uint64) uint64 {
	var step uint64
	for i := 1; i < len(levels); i++ {
		if levels[i] > levels[i-1] {
			step = max(step, levels[i]-levels[i-1])
		}
	}
	return step
}

// excursions returns the largest rise from an earlier low and the largest fall from an earlier high
// of levels, with the indexes where each was reached.
func excursions(levels []uint64) (rise, fall uint64, riseAt, fallAt int) {
	lo, hi := levels[0], levels[0]
	for i, v := range levels {
		lo, hi = min(lo, v), max(hi, v)
		if v-lo > rise {
			rise, riseAt = v-lo, i
		}
		if hi-v > fall {
			fall, fallAt = hi-v, i
		}
	}
	return rise, fall, riseAt, fallAt
}

// How much larger than the smallest save kept the largest may be: to learn a pattern (sizeSpread), the
// sizes within ±10 % of one size, as close as the learned size is to be to every save; to keep one
// learned (keptSpread), more, so that a save measured with part of another writer's burst in it does
// not drop the pattern while that writer fills the disk. A job saves the same state every time;
// unpack-and-delete bursts of 37–62 MiB that came at a steady cadence by chance
// (TestFSScraperCheckpointRealTimeShapes' noise: 51, 46 and 62 MiB, 37 and 38 scrapes apart) were taken
// for a staging job's saves when 1.5 was allowed to learn one, and a copy then for a save that will not fit.
const (
	sizeSpread = 1.1 / 0.9
	keptSpread = 1.5
)

// regular reports whether the saves so far are a pattern: enough of them, starts at a steady cadence
// and sizes that agree.
func (l *Learner) regular(interval time.Duration) bool {
	if l.saves < l.cfg.MinSaves || len(l.starts) < 3 || interval <= 0 {
		return false
	}
	ivs := intervals(l.starts)
	lo, hi := slices.Min(ivs), slices.Max(ivs)
	if float64(hi) > 1.5*float64(lo) {
		return false
	}
	sizes := slices.Clone(l.sizes)
	slices.Sort(sizes)
	spread := sizeSpread
	if l.isRegular {
		spread = keptSpread
	}
	return float64(sizes[len(sizes)-1]) <= spread*float64(sizes[0])
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func intervals(starts []time.Time) []time.Duration {
	ivs := make([]time.Duration, 0, len(starts)-1)
	for i := 1; i < len(starts); i++ {
		ivs = append(ivs, starts[i].Sub(starts[i-1]))
	}
	return ivs
}

// quantile is the q-quantile of v (nearest rank), v unchanged.
func quantile[T uint64 | time.Duration](v []T, q float64) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// sustained is how many steps in a row a writer must keep its rate to be taken for one filling the disk:
// half the trend window, as long as the trend takes to follow it.
const sustained = trendWindow / 2

// fillsFirst reports whether, with no save pattern known, the filesystem fills before a save could come:
// a writer sustained over the last steps (its slowest step well above the noise floor; a save's or an
// unpack's burst pauses or ends within them) fills what is free by the scrape after next (twice that to
// leave the state once in it); a longer horizon would take a large copy that stops short of full for a
// filling disk. It sets p's FailsIn (when the free space runs out at that rate) and Headroom (what is
// free at that horizon, negative).
func (l *Learner) fillsFirst(s Sample, p *Prediction) bool {
	dt := s.Time.Sub(l.before.Time)
	if l.ntrend < sustained || dt <= 0 {
		return false
	}
	rate := math.Inf(1)
	for k := 1; k <= sustained; k++ {
		rate = min(rate, l.trend[(l.ntrend-k)%trendWindow])
	}
	if rate <= l.cfg.NoiseFactor*l.noise() {
		return false
	}
	horizon := 2 * dt
	if l.filling {
		horizon *= 2
	}
	full := float64(s.Free) / rate
	p.FailsIn = time.Duration(full * float64(time.Second))
	p.Headroom = int64(math.Round(float64(s.Free) - rate*horizon.Seconds()))
	return full <= horizon.Seconds()
}

// predict replays the learned cycle forward from s.
func (l *Learner) predict(s Sample, prev State) Prediction {
	p := Prediction{Previous: prev, Saves: l.saves, Keep: l.keep, Rotation: l.rotation, Background: max(0, l.growth, l.trendRate())}
	p.SizeP50, p.SizeP90, p.Interval, p.LastDuration = l.p50, l.p90, l.interval, l.lastDur
	p.Saved, p.Save = l.saved.Bytes > 0, l.saved
	if l.lastDur > 0 {
		p.LastThroughput = float64(l.lastSize) / l.lastDur.Seconds()
	}
	// A job that stopped saving (three intervals without a save, or since its saves could last be
	// seen) predicts nothing until it saves again; a pattern lost says why, once.
	// A burst is measured from its start: one that began that late does not bring the pattern back
	// until it is a save that fits it.
	ref := s.Time
	if l.inBurst {
		ref = l.burstStart
	}
	stopped := l.isRegular && ref.Sub(later(l.starts[len(l.starts)-1], l.hidden)) > 3*l.interval
	wasFilling := l.filling
	if !l.isRegular || stopped || l.unconfirmed {
		if prev != Learning && !wasFilling && l.everRegular {
			l.relearn, p.Lost = l.lost, true
			if stopped || l.relearn == ReasonNone {
				l.relearn = ReasonStopped
			}
		}
		l.fitsSince, l.lost = time.Time{}, ReasonNone
		p.State, p.Relearning = Learning, l.relearn
		// No pattern hides a filling disk: will_fail, once per episode, when it fills before a save
		// could come.
		if l.filling = l.fillsFirst(s, &p); l.filling {
			p.State, p.Filling = WillFail, true
			p.Alert, l.alerted = !l.alerted, true
		} else {
			// The episode is over: the fill stopped, or the pattern whose will_fail was said is lost.
			// Kept, that alert would silence the next filling disk.
			l.alerted = false
		}
		l.state = p.State
		return p
	}
	l.filling = false
	l.relearn = ReasonNone
	// The replay starts from now and the next save due after it; while a burst that can still be the
	// save runs, from its start and the save it is, so the state does not swing with the levels inside
	// a save. A burst past the learned save (another writer) is not credited: the free space it took
	// is gone, and the saves come at their cadence on top of it.
	base, free := s.Time, float64(s.Free)
	next := l.starts[len(l.starts)-1].Add(p.Interval)
	if l.inBurst && l.excess == 0 && s.Time.Sub(l.burstStart) <= p.Interval {
		base, next = l.burstStart, l.burstStart
		free += float64(s.Used) - float64(l.levels[1])
	}
	if next.Before(base) {
		next = next.Add((base.Sub(next)/p.Interval + 1) * p.Interval)
	}
	p.NextSave = max(0, next.Sub(s.Time))
	// Room for the copies and, as each predicted save pops one and appends one, two per save.
	l.replay = append(slices.Grow(l.replay[:0], len(l.copies)+2*l.cfg.Lookahead), l.copies...)
	copies := l.replay
	if l.transient {
		// What the last save wrote is deleted before the next, as every time so far.
		for _, c := range copies {
			free += float64(c)
		}
	}
	least := math.Inf(1)
	for k := range l.cfg.Lookahead {
		at := next.Add(time.Duration(k) * p.Interval)
		freeThen := free - p.Background*at.Sub(base).Seconds()
		// need is the save's peak above the level before it; after it, removed goes again.
		need, removed := float64(p.SizeP90), 0.0
		switch {
		case l.transient:
			removed = float64(p.SizeP50)
		case l.keep > 0 && len(copies) >= l.keep, l.keep == 0 && l.rotation != RotationUnknown:
			removed = float64(p.SizeP50)
			if len(copies) > 0 {
				removed = float64(copies[0])
				copies = copies[1:]
			}
			if l.rotation == RotationBefore {
				need = max(0, need-removed)
			}
		}
		if !l.transient {
			copies = append(copies, p.SizeP50)
		}
		headroom := freeThen - need
		if k == 0 {
			p.Headroom, p.Need = int64(math.Round(headroom)), uint64(need)
		}
		least = min(least, headroom)
		if headroom < 0 && p.FailingSave == 0 {
			p.FailingSave, p.FailsIn = k+1, max(0, at.Sub(s.Time))
		}
		free += removed - float64(p.SizeP50)
	}
	// A state is left only past a margin, so that the noise of one sample does not flap it (and send
	// an event each time).
	s90 := float64(p.SizeP90)
	switch {
	case p.FailingSave > 0, prev == WillFail && least < 0.1*s90:
		p.State = WillFail
	case least < 0.25*s90, prev == Tight && least < 0.35*s90:
		p.State = Tight
	default:
		p.State = Fits
	}
	l.state = p.State
	switch {
	case p.State == WillFail:
		p.Alert, l.alerted, l.fitsSince = !l.alerted, true, time.Time{}
	case p.State != Fits:
		l.fitsSince = time.Time{}
	case l.fitsSince.IsZero():
		l.fitsSince = s.Time
	case s.Time.Sub(l.fitsSince) >= p.Interval:
		l.alerted = false
	}
	return p
}

package noisy

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Config holds the verdict's thresholds. The receiver validates them (latency.per_cgroup.noisy_neighbor).
type Config struct {
	// K: the victim's signal must reach K times its own baseline.
	K float64
	// Share: another cgroup must hold at least this share (0–1) of the device's occupancy.
	Share float64
	// MinVictimIOs: the victim must have completed at least this many requests on the device in the
	// interval, so that its tail latency is a tail and not one request.
	MinVictimIOs uint64
	// WarmUp is how many intervals with MinVictimIOs learn a baseline before it can judge.
	WarmUp int
	// Alpha is the weight of a new interval in the baseline once warm (EWMA in log space).
	Alpha float64
	// ClearAfter is how many intervals in a row without the condition close an episode.
	ClearAfter int
	// ForgetAfter is how many intervals a (cgroup, device) may go unseen before its state is freed.
	ForgetAfter int
}

// DefaultConfig returns the defaults docs/block-latency.md argues for.
func DefaultConfig() Config {
	return Config{K: 3, Share: 0.5, MinVictimIOs: 20, WarmUp: 10, Alpha: 0.1, ClearAfter: 3, ForgetAfter: 30}
}

// StallFloor is the least stall baseline (a share of the interval): a cgroup that never stalled
// has a baseline near 0, and k × 0 would call any stall an episode.
const StallFloor = 0.01

// Sample is one cgroup's interval on one device.
type Sample struct {
	Cgroup string
	// IOs is the requests it completed on the device in the interval.
	IOs uint64
	// Busy is its requests' time in flight on the device in the interval, seconds: its occupancy.
	Busy float64
	// Latency is its victim signal, seconds: the tail of its requests' latency in the interval (see
	// Quantile). 0 when it did nothing.
	Latency float64
	// Stall is its I/O pressure stall time (io.pressure "some") in the interval, seconds, when HasStall
	// (cgroup v2); it is the cgroup's over every device.
	Stall    float64
	HasStall bool
}

// Device is one device's interval.
type Device struct {
	Device string
	// Busy is the time in flight of every request on the device in the interval, owned or not; when
	// below the samples' sum, that sum is used.
	Busy    float64
	Samples []Sample
}

// Aggressor is a cgroup holding at least Config.Share of the victim's device.
type Aggressor struct {
	Cgroup string
	Share  float64
}

// Episode is one open (or just closed) noisy-neighbour episode of a victim on a device.
type Episode struct {
	Victim, Device string
	// Aggressors are those named when the episode opened, largest share first.
	Aggressors []Aggressor
	// VictimShare is the victim's own share when it opened.
	VictimShare float64
	// Latency and LatencyBaseline are the victim's signal and its baseline when it opened (seconds).
	Latency, LatencyBaseline float64
	// Stall and StallBaseline are the victim's stall share of the interval and its baseline when it
	// opened, if HasStall.
	Stall, StallBaseline float64
	HasStall             bool
	// Since is when it opened.
	Since time.Time
}

// Kind tells an opening from a closing.
type Kind int

// The kinds of Event.
const (
	// Opened: the episode's first interval.
	Opened Kind = iota
	// Cleared: the interval that closed it.
	Cleared
)

// Event is an episode opening or closing at At.
type Event struct {
	Kind Kind
	Episode
	At time.Time
}

// key is one (cgroup, device).
type key struct{ cgroup, device string }

// baseline is a geometric mean learned over the warm-up, then an EWMA in log space: latency is
// log-normal-ish, so a 10× spike moves it as much as a 10× dip and a single stall cannot drag it.
// Once warm, an interval at k × the baseline or more is not learned on its own: it is the very
// signal the verdict judges, and an aggressor a hair under the share (the interval it started in)
// would otherwise raise the normal it is then judged against. Such intervals are held aside; a run
// of WarmUp of them in a row, with no episode, is a new normal (a slower device is slow for
// everyone) and becomes the baseline.
type baseline struct {
	logMean float64
	n       int
	// spikeLog and spikes are the sum of the logs and the count of the run of spikes held aside.
	spikeLog float64
	spikes   int
}

// learn takes v; hot says v reached k × the baseline (only meaningful once ready).
func (b *baseline) learn(v float64, hot bool, c *Config) {
	if v <= 0 {
		return
	}
	if hot && b.ready(c) {
		b.spikeLog += math.Log(v)
		if b.spikes++; b.spikes >= c.WarmUp {
			b.logMean = b.spikeLog / float64(b.spikes)
			b.spikeLog, b.spikes = 0, 0
		}
		return
	}
	b.spikeLog, b.spikes = 0, 0
	b.n++
	a := c.Alpha
	if b.n <= c.WarmUp {
		a = 1 / float64(b.n) // the warm-up's plain geometric mean
	}
	b.logMean += a * (math.Log(v) - b.logMean)
}

func (b *baseline) ready(c *Config) bool { return b.n >= c.WarmUp }

func (b *baseline) value() float64 { return math.Exp(b.logMean) }

// track is what the engine keeps per (cgroup, device).
type track struct {
	lat, stall baseline
	seen       uint64 // the interval it was last in the input
	ep         *Episode
	below      int // intervals in a row without the condition, while open
}

// Engine is the verdict's state. Not safe for concurrent use.
type Engine struct {
	cfg    Config
	tracks map[key]*track
	n      uint64 // intervals seen
	last   time.Time
}

// New returns an engine with cfg, which must be valid.
func New(cfg Config) *Engine { return &Engine{cfg: cfg, tracks: map[key]*track{}} }

// Update takes one interval ending at ts and returns the episodes it opened and closed, in the
// order of devs and their samples (then, for cgroups gone, by device and cgroup).
func (e *Engine) Update(ts time.Time, devs []Device) []Event {
	e.n++
	dt := 0.0
	if !e.last.IsZero() {
		dt = ts.Sub(e.last).Seconds()
	}
	e.last = ts
	var out []Event
	for i := range devs {
		out = e.device(ts, dt, &devs[i], out)
	}
	var gone []key
	for k, t := range e.tracks {
		if t.seen != e.n {
			gone = append(gone, k)
		}
	}
	slices.SortFunc(gone, func(a, b key) int { return cmp.Or(cmp.Compare(a.device, b.device), cmp.Compare(a.cgroup, b.cgroup)) })
	for _, k := range gone {
		t := e.tracks[k]
		// A victim that did nothing this interval gives no evidence of waiting: the episode runs
		// down as after an interval below.
		if t.ep != nil {
			if t.below++; t.below >= e.cfg.ClearAfter {
				out = append(out, Event{Kind: Cleared, Episode: *t.ep, At: ts})
				t.ep = nil
			}
		}
		if e.n-t.seen >= uint64(e.cfg.ForgetAfter) {
			if t.ep != nil {
				out = append(out, Event{Kind: Cleared, Episode: *t.ep, At: ts})
			}
			delete(e.tracks, k)
		}
	}
	return out
}

func (e *Engine) device(ts time.Time, dt float64, d *Device, out []Event) []Event {
	c := &e.cfg
	total := 0.0
	for i := range d.Samples {
		total += d.Samples[i].Busy
	}
	total = max(total, d.Busy)
	share := func(s *Sample) float64 {
		if total <= 0 {
			return 0
		}
		return s.Busy / total
	}
	// The cgroups that hold at least Share, largest first: at most 1/Share of them, so each victim's
	// aggressors are these but itself.
	var holders []Aggressor
	for j := range d.Samples {
		if s := share(&d.Samples[j]); s >= c.Share && s > 0 {
			holders = append(holders, Aggressor{d.Samples[j].Cgroup, s})
		}
	}
	slices.SortFunc(holders, func(a, b Aggressor) int {
		return cmp.Or(cmp.Compare(b.Share, a.Share), cmp.Compare(a.Cgroup, b.Cgroup))
	})
	for i := range d.Samples {
		v := &d.Samples[i]
		k := key{v.Cgroup, d.Device}
		t := e.tracks[k]
		if t == nil {
			t = &track{}
			e.tracks[k] = t
		}
		t.seen = e.n
		var aggr []Aggressor
		for _, h := range holders {
			if h.Cgroup != v.Cgroup {
				aggr = append(aggr, h)
			}
		}
		enough := v.IOs >= c.MinVictimIOs
		latHigh := v.Latency >= c.K*t.lat.value()
		latHot := enough && t.lat.ready(c) && latHigh
		stallShare, stallOK := 0.0, v.HasStall && dt > 0
		if stallOK {
			stallShare = v.Stall / dt
		}
		stallHigh := stallShare >= c.K*max(t.stall.value(), StallFloor)
		stallHot := enough && stallOK && t.stall.ready(c) && stallHigh
		hot := (latHot || stallHot) && len(aggr) > 0
		switch {
		case t.ep == nil && hot:
			ep := &Episode{Victim: v.Cgroup, Device: d.Device, Aggressors: aggr, VictimShare: share(v),
				Latency: v.Latency, LatencyBaseline: t.lat.value(), Since: ts}
			if stallOK && t.stall.ready(c) {
				ep.HasStall, ep.Stall, ep.StallBaseline = true, stallShare, t.stall.value()
			}
			t.ep, t.below = ep, 0
			out = append(out, Event{Kind: Opened, Episode: *ep, At: ts})
		case t.ep == nil && enough:
			// The baseline learns only outside episodes: frozen, it still says what normal was
			// when the episode ends.
			t.lat.learn(v.Latency, latHigh, c)
			if stallOK {
				// A stall of 0 is a fine sample: floored, so its log is finite.
				t.stall.learn(max(stallShare, StallFloor/10), stallHigh, c)
			}
		case t.ep != nil && hot:
			t.below = 0
		case t.ep != nil && !enough && len(aggr) > 0:
			// Too few requests to judge while the aggressor still holds the device: hold.
		case t.ep != nil:
			if t.below++; t.below >= c.ClearAfter {
				out = append(out, Event{Kind: Cleared, Episode: *t.ep, At: ts})
				t.ep = nil
			}
		}
	}
	return out
}

// Open returns the open episodes, by device and victim.
func (e *Engine) Open() []Episode {
	var out []Episode
	for _, t := range e.tracks {
		if t.ep != nil {
			out = append(out, *t.ep)
		}
	}
	slices.SortFunc(out, func(a, b Episode) int {
		return cmp.Or(cmp.Compare(a.Device, b.Device), cmp.Compare(a.Victim, b.Victim))
	})
	return out
}

// Baseline returns the latency baseline of cgroup on device (seconds) and whether it is warm.
func (e *Engine) Baseline(cgroup, device string) (float64, bool) {
	t := e.tracks[key{cgroup, device}]
	if t == nil || t.lat.n == 0 {
		return 0, false
	}
	return t.lat.value(), t.lat.ready(&e.cfg)
}

// Tracked is the number of (cgroup, device) the engine holds state for.
func (e *Engine) Tracked() int { return len(e.tracks) }

// Quantile is the q-quantile (0 < q ≤ 1) of an exponential histogram of the given scale: the
// upper bound of the bucket that holds it (zeroThreshold for the zero bucket), 0 when empty.
// Baseline and signal come from the same estimate, so the bucket's width (9 % at scale 3) cancels.
func Quantile(zeroCount uint64, zeroThreshold float64, offset int32, buckets []uint64, scale int, q float64) float64 {
	count := zeroCount
	for _, n := range buckets {
		count += n
	}
	if count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(count)))
	rank = max(rank, 1)
	seen := zeroCount
	if seen >= rank {
		return zeroThreshold
	}
	for i, n := range buckets {
		if seen += n; seen >= rank {
			return math.Exp2(float64(offset+int32(i)+1) / float64(int(1)<<scale))
		}
	}
	return math.Exp2(float64(offset+int32(len(buckets))) / float64(int(1)<<scale))
}

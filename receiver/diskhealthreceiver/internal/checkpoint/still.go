package checkpoint // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/checkpoint"

// Still is a Learner's state for as long as the usage has not moved, in a few scalars: most filesystems
// a collector follows never see a checkpoint (the root, /boot, a read-only image), and a Learner is
// 1.5 KiB (its noise and trend windows) that would learn nothing there. Samples whose usage is where it
// was teach a Learner only counts (each is a quiet step at rate 0: one more zero rate in the noise and
// trend windows, one more sample of calm, background growth 0) and which two samples came last, so
// Learner rebuilds, from those, the Learner that saw the same samples, field for field.
//
// The zero Still has seen no sample. Not safe for concurrent use.
type Still struct {
	before, last Sample
	started      bool
	// steps counts the samples taken after the first (an older one is ignored, as a Learner does).
	steps int
}

// Observe takes the next sample as Learner.Observe would, and reports whether the usage is still where
// it was: the prediction is then a Learner's after the same samples, the zero Prediction (learning,
// nothing seen). When it is false, s moved the usage and was not taken: the caller makes the Learner
// (q.Learner) and gives it s.
func (q *Still) Observe(s Sample) bool {
	switch {
	case !q.started:
		q.before, q.last, q.started = s, s, true
	case !s.Time.After(q.last.Time):
		// A Learner ignores a sample no later than the last, whatever its usage.
	case s.Used != q.last.Used:
		return false
	default:
		q.before, q.last = q.last, s
		q.steps++
	}
	return true
}

// Learner returns the Learner of cfg that saw the samples q took, to go on from there: what
// Learner.Observe leaves after a first sample and steps samples of unchanged usage.
func (q *Still) Learner(cfg Config) *Learner {
	l := NewLearner(cfg)
	if !q.started {
		return l
	}
	// rates, trend and growth stay 0: each step's rate was 0.
	l.before, l.last, l.started = q.before, q.last, true
	l.nrates, l.ntrend, l.calm, l.quietSeen = q.steps, q.steps, q.steps, q.steps
	return l
}

package checkpoint

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const mib = 1 << 20

// sharedFS is a filesystem of limit bytes shared by a checkpointing job (saves of size written at rate,
// starting every cadence, keep-keep rotation after the save) and another writer filling it at fillRate
// from fillFrom to fillUntil (zero: never stops), sampled every scrape. A write that does not fit is
// cut short, as ENOSPC cuts it, and a save cut short ends the job.
type sharedFS struct {
	limit, base, size, rate float64
	cadence, scrape         time.Duration
	keep                    int
	fillRate                float64
	fillFrom, fillUntil     time.Duration

	used, filled float64
	copies       []float64
	writing      float64 // what the save in progress has written (0: none)
	next         time.Duration
}

func (f *sharedFS) write(n float64) float64 {
	n = max(0, min(n, f.limit-f.used))
	f.used += n
	return n
}

// step advances the filesystem by one scrape ending at at and returns its sample.
func (f *sharedFS) step(at time.Duration) Sample {
	h := f.scrape.Seconds()
	if f.used == 0 {
		f.used, f.next = f.base, f.cadence
	}
	if f.fillRate > 0 && at > f.fillFrom && (f.fillUntil == 0 || at <= f.fillUntil) {
		f.filled += f.write(f.fillRate * h)
	}
	if f.writing == 0 && at >= f.next {
		f.writing, f.next = 1, f.next+f.cadence
		f.copies = append(f.copies, 0)
	}
	if f.writing > 0 {
		want := min(f.rate*h, f.size-f.copies[len(f.copies)-1])
		n := f.write(want)
		f.copies[len(f.copies)-1] += n
		if n < want {
			f.writing, f.next = 0, 1<<62 // ENOSPC: the job dies
		}
		if f.copies[len(f.copies)-1] >= f.size {
			f.writing = 0
			if len(f.copies) > f.keep {
				f.used -= f.copies[0]
				f.copies = f.copies[1:]
			}
		}
	}
	return Sample{Time: simT0.Add(at), Used: uint64(f.used), Free: uint64(f.limit - f.used)}
}

// issueFS is the issue's case: saves of 100 MiB every 12 s (written at 50 MiB/s, keep 2, rotation after
// the save), 624 MiB free between them, scraped every second; another writer fills the filesystem at
// 70 MiB/s from the 10th save on.
func issueFS() *sharedFS {
	return &sharedFS{limit: 1024 * mib, base: 200 * mib, size: 100 * mib, rate: 50 * mib, cadence: 12 * time.Second,
		scrape: time.Second, keep: 2, fillRate: 70 * mib, fillFrom: 120 * time.Second}
}

// TestLearnerFollowsAFillingDisk (issue 31): while another writer fills the filesystem, the headroom at
// the next save follows the free space (never above what is free now minus the save), the state turns
// will_fail and alerts while there is still free space, a save due at free 0 is will_fail, and the
// pattern is kept until the job (killed by ENOSPC) has not saved for three intervals, when learning
// starts again with that reason said. The original learner kept +524 MiB and fits down to free 0,
// then went back to learning without a word.
func TestLearnerFollowsAFillingDisk(t *testing.T) {
	f := issueFS()
	l := NewLearner(Config{})
	var alertFree float64 = -1
	var fullSeen int
	var fullAt time.Duration
	for at := time.Duration(0); at <= 240*time.Second; at += f.scrape {
		s := f.step(at)
		p := l.Observe(s)
		if at < f.fillFrom {
			continue
		}
		if p.State == Learning {
			require.True(t, p.Lost, "at %v: learning again is said", at)
			assert.Equal(t, ReasonStopped, p.Relearning)
			assert.GreaterOrEqual(t, at-fullAt, 3*f.cadence, "the pattern stays three intervals past the last save")
			break
		}
		if at >= f.fillFrom+4*f.scrape {
			assert.LessOrEqual(t, p.Headroom, int64(s.Free)-int64(p.Need), "at %v: the headroom at the next save is at most what is free now, minus the save", at)
		}
		if p.Alert && alertFree < 0 {
			alertFree = float64(s.Free)
		}
		if s.Free == 0 {
			fullSeen++
			if fullAt == 0 {
				fullAt = at
			}
			assert.Equal(t, WillFail, p.State, "at %v: free 0 with a save due", at)
			assert.Negative(t, p.Headroom, "at %v", at)
		}
	}
	require.Positive(t, fullSeen, "the filesystem filled")
	assert.Positive(t, alertFree, "will_fail alerted while space was still free")
	t.Logf("will_fail alerted at %.0f MiB free", alertFree/mib)
}

// TestLearnerKeepsThePatternThroughAFill: a fill of 300 MiB by another writer, deleted again after,
// does not erase what was learned: the state stays known all along, the size learned stays the job's,
// and the next save is counted on top of the ones before (the original learned the fill as a save of
// 300 MiB and lost the pattern).
func TestLearnerKeepsThePatternThroughAFill(t *testing.T) {
	f := issueFS()
	f.fillUntil = f.fillFrom + 4*time.Second
	l := NewLearner(Config{})
	var before Prediction
	deleted := false
	for at := time.Duration(0); at <= 240*time.Second; at += f.scrape {
		if !deleted && at >= f.fillUntil+38*time.Second { // between two saves
			f.used -= f.filled
			deleted = true
		}
		p := l.Observe(f.step(at))
		if at < f.fillFrom {
			before = p
			continue
		}
		require.NotEqual(t, Learning, p.State, "at %v", at)
		assert.Equal(t, before.SizeP50, p.SizeP50, "at %v: the size learned stays the save's", at)
		assert.Zero(t, p.Relearning, "at %v", at)
		before.Saves = max(before.Saves, p.Saves)
	}
	assert.Equal(t, 18, before.Saves, "the saves after the fill are counted on top of the ones before (19 made, one hidden in the fill)")
}

// TestLearnerLearnsFrequentSaves (issue 31): saves every 2, 3, 4 and 6 scrapes (a 30 s scrape, saves of
// 4 GiB written in 10 s and kept, a slowly growing log) are learned: their size and cadence, and a
// prediction. (A save written and rotated within one scrape does not move the usage at all: nothing
// can see it.) The original learned nothing under about six scrapes.
func TestLearnerLearnsFrequentSaves(t *testing.T) {
	for _, every := range []int{2, 3, 4, 6} {
		f := &sharedFS{limit: 1 << 40, base: 100 << 30, size: 4 << 30, rate: 400 * mib, scrape: 30 * time.Second,
			cadence: time.Duration(every) * 30 * time.Second, keep: 1 << 20}
		l := NewLearner(Config{})
		var p Prediction
		for at := time.Duration(0); at <= 12*f.cadence; at += f.scrape {
			f.used += 1 * mib // the log
			p = l.Observe(f.step(at))
		}
		assert.NotEqual(t, Learning, p.State, "every %d scrapes", every)
		assert.InDelta(t, 4<<30, float64(p.SizeP50), 0.1*(4<<30), "every %d scrapes", every)
		assert.Equal(t, f.cadence, p.Interval, "every %d scrapes", every)
		assert.GreaterOrEqual(t, p.Saves, 10, "every %d scrapes", every)
	}
}

// keptSaves is issueFS's job with every save kept (no rotation) on a filesystem with room for all.
func keptSaves() *sharedFS {
	f := issueFS()
	f.fillRate, f.limit, f.keep = 0, 16<<30, 1<<20
	return f
}

// observeFor feeds l n more scrapes of f from at on and returns the time after them, the last
// prediction and the reasons of the patterns lost meanwhile.
func observeFor(l *Learner, f *sharedFS, at time.Duration, n int) (time.Duration, Prediction, []Reason) {
	var p Prediction
	var lost []Reason
	for range n {
		at += f.scrape
		if p = l.Observe(f.step(at)); p.Lost {
			lost = append(lost, p.Relearning)
		}
	}
	return at, p, lost
}

// TestLearnerSaysWhyItRelearns: a pattern lost is said, once, with its reason, and stays said while
// learning again: a job that stops saving, and saves far larger again and again (a model grown).
func TestLearnerSaysWhyItRelearns(t *testing.T) {
	f := keptSaves()
	l := NewLearner(Config{})
	at := time.Duration(0)
	for ; at <= 60*time.Second; at += f.scrape {
		require.False(t, l.Observe(f.step(at)).Lost, "nothing learned is lost while learning the first time")
	}
	require.NotEqual(t, Learning, l.Observe(f.step(at)).State)
	f.next = 1 << 40 // the job stops saving
	var lost []Prediction
	for range 60 {
		at += f.scrape
		p := l.Observe(f.step(at))
		if p.Lost {
			lost = append(lost, p)
		}
		if p.State == Learning {
			assert.Equal(t, ReasonStopped, p.Relearning)
		}
	}
	require.Len(t, lost, 1, "said once")
	assert.Equal(t, ReasonStopped, lost[0].Relearning)
	assert.Equal(t, "stopped_saving", lost[0].Relearning.String())

	f.next, f.size = at+f.scrape, 400*mib // saves again, four times larger: learned afresh
	_, p, again := observeFor(l, f, at, 120)
	assert.Empty(t, again, "the job saving again is no new loss")
	assert.NotEqual(t, Learning, p.State)
	assert.InDelta(t, 400*mib, float64(p.SizeP50), 40*mib, "the saves of the new size are learned")
	assert.Zero(t, p.Relearning)
}

// TestLearnerSaysAChangedPattern: saves far larger than learned, again and again at the cadence, are the
// saves changed: said once as pattern_changed, then learned (the saves kept, no rotation).
func TestLearnerSaysAChangedPattern(t *testing.T) {
	f := keptSaves()
	l := NewLearner(Config{})
	at, _, _ := observeFor(l, f, -f.scrape, 101)
	f.size, f.rate = 1000*mib, 500*mib
	_, p, lost := observeFor(l, f, at, 150)
	assert.Equal(t, []Reason{ReasonChanged}, lost)
	assert.NotEqual(t, Learning, p.State)
	assert.InDelta(t, 1000*mib, float64(p.SizeP50), 100*mib)
}

// TestLearnerAlertsAgainAfterThePatternIsLost: a will_fail said while a pattern was learned does not
// silence the next filling disk once that pattern is lost. The issue's fill kills the job (ENOSPC);
// the other writer's data is deleted and the pattern lost (the job stopped saving); then another
// writer fills the disk while nothing is learned: will_fail (filling without a pattern) is said again
// before ENOSPC. The learner kept the first episode's alert across the lost pattern and said nothing.
func TestLearnerAlertsAgainAfterThePatternIsLost(t *testing.T) {
	f := issueFS()
	l := NewLearner(Config{})
	alerts := 0
	at := time.Duration(0)
	for ; at <= 200*time.Second; at += f.scrape {
		if l.Observe(f.step(at)).Alert {
			alerts++
		}
	}
	require.Equal(t, 1, alerts, "the first fill is said once")
	// The other writer stops and its data goes: the disk has room again, and the dead job saves no more.
	f.fillUntil = at
	f.used -= f.filled
	f.filled = 0
	var p Prediction
	for range 60 {
		at += f.scrape
		p = l.Observe(f.step(at))
		require.False(t, p.Alert, "at %v: nothing new to say while the disk has room", at)
	}
	require.Equal(t, Learning, p.State, "the pattern is lost: the job stopped saving")
	// Another writer fills the disk while nothing is learned.
	f.fillRate, f.fillFrom, f.fillUntil = 40*mib, at, 0
	alertFree := -1.0
	for s := f.step(at); s.Free > 0; s = f.step(at) {
		if p = l.Observe(s); p.Alert {
			require.True(t, p.Filling, "at %v: the alert is the fill's", at)
			alertFree = float64(s.Free)
		}
		at += f.scrape
	}
	require.Positive(t, alertFree, "will_fail said again before ENOSPC")
	t.Logf("said again at %.0f MiB free", alertFree/mib)
}

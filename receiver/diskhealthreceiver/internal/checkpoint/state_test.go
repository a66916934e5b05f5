package checkpoint

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testOwner = "uuid 4f1c0a3e-5d7b-4c8e-9a21-6b3f0e9d2c17"

// learnedIssueJob is issueFS's job (without the other writer) learned for 70 s: five saves of 100 MiB
// every 12 s, keep 2.
func learnedIssueJob(t *testing.T) (*Learner, *sharedFS, time.Duration, Prediction) {
	t.Helper()
	f := issueFS()
	f.fillRate = 0
	return learnedJob(t, f)
}

// learnedJob is f's job learned for 70 s.
func learnedJob(t *testing.T, f *sharedFS) (*Learner, *sharedFS, time.Duration, Prediction) {
	t.Helper()
	l := NewLearner(Config{})
	at := time.Duration(0)
	var p Prediction
	for ; at < 70*time.Second; at += f.scrape {
		p = l.Observe(f.step(at))
	}
	require.NotEqual(t, Learning, p.State)
	return l, f, at, p
}

// TestLearnerSurvivesARestart (issue 31): a learner stored after five saves and restored into a new
// one (a collector restarted half a minute later) predicts from its first sample, with the size,
// cadence and retention learned before, and keeps predicting through the next save; a fresh learner
// needs three saves. The original had nothing to restore from (it needed 6–7 saves after a restart).
func TestLearnerSurvivesARestart(t *testing.T) {
	l, f, at, before := learnedIssueJob(t)
	data := l.MarshalRecord(testOwner)
	assert.Less(t, len(data), 2048, "compact")

	for end := at + 30*time.Second; at < end; at += f.scrape {
		f.step(at) // the collector is down; the job goes on saving
	}
	restored, fresh := NewLearner(Config{}), NewLearner(Config{})
	first := f.step(at)
	trust, err := restored.Restore(data, testOwner, first)
	require.NoError(t, err)
	assert.Equal(t, Trusted, trust)
	for end := at + 30*time.Second; at < end; at += f.scrape {
		s := first
		if at > first.Time.Sub(simT0) {
			s = f.step(at)
		}
		p := restored.Observe(s)
		assert.NotEqual(t, Learning, p.State, "at %v: the restored learner predicts", at)
		assert.Equal(t, before.SizeP50, p.SizeP50)
		assert.Equal(t, before.Interval, p.Interval)
		assert.Equal(t, before.Keep, p.Keep)
		assert.Equal(t, before.Rotation, p.Rotation)
		assert.Equal(t, Learning, fresh.Observe(s).State, "at %v: a fresh learner has seen at most two saves", at)
	}
	assert.Greater(t, restored.saves, before.Saves, "the saves after the restart are learned on top")
}

// TestLearnerStateRefusesBadData: another version, data cut anywhere, bytes past the end or lists past
// their bounds are refused with an error, never a panic, and leave the learner as it was.
func TestLearnerStateRefusesBadData(t *testing.T) {
	l, f, at, _ := learnedIssueJob(t)
	data := l.MarshalRecord(testOwner)
	first := f.step(at)
	for n := range len(data) {
		fresh := NewLearner(Config{})
		_, err := fresh.Restore(data[:n], testOwner, first)
		require.Error(t, err, "cut at %d", n)
		assert.Zero(t, fresh.saves)
	}
	_, err := NewLearner(Config{}).Restore(append([]byte{stateVersion - 1}, data[1:]...), testOwner, first)
	require.ErrorContains(t, err, "version")
	_, err = NewLearner(Config{}).Restore(append(append([]byte{}, data...), 0), testOwner, first)
	require.ErrorContains(t, err, "past its end")

	c := *l
	c.copies = make([]uint64, maxStateCopies+1)
	long := c.MarshalRecord(testOwner)
	c.copies = nil
	short := c.MarshalRecord(testOwner)
	// The copies' count is the first byte where the two differ; 65 copies are written as 64.
	i := 0
	for long[i] == short[i] {
		i++
	}
	long[i] = maxStateCopies + 1
	_, err = NewLearner(Config{}).Restore(long, testOwner, first)
	assert.ErrorContains(t, err, "at most")
}

// TestRestoreRefusesARecordWithoutSizes (issue 43): a record of three saves at a regular cadence and no
// size panicked the collector at every start (index out of range in Learner.regular); it is refused.
func TestRestoreRefusesARecordWithoutSizes(t *testing.T) {
	l, f, at, _ := learnedIssueJob(t)
	l.sizes = nil
	first := f.step(at)
	r := NewLearner(Config{})
	_, err := r.Restore(l.MarshalRecord(testOwner), testOwner, first)
	require.ErrorContains(t, err, "sizes")
	assert.Equal(t, Learning, r.Observe(first).State, "learned afresh")
}

// TestRestoreRefusesNonsense (issue 43): records that decode but hold values no learner writes are
// refused, naming the value; each was accepted before and gave a headroom of −9.22e18 B, a will_fail
// of 8.0 EiB, 4.6e18 copies or a save of −1e9 s.
func TestRestoreRefusesNonsense(t *testing.T) {
	for _, c := range []struct {
		name, want string
		spoil      func(l *Learner)
	}{
		{"NaN growth", "background growth", func(l *Learner) { l.growth = math.NaN() }},
		{"infinite growth", "background growth", func(l *Learner) { l.growth = math.Inf(1) }},
		{"growth past the filesystem each millisecond", "background growth", func(l *Learner) { l.growth = -2000 * gib }},
		{"infinite noise", "usage rate", func(l *Learner) { l.rates[3] = math.Inf(1) }},
		{"negative noise", "usage rate", func(l *Learner) { l.rates[0] = -1 }},
		{"a save of 2^63 B", "save size", func(l *Learner) { l.sizes[2] = 1 << 63 }},
		{"a save larger than the filesystem", "save size", func(l *Learner) { l.sizes[0] = 2 * gib }},
		{"copies past the filesystem", "copies on disk", func(l *Learner) { l.copies = []uint64{900 * mib, 900 * mib} }},
		{"4.6e18 copies kept", "copies kept", func(l *Learner) { l.keep = 4.6e18 }},
		{"a save of −1e9 s", "duration", func(l *Learner) { l.lastDur = -1e9 * time.Second }},
		{"a save of two years", "duration", func(l *Learner) { l.lastDur = 2 * maxSpan }},
		{"the last save's size negative", "last save", func(l *Learner) { l.lastSize = 1 << 63 }},
		{"negative saves", "saves", func(l *Learner) { l.saves = -1 }},
		{"more saves before rotation than saves", "before rotation", func(l *Learner) { l.pureSaves = l.saves + 1 }},
		{"starts going back", "interval", func(l *Learner) { l.starts[3] = l.starts[1] }},
		{"a cadence of two years", "interval", func(l *Learner) {
			for i := range l.starts {
				l.starts[i] = l.starts[i].Add(-time.Duration(len(l.starts)-i) * maxSpan)
			}
		}},
		{"a save after the record", "written at", func(l *Learner) { l.starts[len(l.starts)-1] = l.last.Time.Add(time.Second) }},
		{"saves hidden after the record", "hidden", func(l *Learner) { l.hidden = l.last.Time.Add(time.Hour) }},
		{"more starts than saves", "starts", func(l *Learner) { l.saves = 2 }},
		{"an unknown state", "unknown", func(l *Learner) { l.state = WillFail + 1 }},
		{"never sampled", "written", func(l *Learner) { l.last = Sample{} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, f, at, _ := learnedIssueJob(t)
			c.spoil(l)
			r := NewLearner(Config{})
			_, err := r.Restore(l.MarshalRecord(testOwner), testOwner, f.step(at))
			require.ErrorContains(t, err, c.want)
			assert.Zero(t, r.saves, "left as it was")
		})
	}
}

// untrustedRun restores the learned issue job into a new learner at first (at, on f) and observes n
// scrapes of f from there, checking that nothing is predicted and nothing said until a save is
// learned; it returns the predictions from that save on.
func untrustedRun(t *testing.T, data []byte, owner string, f *sharedFS, at time.Duration, want Trust, n int) []Prediction {
	t.Helper()
	r := NewLearner(Config{})
	trust, err := r.Restore(data, owner, f.step(at))
	require.NoError(t, err)
	require.Equal(t, want, trust)
	var after []Prediction
	confirmed := false
	for i := 0; i < n; i, at = i+1, at+f.scrape {
		s := Sample{Time: simT0.Add(at), Used: uint64(f.used), Free: uint64(f.limit - f.used)}
		if i > 0 {
			s = f.step(at)
		}
		p := r.Observe(s)
		if confirmed = confirmed || p.Saved; confirmed {
			after = append(after, p)
			continue
		}
		require.Equal(t, Learning, p.State, "scrape %d: nothing predicted before a save", i)
		require.False(t, p.Alert || p.Lost, "scrape %d: no event", i)
	}
	return after
}

// TestRestoredStaleRecordWaitsForASave (issue 43): a pattern stored a month ago, its job stopped, on a
// filesystem another writer has filled since (less free than a save): before, will_fail and its event
// at the first scrape, and again at every restart; now nothing is predicted, and nothing stored back
// makes it trusted. When the job saves again as before, it predicts at once.
func TestRestoredStaleRecordWaitsForASave(t *testing.T) {
	l, f, at, before := learnedIssueJob(t)
	data := l.MarshalRecord(testOwner)
	f.base += 800 * mib
	f.used += 800 * mib
	f.next = 1 << 62 // the job stopped
	later := at + 30*24*time.Hour
	r := NewLearner(Config{})
	trust, err := r.Restore(data, testOwner, f.step(later))
	require.NoError(t, err)
	require.Equal(t, Stale, trust)
	for i := range 10 * 12 {
		p := r.Observe(f.step(later + time.Duration(i)*f.scrape))
		require.Equal(t, Learning, p.State, "scrape %d", i)
		require.False(t, p.Alert || p.Lost, "scrape %d: no event", i)
	}
	// Stored back at shutdown, restored at once: still not believed.
	later += 10 * 12 * f.scrape
	again := NewLearner(Config{})
	trust, err = again.Restore(r.MarshalRecord(testOwner), testOwner, f.step(later))
	require.NoError(t, err)
	assert.NotEqual(t, Trusted, trust)

	// The job saves again on the filesystem it had: the first save confirms the pattern.
	f2 := issueFS()
	f2.fillRate = 0
	f2.used, f2.copies, f2.next = f.used-800*mib, f.copies, later+5*time.Second
	after := untrustedRun(t, data, testOwner, f2, later, Stale, 60)
	require.NotEmpty(t, after)
	assert.NotEqual(t, Learning, after[0].State, "predicts from the first save on")
	assert.Equal(t, before.SizeP50, after[0].SizeP50)
	assert.Equal(t, before.Interval, after[0].Interval)
}

// TestRestoredRecordFromTheFuture (issue 43): a record written a day after the first sample (the clock
// went back a day) kept fits with the next save 86 393 s away; now it predicts nothing until a save,
// then the next save is within a cadence.
func TestRestoredRecordFromTheFuture(t *testing.T) {
	l, f, at, before := learnedIssueJob(t)
	for i := range l.starts {
		l.starts[i] = l.starts[i].Add(24 * time.Hour)
	}
	l.last.Time = l.last.Time.Add(24 * time.Hour)
	after := untrustedRun(t, l.MarshalRecord(testOwner), testOwner, f, at, Future, 40)
	require.NotEmpty(t, after)
	for _, p := range after {
		require.NotEqual(t, Learning, p.State)
		assert.LessOrEqual(t, p.NextSave, before.Interval)
	}
}

// TestRestoredRecordOfAnotherFilesystem (issue 43): a record under the same key written for another
// filesystem (an anonymous 0:N reused after a reboot) gave a false will_fail on a filesystem with less
// free than its saves; now it predicts nothing until a save, and stored back under the new owner it
// is still not believed.
func TestRestoredRecordOfAnotherFilesystem(t *testing.T) {
	l, f, at, _ := learnedIssueJob(t)
	data := l.MarshalRecord("nfs srv:/a / nfs4 /mnt/a")
	f.used += 700 * mib
	f.next = 1 << 62
	r := NewLearner(Config{})
	trust, err := r.Restore(data, testOwner, f.step(at))
	require.NoError(t, err)
	require.Equal(t, Foreign, trust)
	for i := range 60 {
		p := r.Observe(f.step(at + time.Duration(i)*f.scrape))
		require.Equal(t, Learning, p.State)
		require.False(t, p.Alert || p.Lost)
	}
	trust, err = NewLearner(Config{}).Restore(r.MarshalRecord(testOwner), testOwner, f.step(at+60*f.scrape))
	require.NoError(t, err)
	assert.Equal(t, Unconfirmed, trust)
}

// TestRestartInsideASave (issue 43): a restart whose first sample falls inside a save (the issue's
// job written over four scrapes, at 25 MiB/s) kept learning the save's second half (100, 100, 50 MiB),
// lost the pattern with a false "saves changed" and predicted nothing for five saves. The save in
// flight is not learned: the restored pattern predicts at every scrape, its size unchanged.
func TestRestartInsideASave(t *testing.T) {
	f := issueFS()
	f.fillRate, f.rate = 0, 25*mib
	l, f, at, before := learnedJob(t, f)
	data := l.MarshalRecord(testOwner)
	for ; f.writing == 0 || f.copies[len(f.copies)-1] < f.size/2; at += f.scrape {
		f.step(at) // down until a save is half written
	}
	require.Positive(t, f.copies[len(f.copies)-1])
	require.Less(t, f.copies[len(f.copies)-1], f.size)
	r := NewLearner(Config{})
	s := Sample{Time: simT0.Add(at - f.scrape), Used: uint64(f.used), Free: uint64(f.limit - f.used)}
	trust, err := r.Restore(data, testOwner, s)
	require.NoError(t, err)
	require.Equal(t, Trusted, trust)
	for i := range 5 * 12 {
		if i > 0 {
			s = f.step(at)
			at += f.scrape
		}
		p := r.Observe(s)
		require.NotEqual(t, Learning, p.State, "scrape %d: the restored pattern predicts", i)
		require.False(t, p.Lost, "scrape %d: no pattern lost", i)
		assert.Equal(t, before.SizeP50, p.SizeP50, "scrape %d", i)
	}
	assert.Equal(t, before.Saves+4, r.saves, "the four saves after the one in flight are learned")
}

// FuzzRestore: any record restores or is refused without a panic; one restored observes samples
// without a panic, predicts only with a size within the filesystem and a cadence, and stores a record
// that restores again.
func FuzzRestore(f *testing.F) {
	f.Add(NewLearner(Config{}).MarshalRecord(testOwner))
	src := issueFS()
	l := NewLearner(Config{})
	for at := time.Duration(0); at < 100*time.Second; at += src.scrape {
		l.Observe(src.step(at))
		if at%(17*time.Second) == 0 {
			f.Add(l.MarshalRecord(testOwner))
		}
	}
	l.sizes = nil
	f.Add(l.MarshalRecord(testOwner))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1024 * mib
		first := Sample{Time: simT0.Add(101 * time.Second), Used: 600 * mib, Free: limit - 600*mib}
		r := NewLearner(Config{})
		if _, err := r.Restore(data, testOwner, first); err != nil {
			return
		}
		for i, used := range []uint64{600, 650, 700, 700, 600, 600, 650, 1024, 1024, 0} {
			p := r.Observe(Sample{Time: first.Time.Add(time.Duration(i) * time.Second), Used: used * mib, Free: limit - used*mib})
			if p.State != Learning {
				require.Positive(t, p.Interval)
				require.LessOrEqual(t, p.SizeP90, uint64(limit))
			}
		}
		_, err := NewLearner(Config{}).Restore(r.MarshalRecord(testOwner), testOwner, Sample{Time: first.Time.Add(time.Minute), Used: 0, Free: limit})
		require.NoError(t, err, "what a restored learner stores restores again")
	})
}

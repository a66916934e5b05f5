package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	gib = 1 << 30
	tib = 1 << 40
)

// job is a deterministic training job at real scale: a save of size every cadence, written at rate,
// with keep-N rotation, on a filesystem of limit bytes holding base bytes of other data.
type job struct {
	limit, base, size, rate uint64
	cadence, scrape         time.Duration
	keep                    int
	rotation                Rotation
}

// run feeds the learner one sample per scrape until saves saves have completed and one more scrape
// after, and returns every prediction with the usage it was made at.
func (j job) run(l *Learner, saves int) (preds []Prediction, used []uint64) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var copies []uint64
	level := func(at time.Duration) uint64 {
		u := j.base
		copies = copies[:0]
		for k := 0; k < saves; k++ {
			start := time.Duration(k+1) * j.cadence
			if at < start {
				break
			}
			if j.rotation == RotationBefore && len(copies) == j.keep {
				copies = copies[1:]
			}
			written := min(j.size, uint64((at-start).Seconds()*float64(j.rate)))
			copies = append(copies, written)
			if written == j.size && j.rotation == RotationAfter && len(copies) > j.keep {
				copies = copies[1:]
			}
		}
		for _, c := range copies {
			u += c
		}
		return u
	}
	end := time.Duration(saves+1)*j.cadence - j.scrape
	for at := time.Duration(0); at <= end; at += j.scrape {
		u := level(at)
		preds = append(preds, l.Observe(Sample{Time: t0.Add(at), Used: u, Free: j.limit - u}))
		used = append(used, u)
	}
	return preds, used
}

// TestLearnerKeepAfterNeedsOneMoreCopy is the case: saves of 300 GiB every 2 h with keep-3, a
// disk that holds three copies but not the fourth one the save makes before rotation removes the
// oldest. The usage trend between saves is flat, so a trend forecast sees no end; the learner
// names the save that will fail.
func TestLearnerKeepAfterNeedsOneMoreCopy(t *testing.T) {
	j := job{limit: 2 * tib, base: 900 * gib, size: 300 * gib, rate: 1 * gib, cadence: 2 * time.Hour, scrape: time.Minute, keep: 3, rotation: RotationAfter}
	preds, used := j.run(NewLearner(Config{}), 3)
	p := preds[len(preds)-1]
	require.Equal(t, 3, p.Saves)
	assert.Equal(t, WillFail, p.State)
	assert.Equal(t, 1, p.FailingSave, "the fourth save, the next one")
	assert.Equal(t, uint64(300*gib), p.SizeP50)
	assert.InDelta(t, float64(2*time.Hour), float64(p.Interval), float64(time.Minute))
	assert.Equal(t, int64(j.limit-used[len(used)-1])-int64(300*gib), p.Headroom, "free now minus one save")
	assert.InDelta(t, 300, p.LastDuration.Seconds(), 60, "300 GiB at 1 GiB/s, seen at a 1 min scrape")
	assert.InDelta(t, float64(gib), p.LastThroughput, 0.25*gib)
	assert.Zero(t, p.Keep, "no rotation seen yet")
}

// TestLearnerLearnsRotation: the same disk with rotation before the save never holds more than three
// copies, and once the learner has seen a rotation it knows, and predicts that the saves fit.
func TestLearnerLearnsRotation(t *testing.T) {
	for _, rot := range []Rotation{RotationBefore, RotationAfter} {
		j := job{limit: 4 * tib, base: 900 * gib, size: 300 * gib, rate: 1 * gib, cadence: 2 * time.Hour, scrape: time.Minute, keep: 3, rotation: rot}
		if rot == RotationBefore {
			j.limit = 1800*gib + 100*gib
		}
		preds, _ := j.run(NewLearner(Config{}), 6)
		p := preds[len(preds)-1]
		assert.Equal(t, 3, p.Keep, rot)
		assert.Equal(t, rot, p.Rotation)
		assert.Equal(t, uint64(300*gib), p.SizeP50, rot)
		assert.Equal(t, Fits, p.State, rot)
		if rot == RotationBefore {
			assert.Zero(t, p.Need, "the copy removed first makes room for the new one")
		} else {
			assert.Equal(t, uint64(300*gib), p.Need, "the fourth copy exists until rotation")
		}
	}
}

// TestLearnerNeedsAPattern: two saves, or saves at an irregular cadence, predict nothing.
func TestLearnerNeedsAPattern(t *testing.T) {
	j := job{limit: 2 * tib, base: 1700 * gib, size: 100 * gib, rate: 1 * gib, cadence: time.Hour, scrape: time.Minute, keep: 5, rotation: RotationAfter}
	preds, _ := j.run(NewLearner(Config{}), 2)
	for _, p := range preds {
		assert.Equal(t, Learning, p.State)
	}
	assert.Equal(t, 2, preds[len(preds)-1].Saves)

	l := NewLearner(Config{})
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	used := uint64(1000 * gib)
	at := time.Duration(0)
	for _, gap := range []time.Duration{10 * time.Minute, 50 * time.Minute, 15 * time.Minute, 90 * time.Minute} {
		for end := at + gap; at < end; at += time.Minute {
			l.Observe(Sample{Time: t0.Add(at), Used: used, Free: 2*tib - used})
		}
		used += 50 * gib
	}
	p := l.Observe(Sample{Time: t0.Add(at), Used: used, Free: 2*tib - used})
	assert.Equal(t, 3, p.Saves, "every burst seen (the last still running)")
	assert.Equal(t, Learning, p.State, "irregular bursts are no checkpoint pattern")
}

// TestLearnerIgnoresOldSamples: a sample not after the last one changes nothing.
func TestLearnerIgnoresOldSamples(t *testing.T) {
	l := NewLearner(Config{})
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	l.Observe(Sample{Time: t0, Used: 10, Free: 90})
	p := l.Observe(Sample{Time: t0, Used: 50, Free: 50})
	assert.Equal(t, Learning, p.State)
	assert.Zero(t, l.nrates)
}

func TestStrings(t *testing.T) {
	assert.Equal(t, []string{"learning", "fits", "tight", "will_fail"}, []string{Learning.String(), Fits.String(), Tight.String(), WillFail.String()})
	assert.Equal(t, []string{"unknown", "before_save", "after_save"}, []string{RotationUnknown.String(), RotationBefore.String(), RotationAfter.String()})
}

// FuzzLearner: any sequence of samples (times going back, usage above the size, zero sizes) gives a
// prediction without panicking, and a state other than learning only with a learned size and cadence
// (or, filling, with none).
func FuzzLearner(f *testing.F) {
	f.Add([]byte{0, 10, 90, 1, 10, 90, 2, 60, 40, 3, 10, 90})
	f.Fuzz(func(t *testing.T, data []byte) {
		l := NewLearner(Config{})
		t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		for i := 0; i+2 < len(data); i += 3 {
			p := l.Observe(Sample{Time: t0.Add(time.Duration(data[i]) * time.Second), Used: uint64(data[i+1]) << 30, Free: uint64(data[i+2]) << 30})
			if p.State != Learning && !p.Filling {
				require.Positive(t, p.Interval)
				require.Positive(t, p.SizeP50)
			}
		}
	})
}

// TestLearnerBoundsABurst: a burst that never ends (steps of 1 GiB, each followed by a quiet one, so
// neither the noise floor nor two quiet samples end it) is dropped at MaxBurstSamples.
func TestLearnerBoundsABurst(t *testing.T) {
	// A noise factor this low keeps the alternating writer one burst, and a burst ends only after two
	// quiet samples (by default one ends it: saves every two scrapes are bursts of their own).
	l := NewLearner(Config{NoiseFactor: 0.01, QuietSamples: 2})
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	used, longest := uint64(0), 0
	for i := range 3 * MaxBurstSamples {
		if i%2 == 0 {
			used += gib
		} else {
			used += 1 << 20
		}
		l.Observe(Sample{Time: t0.Add(time.Duration(i) * time.Second), Used: used, Free: tib})
		longest = max(longest, len(l.levels))
		require.LessOrEqual(t, len(l.levels), MaxBurstSamples)
	}
	assert.Equal(t, MaxBurstSamples, longest, "the burst reached the bound")
}

// TestLearnerForgetsAStoppedJob: three intervals without a save and nothing is predicted any more.
func TestLearnerForgetsAStoppedJob(t *testing.T) {
	j := job{limit: 4 * tib, base: 900 * gib, size: 300 * gib, rate: gib, cadence: 2 * time.Hour, scrape: time.Minute, keep: 3, rotation: RotationAfter}
	l := NewLearner(Config{})
	preds, used := j.run(l, 4)
	require.NotEqual(t, Learning, preds[len(preds)-1].State)
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	u := used[len(used)-1]
	p := l.Observe(Sample{Time: t0.Add(4*2*time.Hour + 3*2*time.Hour + time.Minute), Used: u, Free: 4*tib - u})
	assert.Equal(t, Learning, p.State)
}

// TestLearnerAlertsOncePerEpisode: a prediction that wavers around the limit alerts once; only after
// every save has fit for a whole interval (space was freed) does running out of room alert again.
func TestLearnerAlertsOncePerEpisode(t *testing.T) {
	j := job{limit: 2 * tib, base: 900 * gib, size: 300 * gib, rate: 1 * gib, cadence: 2 * time.Hour, scrape: time.Minute, keep: 3, rotation: RotationAfter}
	l := NewLearner(Config{})
	preds, used := j.run(l, 3)
	var alerts int
	for _, p := range preds {
		if p.Alert {
			alerts++
		}
	}
	require.Equal(t, WillFail, preds[len(preds)-1].State)
	require.Equal(t, 1, alerts, "the first will_fail alerts")
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(4*j.cadence - j.scrape)
	u := used[len(used)-1]
	step := func(free uint64) Prediction {
		at = at.Add(j.scrape)
		return l.Observe(Sample{Time: at, Used: u, Free: free})
	}
	alerts = 0
	for i := range 8 { // wavering: room for two saves, then for none, every few minutes
		free := uint64(2 * j.size)
		if i%4 == 0 {
			free = j.size / 2
		}
		p := step(free)
		if p.Alert {
			alerts++
		}
	}
	assert.Zero(t, alerts, "no new episode while the state wavers")
	for range 60 { // room for every save for half an interval
		require.Equal(t, Fits, step(10*j.size).State)
	}
	assert.False(t, step(j.size/2).Alert, "fits for half an interval: the episode goes on")
	for range 121 {
		require.Equal(t, Fits, step(10*j.size).State)
	}
	p := step(j.size / 2)
	assert.Equal(t, WillFail, p.State)
	assert.True(t, p.Alert, "after fitting for a whole interval, a new episode alerts")
}

// TestLearnerReplaysXFSRuns replays real runs of the QEMU guest's XFS project quota (64 KiB end-of-file
// preallocation chunks; testdata/*.trace): the saves are the checkpoint's, with their retention and size
// (±10 %), will_fail comes at least one cadence before the quota is full, and a run sends at most two
// events (will_fail, relearning). Seed 4: a slowly growing log's chunks, just above the noise threshold
// and as regular as saves, were once learned as saves (keep 13, a save of 1.6 % of the real size).
// Seed 1: its saves' steps fell at times to the threshold (256 KiB, four times the log's chunk a
// step), and a burst that ended at the first such step split every save; it never left learning.
// Seeds 6, 7 and 9: the log's chunks every other step before the job began were learned as saves at
// once, and their loss sent a relearning event, three events with the will_fail.
func TestLearnerReplaysXFSRuns(t *testing.T) {
	for _, tc := range []struct {
		trace    string
		keep     int
		rotation Rotation
		cadence  time.Duration
	}{
		{"xfs-chunked-log", 1, RotationBefore, 17 * time.Second},
		{"xfs-seed1", 1, RotationAfter, 29 * time.Second},
		{"xfs-seed6", 3, RotationBefore, 25 * time.Second},
		{"xfs-seed7", 3, RotationAfter, 15 * time.Second},
		{"xfs-seed9", 4, RotationAfter, 27 * time.Second},
	} {
		t.Run(tc.trace, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.trace+".trace"))
			require.NoError(t, err)
			const quota, step = 96 << 20, 250 * time.Millisecond
			t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			l := NewLearner(Config{})
			var p Prediction
			var saves []float64
			var willFailAt, at time.Duration
			events := 0
			for line := range strings.Lines(string(data)) {
				if strings.HasPrefix(line, "#") {
					continue
				}
				var i int
				var used, size, copies uint64
				_, err := fmt.Sscanf(line, "%d %d %d %d", &i, &used, &size, &copies)
				require.NoError(t, err, line)
				at = time.Duration(i) * step
				if size > 0 && (len(saves) == 0 || saves[len(saves)-1] != float64(size)) {
					saves = append(saves, float64(size))
				}
				p = l.Observe(Sample{Time: t0.Add(at), Used: used, Free: quota - min(used, quota)})
				if p.Alert || p.Lost {
					events++
				}
				switch {
				case p.State == WillFail && willFailAt == 0:
					willFailAt = at
				case p.State != WillFail:
					willFailAt = 0
				}
			}
			fullAt := at + step // the write at the step after the last failed
			assert.Equal(t, tc.keep, p.Keep)
			assert.Equal(t, tc.rotation, p.Rotation)
			mean := 0.0
			for _, s := range saves {
				mean += s / float64(len(saves))
			}
			assert.InDelta(t, mean, float64(p.SizeP50), 0.1*mean, "the learned size is the saves'")
			assert.NotZero(t, willFailAt)
			assert.GreaterOrEqual(t, fullAt-willFailAt, tc.cadence, "will_fail a cadence ahead")
			assert.LessOrEqual(t, events, 2, "at most two events")
		})
	}
}

// TestLearnerReportsTheSave: every save is reported once, at the sample that completes it, with its
// size and a span of samples whose interval holds all of its writes (the writer's bytes are summed
// over it), and no wider than the write plus a scrape on each side and the quiet one after.
func TestLearnerReportsTheSave(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, rot := range []Rotation{RotationBefore, RotationAfter} {
		j := job{limit: 4 * tib, base: 900 * gib, size: 300 * gib, rate: 1 * gib, cadence: 2 * time.Hour, scrape: time.Minute, keep: 3, rotation: rot}
		preds, _ := j.run(NewLearner(Config{}), 6)
		write := time.Duration(float64(j.size) / float64(j.rate) * float64(time.Second))
		var reported []Save
		for _, p := range preds {
			if p.Saved {
				reported = append(reported, p.Save)
			} else {
				assert.Zero(t, p.Save, rot)
			}
		}
		require.Len(t, reported, 6, rot)
		for k, s := range reported {
			start := t0.Add(time.Duration(k+1) * j.cadence)
			assert.Equal(t, j.size, s.Bytes, "%v save %d", rot, k)
			assert.False(t, s.From.After(start), "%v save %d: the span starts at or before the write", rot, k)
			assert.False(t, s.To.Before(start.Add(write)), "%v save %d: the span ends at or after the write", rot, k)
			assert.LessOrEqual(t, s.To.Sub(s.From), write+3*j.scrape, "%v save %d: no wider than the burst", rot, k)
		}
	}
}

package checkpoint

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stillThenSaves is n samples of issueFS's filesystem before its job starts (the usage at its base; the
// scrapes a little irregular, the free space moving as another limit does, one sample older than the one
// before it and with other usage), then steps scrapes of issueFS: saves, a fill, will_fail.
func stillThenSaves(n, steps int) []Sample {
	f := issueFS()
	var out []Sample
	var at time.Duration
	for i := range n {
		at += f.scrape + time.Duration(i%3)*time.Millisecond
		out = append(out, Sample{Time: simT0.Add(at), Used: uint64(f.base), Free: uint64(f.limit-f.base) - uint64(i%5)*mib})
		if i == n/2 {
			out = append(out, Sample{Time: simT0.Add(at - time.Second), Used: uint64(f.base) + mib, Free: uint64(f.limit - f.base)})
		}
	}
	// The other writer starts as long after the job as in issueFS.
	f.fillFrom += at
	for range steps {
		at += f.scrape
		out = append(out, f.step(at))
	}
	return out
}

// TestStillIsTheLearner: a Still fed the samples before the usage first moves, then the Learner it
// makes fed the rest, predicts at every sample what a Learner fed them all predicts, and ends in the
// same state (the same record stored); so does a Learner made while the usage is still (at shutdown).
// The prefixes are none, one sample, a few, and more than the noise window holds.
func TestStillIsTheLearner(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 3 * noiseWindow} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			samples := stillThenSaves(n, 600)
			want := NewLearner(Config{})
			var q Still
			var got *Learner
			var saved, alerts int
			for i, s := range samples {
				wp := want.Observe(s)
				if got == nil && q.Observe(s) {
					require.Equal(t, Prediction{}, wp, "sample %d: the Learner predicts something while the usage is still", i)
					require.Equal(t, want, q.Learner(Config{}), "sample %d", i)
					continue
				}
				if got == nil {
					got = q.Learner(Config{})
				}
				require.Equal(t, wp, got.Observe(s), "sample %d", i)
				saved, alerts = saved+btoi(wp.Saved), alerts+btoi(wp.Alert)
			}
			require.NotNil(t, got, "the usage never moved")
			assert.Equal(t, want, got)
			assert.Equal(t, want.MarshalRecord("owner"), got.MarshalRecord("owner"))
			// The job's saves and the fill's will_fail came after the Still.
			assert.Positive(t, saved)
			assert.Positive(t, alerts)
		})
	}
}

// TestStillStaysStill: a filesystem whose usage never moves keeps a Still through any number of samples
// (no Learner, whose windows would be allocated for nothing), whatever its free space and scrape times do.
func TestStillStaysStill(t *testing.T) {
	var q Still
	for _, s := range stillThenSaves(10*noiseWindow, 0) {
		require.True(t, q.Observe(s))
	}
	// The samples it took are the ones after the first, the older one excepted.
	assert.Equal(t, 10*noiseWindow-1, q.steps)
	moved := q.last
	moved.Time, moved.Used = moved.Time.Add(time.Second), moved.Used+1
	assert.False(t, q.Observe(moved), "a byte more is a move")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

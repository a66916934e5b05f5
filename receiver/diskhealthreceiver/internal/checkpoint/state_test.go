package checkpoint

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLearnerSurvivesARestart (issue 31): a learner marshalled after five saves and restored into a new
// one (a collector restarted half a minute later) predicts from its first sample, with the size,
// cadence and retention learned before, and keeps predicting through the next save; a fresh learner
// needs three saves. The original had nothing to restore from (it needed 6–7 saves after a restart).
func TestLearnerSurvivesARestart(t *testing.T) {
	f := issueFS()
	f.fillRate = 0
	l := NewLearner(Config{})
	at := time.Duration(0)
	var before Prediction
	for ; at < 70*time.Second; at += f.scrape {
		before = l.Observe(f.step(at))
	}
	require.NotEqual(t, Learning, before.State)
	data, err := l.MarshalBinary()
	require.NoError(t, err)
	assert.Less(t, len(data), 2048, "compact")

	restored := NewLearner(Config{})
	require.NoError(t, restored.UnmarshalBinary(data))
	fresh := NewLearner(Config{})
	for end := at + 30*time.Second; at < end; at += f.scrape {
		f.step(at) // the collector is down; the job goes on saving
	}
	for end := at + 30*time.Second; at < end; at += f.scrape {
		s := f.step(at)
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

// TestLearnerStateRefusesBadData: another version, data cut anywhere or lists past their bounds are
// refused with an error, never a panic, and leave the learner as it was.
func TestLearnerStateRefusesBadData(t *testing.T) {
	f := issueFS()
	l := NewLearner(Config{})
	for at := time.Duration(0); at < 70*time.Second; at += f.scrape {
		l.Observe(f.step(at))
	}
	data, err := l.MarshalBinary()
	require.NoError(t, err)
	for n := range len(data) {
		fresh := NewLearner(Config{})
		require.Error(t, fresh.UnmarshalBinary(data[:n]), "cut at %d", n)
		assert.Zero(t, fresh.saves)
	}
	bad := append([]byte{stateVersion + 1}, data[1:]...)
	require.Error(t, NewLearner(Config{}).UnmarshalBinary(bad))
	long := append([]byte{}, data[:5]...)
	long = append(long, 0, 0, 0, 0, 0, 0, 0) // the seven numbers
	long = append(long, make([]byte, 9)...)  // growth, hidden
	long = append(long, 0xff, 0x01)          // 255 copies
	assert.ErrorContains(t, NewLearner(Config{}).UnmarshalBinary(long), "at most")
}

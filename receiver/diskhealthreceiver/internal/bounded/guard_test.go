package bounded

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDoReturnsTheResult(t *testing.T) {
	var g Guard
	v, err := Do(context.Background(), &g, "a", time.Second, func() (int, error) { return 7, nil })
	require.NoError(t, err)
	assert.Equal(t, 7, v)
	boom := errors.New("boom")
	_, err = Do(context.Background(), &g, "a", 0, func() (int, error) { return 0, boom })
	require.ErrorIs(t, err, boom)
	assert.False(t, g.Busy("a"))
}

func TestStuckCallTimesOutAndBlocksOnlyItsKey(t *testing.T) {
	var g Guard
	release := make(chan struct{})
	calls := 0
	stuck := func() (string, error) { calls++; <-release; return "late", nil }

	start := time.Now()
	_, err := Do(context.Background(), &g, "md0", 20*time.Millisecond, stuck)
	require.ErrorIs(t, err, ErrTimeout)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.True(t, g.Busy("md0"))

	// The next call for the same key starts nothing.
	_, err = Do(context.Background(), &g, "md0", time.Second, stuck)
	require.ErrorIs(t, err, ErrInFlight)

	// Another key is unaffected.
	v, err := Do(context.Background(), &g, "md1", time.Second, func() (string, error) { return "ok", nil })
	require.NoError(t, err)
	assert.Equal(t, "ok", v)

	close(release)
	g.Wait()
	assert.False(t, g.Busy("md0"))
	assert.Equal(t, 1, calls)
	_, err = Do(context.Background(), &g, "md0", time.Second, func() (string, error) { return "again", nil })
	require.NoError(t, err)
}

func TestContextEndsTheWait(t *testing.T) {
	var g Guard
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	_, err := Do(ctx, &g, "k", 0, func() (int, error) { <-release; return 1, nil })
	require.ErrorIs(t, err, context.Canceled)
	close(release)
	g.Wait()
}

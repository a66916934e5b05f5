//go:build linux

package device

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// No library call starts once the read's deadline has passed: smart.go's
// ioctls have timeouts of their own (20 s for SG_IO), so the deadline is
// checked before each call.
func TestLibCallAfterDeadline(t *testing.T) {
	called := false
	_, err := libCall("sda", "SMART READ DATA", time.Now().Add(-time.Millisecond), func() (int, error) {
		called = true
		return 1, nil
	})
	require.ErrorIs(t, err, ErrTimeout)
	assert.False(t, called)
}

// A panic inside the library is that call's error, the same text each time
// (no stack), so the source logs it once.
func TestLibCallPanic(t *testing.T) {
	call := func() error {
		_, err := libCall("sda", "SMART READ DATA", time.Now().Add(time.Minute), func() ([]byte, error) {
			var short []byte
			return short[:362], nil // what a decoder does with a short page
		})
		return err
	}
	first := call()
	require.Error(t, first)
	require.ErrorContains(t, first, "smart.go panicked on sda's answer")
	require.ErrorContains(t, first, "SMART READ DATA")
	assert.NotContains(t, first.Error(), "goroutine")
	assert.Equal(t, first.Error(), call().Error())
	assert.Equal(t, StatusError, classify(first))
}

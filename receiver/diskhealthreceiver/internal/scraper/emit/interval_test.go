package emit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckInterval(t *testing.T) {
	require.NoError(t, CheckInterval("collection_interval", MinInterval))
	require.NoError(t, CheckInterval("collection_interval", 30*time.Second))
	err := CheckInterval("collection_interval", 30)
	require.Error(t, err)
	assert.Equal(t, "collection_interval: 30ns (30 ns) is below the minimum of 100ms; a number without a unit is read as nanoseconds: write the unit, e.g. 30s", err.Error())
	require.ErrorContains(t, CheckInterval("smart.interval", 0), "smart.interval: 0s (0 ns) is below the minimum of 100ms")
	require.ErrorContains(t, CheckInterval("smart.interval", -time.Second), "smart.interval: -1s")
}

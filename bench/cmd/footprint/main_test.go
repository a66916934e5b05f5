package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/bench/internal/procstat"
)

// The readers parse this very process's /proc entries: some CPU used, some memory resident (its anonymous
// and file-backed parts within it), and the nanosecond and tick clocks agree to within the ticks'
// granularity.
func TestReadSelf(t *testing.T) {
	x := 0
	for i := range 20_000_000 {
		x += i
	}
	require.NotZero(t, x)
	s, err := read(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, s.cpu)
	assert.Greater(t, s.rss, int64(1<<20))
	assert.Positive(t, s.anon)
	assert.Positive(t, s.file)
	assert.LessOrEqual(t, s.anon+s.file, s.rss)
	ticks, err := statCPU(os.Getpid())
	require.NoError(t, err)
	ns, err := procstat.SchedCPU(os.Getpid())
	require.NoError(t, err)
	assert.InDelta(t, ns.Seconds(), ticks.Seconds(), 0.1)
}

func TestReadGone(t *testing.T) {
	_, err := read(1 << 30)
	assert.Error(t, err)
}

func TestFreePorts(t *testing.T) {
	ports, err := freePorts(3)
	require.NoError(t, err)
	assert.Len(t, ports, 3)
	assert.NotEqual(t, ports[0], ports[1])
}

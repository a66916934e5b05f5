package procstat

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A collector's status, abridged: the three sizes are read in bytes and add up as the kernel reports them.
func TestParseStatus(t *testing.T) {
	m, err := parseStatus("Name:\totelcol-diskhea\nVmRSS:\t   69872 kB\nRssAnon:\t   11348 kB\nRssFile:\t   58524 kB\nRssShmem:\t       0 kB\n")
	require.NoError(t, err)
	assert.Equal(t, Resident{RSS: 69872 << 10, Anon: 11348 << 10, File: 58524 << 10}, m)
}

// A zombie's status has no VmRSS: an error, not a resident size of 0.
func TestParseStatusNoRSS(t *testing.T) {
	_, err := parseStatus("Name:\tx\nState:\tZ (zombie)\n")
	require.Error(t, err)
	_, err = parseStatus("VmRSS:\tlots kB\n")
	assert.Error(t, err)
}

// This test process: its Go heap is anonymous, its binary file-backed, and the parts fit in the whole.
func TestMemorySelf(t *testing.T) {
	m, err := Memory(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, m.Anon)
	assert.Positive(t, m.File)
	assert.LessOrEqual(t, m.Anon+m.File, m.RSS)
}

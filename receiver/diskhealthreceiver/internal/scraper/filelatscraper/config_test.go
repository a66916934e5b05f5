package filelatscraper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigDefaultOff: the source is off unless asked for, and its caps default to the probe's table
// and 20 mounts.
func TestConfigDefaultOff(t *testing.T) {
	c := createDefaultConfig()
	assert.False(t, c.Enabled)
	assert.Equal(t, 256, c.MaxMounts)
	assert.Equal(t, 20, c.TopN)
	require.NoError(t, c.Validate("filelat"))
}

func TestConfigValidateCaps(t *testing.T) {
	for _, tc := range []struct {
		maxMounts, topN int
		want            string
	}{
		{0, 1, "filelat.max_mounts: 0 is out of range, want 1 to 4096"},
		{4097, 20, "filelat.max_mounts: 4097 is out of range"},
		{256, 0, "filelat.top_n: 0 is out of range, want 1 to max_mounts (at most 1000)"},
		{10, 11, "filelat.top_n: 11 is out of range"},
		{4096, 1001, "filelat.top_n: 1001 is out of range"},
	} {
		c := createDefaultConfig()
		c.MaxMounts, c.TopN = tc.maxMounts, tc.topN
		require.ErrorContains(t, c.Validate("filelat"), tc.want, "%+v", tc)
	}
	c := createDefaultConfig()
	c.MaxMounts, c.TopN = 4096, 1000
	require.NoError(t, c.Validate("filelat"))
}

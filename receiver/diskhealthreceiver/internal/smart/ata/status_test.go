package ata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseReturnStatus(t *testing.T) {
	s, err := ParseReturnStatus(0x4F, 0xC2)
	require.NoError(t, err)
	assert.Equal(t, SMARTStatusPassed, s)
	s, err = ParseReturnStatus(0xF4, 0x2C)
	require.NoError(t, err)
	assert.Equal(t, SMARTStatusFailed, s)
	assert.Equal(t, "failed", s.String())
	s, err = ParseReturnStatus(0, 0)
	require.ErrorContains(t, err, "0x00/0x00")
	assert.Equal(t, SMARTStatusUnknown, s)
	assert.Equal(t, "unknown", s.String())
}

func TestPowerMode(t *testing.T) {
	for _, tc := range []struct {
		m        PowerMode
		spinning bool
		name     string
	}{
		{0xFF, true, "active_or_idle"},
		{0x80, true, "idle"},
		{0x82, true, "idle"},
		{0x41, true, "active_nv_cache"},
		{0x00, false, "standby"},
		{0x01, false, "standby"},
		{0x40, false, "standby"},
		{0x13, false, "unknown(0x13)"},
	} {
		assert.Equal(t, tc.spinning, tc.m.Spinning(), "%#x", uint8(tc.m))
		assert.Equal(t, tc.name, tc.m.String())
	}
}

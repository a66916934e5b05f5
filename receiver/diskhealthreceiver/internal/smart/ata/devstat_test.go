package ata

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type statEntry struct {
	off   int
	value uint64
	flags uint64
}

func statPage(num uint8, entries ...statEntry) []byte {
	b := make([]byte, PageSize)
	binary.LittleEndian.PutUint64(b, 1|uint64(num)<<16)
	for _, e := range entries {
		binary.LittleEndian.PutUint64(b[e.off:], e.flags|e.value)
	}
	return b
}

func TestDeviceStatistics(t *testing.T) {
	const ok = statSupported | statValid
	pages := make([]byte, PageSize) // page 0: supported-pages list, skipped
	pages[0], pages[8], pages[9] = 1, 3, 1
	pages = append(pages, statPage(5,
		statEntry{0x08, 0xD8, ok},         // -40 °C
		statEntry{0x20, 61, ok},           // highest
		statEntry{0x28, 0x80, ok},         // 80h: no value
		statEntry{0x58, 70, ok},           // max operating
		statEntry{0x68, 0, statSupported}, // supported, not valid
		statEntry{0x50, 12, ok},           // minutes, not a temperature
	)...)
	pages = append(pages, statPage(1,
		statEntry{0x10, 12345, ok},
		statEntry{0x18, 1 << 40, ok | 1<<48}, // bits above 47 are not value
		statEntry{0x28, 99, statValid},       // valid without supported: ignored
	)...)
	pages = append(pages, statPage(7, statEntry{0x08, 104, ok})...)

	ds, err := ParseDeviceStatistics(pages)
	require.NoError(t, err)
	temp, found := ds.Temperature(StatCurrentTemperature)
	assert.True(t, found)
	assert.Equal(t, -40, temp)
	temp, _ = ds.Temperature(StatHighestTemperature)
	assert.Equal(t, 61, temp)
	_, found = ds.Temperature(StatLowestTemperature)
	assert.False(t, found)
	temp, _ = ds.Temperature(StatMaxOperatingTemp)
	assert.Equal(t, 70, temp)
	_, found = ds.Temperature(StatMinOperatingTemp)
	assert.False(t, found)
	_, found = ds.Temperature(Stat{5, 0x50})
	assert.False(t, found, "time in over-temperature is not a temperature")
	_, found = ds.Temperature(StatPowerOnHours)
	assert.False(t, found)

	v, found := ds.Get(StatPowerOnHours)
	assert.True(t, found)
	assert.Equal(t, uint64(12345), v)
	v, _ = ds.Get(StatLogicalSectorsWritten)
	assert.Equal(t, uint64(1<<40), v)
	_, found = ds.Get(StatLogicalSectorsRead)
	assert.False(t, found)
	v, _ = ds.Get(StatPercentageUsed)
	assert.Equal(t, uint64(104), v)
	_, found = ds.Get(StatInterfaceCRCErrors)
	assert.False(t, found)

	var none *DeviceStatistics
	_, found = none.Get(StatPowerOnHours)
	assert.False(t, found)

	_, err = ParseDeviceStatistics(pages[:700])
	require.ErrorContains(t, err, "whole number")
	_, err = ParseDeviceStatistics(nil)
	require.Error(t, err)
	zeroRev := statPage(4)
	zeroRev[0] = 0
	_, err = ParseDeviceStatistics(zeroRev)
	assert.ErrorContains(t, err, "revision 0")
}

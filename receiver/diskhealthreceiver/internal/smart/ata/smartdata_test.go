package ata

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
)

func TestSMARTDataChecksum(t *testing.T) {
	good := fixture.Read(t, "qemu", "k6.12", "sda.smart_read_data.bin")
	bad := append([]byte(nil), good...)
	bad[7]++ // one raw byte of attribute 1 changed, checksum not
	_, err := ParseSMARTData(bad)
	require.ErrorIs(t, err, ErrChecksum)
	assert.Contains(t, err.Error(), "smart read data")

	th := fixture.Read(t, "qemu", "k6.12", "sda.smart_read_thresholds.bin")
	badTh := append([]byte(nil), th...)
	badTh[3] = 0 // attribute 1 threshold 6 -> 0, checksum not updated
	_, err = ParseThresholds(badTh)
	require.ErrorIs(t, err, ErrChecksum)

	_, err = ParseSMARTData(good[:511])
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrChecksum)
	_, err = ParseThresholds(append(th, 0))
	require.Error(t, err)
}

func TestUnknownAndVendorAttributes(t *testing.T) {
	page := dataPage(
		RawAttribute{ID: 5, Flags: FlagPreFail | FlagOnline, Value: 100, Worst: 100, RawBytes: raw48(0)},
		RawAttribute{ID: 170, Flags: FlagOnline, Value: 99, Worst: 99, RawBytes: raw48(12345)},
		RawAttribute{ID: 251, Value: 1, Worst: 1, RawBytes: raw48(0x0102030405)},
		RawAttribute{ID: 5, Value: 1, Worst: 1, RawBytes: raw48(999)}, // duplicate: ignored
	)
	data, err := ParseSMARTData(page)
	require.NoError(t, err)
	require.Len(t, data.Attributes, 3)
	attrs := lookup(t, "SomeVendor SSD 1TB").Decode(data, nil)
	a, ok := attrs.Find(170)
	require.True(t, ok)
	assert.Equal(t, "Unknown_Attribute", a.Name)
	// smart.go left unknown attributes at ValueRaw 0; the bytes are the value.
	assert.Equal(t, int64(12345), a.Raw.Value)
	a, _ = attrs.Find(251)
	assert.Equal(t, int64(0x0102030405), a.Raw.Value)
	a, _ = attrs.Find(5)
	assert.Equal(t, int64(0), a.Raw.Value, "first of duplicate IDs wins")
	_, ok = attrs.Find(9)
	assert.False(t, ok)
	_, ok = attrs.PowerOn()
	assert.False(t, ok)
	_, ok = attrs.Temperature()
	assert.False(t, ok)
	_, ok = attrs.PowerCycles()
	assert.False(t, ok)
}

func TestThresholdStates(t *testing.T) {
	page := dataPage(
		RawAttribute{ID: 1, Flags: FlagPreFail, Value: 36, Worst: 36},   // at threshold: failing now
		RawAttribute{ID: 3, Flags: FlagPreFail, Value: 37, Worst: 20},   // recovered: failed in the past
		RawAttribute{ID: 4, Value: 1, Worst: 1},                         // threshold 0: always passing
		RawAttribute{ID: 5, Flags: FlagPreFail, Value: 100, Worst: 100}, // healthy
		RawAttribute{ID: 7, Flags: FlagPreFail, Value: 1, Worst: 1},     // threshold FEh: not a threshold
		RawAttribute{ID: 8, Flags: FlagPreFail, Value: 1, Worst: 1},     // no threshold entry
	)
	th := thresholdPage([2]uint8{1, 36}, [2]uint8{3, 36}, [2]uint8{4, 0}, [2]uint8{5, 36}, [2]uint8{7, 0xFE})
	data, err := ParseSMARTData(page)
	require.NoError(t, err)
	thr, err := ParseThresholds(th)
	require.NoError(t, err)
	attrs := lookup(t, "").Decode(data, thr)
	want := map[uint8][2]bool{1: {true, false}, 3: {false, true}, 4: {false, false}, 5: {false, false}, 7: {false, false}, 8: {false, false}}
	for _, a := range attrs {
		assert.Equal(t, want[a.ID], [2]bool{a.FailingNow(), a.FailedInPast()}, "attribute %d", a.ID)
	}
	a8, _ := attrs.Find(8)
	assert.False(t, a8.HasThreshold)
	assert.Equal(t, "Seek_Time_Performance (8)", a8.Label())
}

func TestExtendedPollingWord(t *testing.T) {
	page := dataPage()
	page[373] = 0xFF
	page[375], page[376] = 0x2c, 0x01 // 300 minutes
	data, err := ParseSMARTData(sealPage(page))
	require.NoError(t, err)
	assert.Equal(t, uint16(300), data.ExtendedTestMinutes)
	assert.Empty(t, data.Attributes)
}

func TestTemperaturePreference(t *testing.T) {
	page := dataPage(
		RawAttribute{ID: 190, Value: 60, Worst: 50, RawBytes: [6]byte{40}},
		RawAttribute{ID: 194, Value: 38, Worst: 50, RawBytes: [6]byte{38}},
	)
	data, err := ParseSMARTData(page)
	require.NoError(t, err)
	temp, ok := lookup(t, "").Decode(data, nil).Temperature()
	require.True(t, ok)
	assert.Equal(t, 38, temp, "194 wins over 190 whatever the page order")

	// 194 holding garbage falls back to 190.
	page = dataPage(
		RawAttribute{ID: 194, RawBytes: [6]byte{0x90}},
		RawAttribute{ID: 190, RawBytes: [6]byte{41}},
	)
	data, err = ParseSMARTData(page)
	require.NoError(t, err)
	temp, ok = lookup(t, "").Decode(data, nil).Temperature()
	require.True(t, ok)
	assert.Equal(t, 41, temp)
}

func TestPowerOnRawHours(t *testing.T) {
	page := dataPage(RawAttribute{ID: 9, RawBytes: raw48(0x0059_9100_5f3b)})
	data, err := ParseSMARTData(page)
	require.NoError(t, err)
	poh, ok := lookup(t, "").Decode(data, nil).PowerOn()
	require.True(t, ok)
	assert.Equal(t, 24379*time.Hour, poh, "raw24(raw8): the bytes above 24 bits are not hours")
}

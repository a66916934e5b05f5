package nvme

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
)

func putUint128(b []byte, v Uint128) {
	binary.LittleEndian.PutUint64(b, v.Lo)
	binary.LittleEndian.PutUint64(b[8:], v.Hi)
}

func TestTemperatureZeroKelvinIsAbsent(t *testing.T) {
	b := make([]byte, SMARTLogSize)
	l, err := ParseSMARTLog(b)
	require.NoError(t, err)
	_, ok := l.Temperature.Celsius()
	assert.False(t, ok, "0 K is 'not reported', not -273 °C and not 65263 °C")

	binary.LittleEndian.PutUint16(b[1:], 253)      // -20 °C
	binary.LittleEndian.PutUint16(b[200:], 0)      // sensor 1 absent
	binary.LittleEndian.PutUint16(b[202:], 300)    // sensor 2: 27 °C
	binary.LittleEndian.PutUint16(b[214:], 0xFFFF) // sensor 8: absurd but reported
	l, err = ParseSMARTLog(b)
	require.NoError(t, err)
	c, ok := l.Temperature.Celsius()
	assert.True(t, ok)
	assert.Equal(t, -20, c)
	_, ok = l.TempSensors[0].Celsius()
	assert.False(t, ok)
	c, ok = l.TempSensors[1].Celsius()
	assert.True(t, ok)
	assert.Equal(t, 27, c)
	c, _ = l.TempSensors[7].Celsius()
	assert.Equal(t, 65262, c)
}

func TestUint128NearLimits(t *testing.T) {
	max64 := Uint128{Lo: math.MaxUint64}
	two64 := Uint128{Hi: 1}
	max128 := Uint128{Lo: math.MaxUint64, Hi: math.MaxUint64}

	v, ok := max64.Uint64()
	assert.True(t, ok)
	assert.Equal(t, uint64(math.MaxUint64), v)
	v, ok = two64.Uint64()
	assert.False(t, ok, "2^64 does not fit")
	assert.Equal(t, uint64(math.MaxUint64), v, "and saturates")

	assert.Equal(t, "18446744073709551615", max64.String())
	assert.Equal(t, "18446744073709551616", two64.String())
	assert.Equal(t, "340282366920938463463374607431768211455", max128.String())
	assert.Equal(t, 0x1p64, two64.Float64())
	assert.Equal(t, 0x1p128, max128.Float64())

	assert.Equal(t, 1, two64.Cmp(max64))
	assert.Equal(t, -1, max64.Cmp(two64))
	same := max128
	assert.Equal(t, 0, max128.Cmp(same))
	assert.Equal(t, -1, Uint128{Lo: 1}.Cmp(Uint128{Lo: 2}))
	assert.True(t, Uint128{}.IsZero())
	assert.False(t, two64.IsZero())

	// Data units -> bytes crosses 2^64 long before the counter does.
	units := Uint128{Lo: math.MaxUint64/dataUnitBytes + 1}
	bytes := units.MulUint64(dataUnitBytes)
	assert.Equal(t, uint64(0), bytes.Hi>>1, "just above 2^64")
	_, ok = bytes.Uint64()
	assert.False(t, ok)
	assert.Equal(t, units.Float64()*dataUnitBytes, bytes.Float64())
	assert.Equal(t, max128, max128.MulUint64(2), "saturates at 2^128-1")
	assert.Equal(t, max128, Uint128{Hi: 1 << 63}.MulUint64(2))
	assert.Equal(t, Uint128{Hi: 1 << 63}, Uint128{Hi: 1 << 62}.MulUint64(2))
	assert.Equal(t, Uint128{}, max128.MulUint64(0))
}

func TestSMARTLogCountersBeyond64Bits(t *testing.T) {
	b := append([]byte(nil), fixture.Read(t, "qemu", "k6.12", "nvme0.log02_smart_log.bin")...)
	putUint128(b[48:], Uint128{Lo: 5, Hi: 1})        // data units written: 2^64+5
	putUint128(b[160:], Uint128{Lo: math.MaxUint64}) // media errors: 2^64-1
	putUint128(b[128:], Uint128{Lo: math.MaxUint64, Hi: math.MaxUint64})
	l, err := ParseSMARTLog(b)
	require.NoError(t, err)
	assert.Equal(t, "18446744073709551621", l.DataUnitsWritten.String())
	assert.Equal(t, Uint128{Lo: 5 * dataUnitBytes, Hi: dataUnitBytes}, l.BytesWritten())
	v, ok := l.MediaErrors.Uint64()
	assert.True(t, ok)
	assert.Equal(t, uint64(math.MaxUint64), v)
	_, ok = l.PowerOnHours.Uint64()
	assert.False(t, ok)
	assert.Equal(t, Uint128{Lo: 1 * dataUnitBytes}, l.BytesRead(), "QEMU: 1 data unit read")

	_, err = ParseSMARTLog(b[:511])
	assert.ErrorContains(t, err, "511 bytes")
}

func TestCriticalWarningNames(t *testing.T) {
	assert.Equal(t, "none", CriticalWarning(0).String())
	assert.Equal(t, "reliability_degraded", CriticalWarning(4).String())
	assert.Equal(t, "spare_below_threshold,temperature,read_only,bit7", CriticalWarning(0x8B).String())
	assert.True(t, CriticalWarning(6).Has(WarnReliability|WarnTemperature))
	assert.False(t, CriticalWarning(4).Has(WarnReliability|WarnTemperature))
}

func TestIdentifyNamespaceFormats(t *testing.T) {
	b := make([]byte, IdentifySize)
	binary.LittleEndian.PutUint64(b[0:], 1953525168)
	binary.LittleEndian.PutUint64(b[8:], 1953525168)
	b[25] = 1    // two formats
	b[26] = 0x01 // format 1
	b[128+2] = 9
	b[132+2] = 12 // format 1: 4096 B
	binary.LittleEndian.PutUint16(b[132:], 8)
	copy(b[104:], []byte{0x00, 0x25, 0x38, 0x5b, 0x71, 0xb0, 0x12, 0x34, 0, 0, 0, 0, 0, 0, 0, 1})
	copy(b[120:], []byte{0x00, 0x25, 0x38, 0x5b, 0x71, 0xb0, 0x12, 0x34})
	ns, err := ParseIdentifyNamespace(b)
	require.NoError(t, err)
	assert.Equal(t, uint32(4096), ns.LBASize)
	assert.Equal(t, uint16(8), ns.MetadataSize)
	assert.Equal(t, uint64(1953525168*4096), ns.SizeBytes())
	assert.False(t, ns.ThinProvisioned())

	// A thin provisioned namespace (NSFEAT bit 0): NCAP below NSZE, NUSE what is allocated.
	b[24] = 0x01
	binary.LittleEndian.PutUint64(b[8:], 1000)
	binary.LittleEndian.PutUint64(b[16:], 250)
	ns, err = ParseIdentifyNamespace(b)
	require.NoError(t, err)
	assert.True(t, ns.ThinProvisioned())
	assert.Equal(t, uint64(1000*4096), ns.CapacityBytes())
	assert.Equal(t, uint64(250*4096), ns.UtilizationBytes())
	b[24] = 0
	assert.True(t, ns.HasNGUID())
	assert.True(t, ns.HasEUI64())
	assert.Equal(t, [8]byte{0x00, 0x25, 0x38, 0x5b, 0x71, 0xb0, 0x12, 0x34}, ns.EUI64)

	// FLBAS bits 6:5 extend the index: format 17 of 18.
	b[25] = 17
	b[26] = 0x21
	b[128+17*4+2] = 9
	ns, err = ParseIdentifyNamespace(b)
	require.NoError(t, err)
	assert.Equal(t, uint32(512), ns.LBASize)

	b[25] = 0
	b[26] = 0x01
	_, err = ParseIdentifyNamespace(b)
	require.ErrorContains(t, err, "format 1 beyond the 1 formats")

	b[26] = 0
	b[128+2] = 3
	_, err = ParseIdentifyNamespace(b)
	require.ErrorContains(t, err, "2^3")

	// Size saturates rather than wrapping.
	b[128+2] = 31
	binary.LittleEndian.PutUint64(b[0:], math.MaxUint64)
	ns, err = ParseIdentifyNamespace(b)
	require.NoError(t, err)
	assert.Equal(t, uint64(math.MaxUint64), ns.SizeBytes())

	inactive, err := ParseIdentifyNamespace(make([]byte, IdentifySize))
	require.NoError(t, err)
	assert.Equal(t, Namespace{}, *inactive)

	_, err = ParseIdentifyNamespace(b[:4095])
	assert.ErrorContains(t, err, "4095 bytes")
}

func TestIdentifyControllerRejects(t *testing.T) {
	_, err := ParseIdentifyController(make([]byte, IdentifySize))
	require.ErrorContains(t, err, "blank")
	_, err = ParseIdentifyController(make([]byte, 100))
	require.ErrorContains(t, err, "100 bytes")

	b := append([]byte(nil), fixture.Read(t, "qemu", "k6.12", "nvme0.identify_ctrl.bin")...)
	binary.LittleEndian.PutUint32(b[80:], 0x00020001) // NVMe 2.0.1
	b[256] |= oacsSelfTest
	b[24] = 0xC3 // a byte outside ASCII in the model
	c, err := ParseIdentifyController(b)
	require.NoError(t, err)
	assert.Equal(t, "2.0.1", c.VersionString())
	assert.True(t, c.SupportsLog(LogDeviceSelfTest))
	assert.Equal(t, "?EMU NVMe Ctrl", c.Model)
}

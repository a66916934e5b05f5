package ata

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// attr builds a raw attribute from bytes given most significant first
// (b5..b0), the way smartctl and vendor documents print them.
func attr(reserved byte, b5, b4, b3, b2, b1, b0 byte) RawAttribute {
	return RawAttribute{ID: 1, Value: 100, Worst: 90, Reserved: reserved, RawBytes: [6]byte{b0, b1, b2, b3, b4, b5}}
}

func TestDecodeRawEveryFormat(t *testing.T) {
	hm := func(h, m, s, ms int) time.Duration {
		return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(ms)*time.Millisecond
	}
	for _, tc := range []struct {
		name     string
		a        RawAttribute
		format   Format
		order    string
		bits     uint64
		value    int64
		aux      int64
		duration time.Duration
		minMax   []int // lo, hi when a layout is recognised
		overTemp int
		str      string
	}{
		{name: "raw48", a: attr(0, 0, 0, 0, 0, 0x12, 0x34), format: FormatRaw48, bits: 0x1234, value: 0x1234, str: "4660"},
		{name: "raw48 ignores reserved byte", a: attr(9, 0, 0, 0, 0, 0, 7), format: FormatRaw48, bits: 7, value: 7, str: "7"},
		{name: "raw8", a: attr(0, 1, 2, 3, 4, 5, 6), format: FormatRaw8, bits: 0x010203040506, value: 0x010203040506, str: "1 2 3 4 5 6"},
		// Seagate 188: three words, word 0 (raw[1:0]) is the timeout count.
		{name: "raw16 seagate 188 one timeout", a: attr(0, 0, 1, 0, 1, 0, 1), format: FormatRaw16, bits: 4295032833, value: 1, str: "1 1 1"},
		{name: "raw16 seagate 188 slow commands no timeout", a: attr(0, 0, 2, 0, 5, 0, 0), format: FormatRaw16, bits: 0x000200050000, value: 0, str: "2 5 0"},
		{name: "hex48", a: attr(0, 0, 0, 0, 0, 0xab, 0xcd), format: FormatHex48, bits: 0xabcd, value: 0xabcd, str: "0x00000000abcd"},
		{name: "raw56", a: attr(1, 0, 0, 0, 0, 0, 2), format: FormatRaw56, bits: 0x01000000000002, value: 0x01000000000002, str: "281474976710658"},
		{name: "hex56", a: attr(1, 0, 0, 0, 0, 0, 2), format: FormatHex56, bits: 0x01000000000002, value: 0x01000000000002, str: "0x01000000000002"},
		{name: "raw64 includes worst and value", a: attr(0, 0, 0, 0, 0, 0, 1), format: FormatRaw64, bits: 0x015a64, value: 0x015a64, str: "88676"},
		{name: "hex64 saturates value", a: RawAttribute{Value: 0xff, Worst: 0xff, RawBytes: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}, format: FormatHex64, bits: math.MaxUint64, value: math.MaxInt64, str: "0xffffffffffffffff"},
		{name: "raw16(raw16) plain", a: attr(0, 0, 0, 0, 0, 0, 8), format: FormatRaw16OptRaw16, bits: 8, value: 8, str: "8"},
		{name: "raw16(raw16) extra words", a: attr(0, 0, 3, 0, 2, 0, 8), format: FormatRaw16OptRaw16, bits: 0x000300020008, value: 8, str: "8 (3 2)"},
		{name: "raw16(avg16)", a: attr(0, 0, 0, 0x11, 0x22, 0x0f, 0xa0), format: FormatRaw16OptAvg16, bits: 0x11220fa0, value: 4000, aux: 0x1122, str: "4000 (Average 4386)"},
		{name: "raw24(raw8) hours", a: attr(0, 0, 0, 0, 0, 0x10, 0), format: FormatRaw24OptRaw8, bits: 4096, value: 4096, str: "4096"},
		{name: "raw24(raw8) with minutes bytes", a: attr(0, 0, 0x59, 0x91, 0x00, 0x5f, 0x3b), format: FormatRaw24OptRaw8, bits: 0x0059_9100_5f3b, value: 0x5f3b, str: "24379 (0 89 145)"},
		{name: "raw24/raw24", a: attr(0, 0, 0, 2, 0, 0, 9), format: FormatRaw24DivRaw24, bits: 0x02000009, value: 2, aux: 9, str: "2/9"},
		// Seagate 1 from a field ST4000DM004: 197586811 reads, no errors.
		{name: "raw24/raw32 seagate no errors", a: attr(0, 0, 0, 0x0b, 0xc6, 0x75, 0x7b), format: FormatRaw24DivRaw32, bits: 197555579, value: 0, aux: 197555579, str: "0/197555579"},
		{name: "raw24/raw32 seagate errors in reserved and high bytes", a: attr(1, 0, 3, 0, 0, 0, 10), format: FormatRaw24DivRaw32, bits: 0x01_0003_0000_000a, value: 0x010003, aux: 10, str: "65539/10"},
		{name: "sec2hour", a: attr(0, 0, 0, 0, 0, 0x0e, 0x11), format: FormatSec2Hour, bits: 3601, value: 1, duration: hm(1, 0, 1, 0), str: "1h+00m+01s"},
		{name: "min2hour", a: attr(0, 0, 7, 0, 0, 0, 61), format: FormatMin2Hour, bits: 0x00070000003d, value: 1, aux: 7, duration: hm(1, 1, 0, 0), str: "1h+01m (7)"},
		{name: "halfmin2hour", a: attr(0, 0, 0, 0, 0, 0, 125), format: FormatHalfMin2Hour, bits: 125, value: 1, duration: hm(1, 2, 30, 0), str: "1h+02m"},
		// Field ST4000DM004: 8696h+35m+30.105s; milliseconds sit in the
		// reserved byte and raw bytes 5..4 above the 32-bit hour count.
		{name: "msec24hour32 seagate", a: attr(0x20, 0x80, 0xb9, 0x00, 0x00, 0x21, 0xf8), format: FormatMsec24Hour32, bits: 0x2080b9_000021f8, value: 8696, duration: hm(8696, 35, 30, 105), str: "8696h+35m+30.105s"},
		{name: "msec24hour32 qemu", a: attr(0, 0, 0, 0, 0, 0, 1), format: FormatMsec24Hour32, bits: 1, value: 1, duration: time.Hour, str: "1h+00m+00.000s"},
		{name: "tempminmax current only", a: attr(0, 0, 0, 0, 0, 0, 35), format: FormatTempMinMax, bits: 35, value: 35, str: "35"},
		{name: "tempminmax negative current only", a: attr(0, 0, 0, 0, 0, 0xff, 0xfb), format: FormatTempMinMax, bits: 0xfffb, value: -5, str: "-5"},
		{name: "tempminmax qemu 00 00 H L x T", a: attr(0, 0, 0, 31, 31, 0, 31), format: FormatTempMinMax, bits: 522125343, value: 31, minMax: []int{31, 31}, str: "31 (Min/Max 31/31)"},
		{name: "tempminmax seagate 190", a: attr(0, 0, 0, 34, 27, 0, 34), format: FormatTempMinMax, bits: 0x221b0022, value: 34, minMax: []int{27, 34}, str: "34 (Min/Max 27/34)"},
		{name: "tempminmax seagate 194 unknown layout", a: attr(0, 0, 19, 0, 0, 0, 34), format: FormatTempMinMax, bits: 0x001300000022, value: 34, str: "34 (0 19 0 0 0)"},
		{name: "tempminmax wdc 00 00 00 H L T", a: attr(0, 0, 0, 0, 45, 20, 30), format: FormatTempMinMax, bits: 0x2d141e, value: 30, minMax: []int{20, 45}, str: "30 (Min/Max 20/45)"},
		{name: "tempminmax hitachi x H x L x T", a: attr(0, 0, 50, 0, 18, 0, 36), format: FormatTempMinMax, bits: 0x003200120024, value: 36, minMax: []int{18, 50}, str: "36 (Min/Max 18/50)"},
		{name: "tempminmax kingston x L x H x T", a: attr(0, 0, 18, 0, 50, 0, 36), format: FormatTempMinMax, bits: 0x001200320024, value: 36, minMax: []int{18, 50}, str: "36 (Min/Max 18/50)"},
		{name: "tempminmax wdc over-temperature count", a: attr(0, 0x01, 0x02, 55, 20, 0, 40), format: FormatTempMinMax, bits: 0x010237140028, value: 40, minMax: []int{20, 55}, overTemp: 0x0102, str: "40 (Min/Max 20/55 #258)"},
		{name: "tempminmax extremes not bracketing current", a: attr(0, 0, 0, 30, 20, 0, 45), format: FormatTempMinMax, bits: 0x1e14002d, value: 45, str: "45 (0 0 30 20 0)"},
		{name: "temp10x", a: attr(0, 0, 0, 0, 0, 0x01, 0x6d), format: FormatTemp10X, bits: 365, value: 36, str: "36.5"},
		{name: "custom byte order", a: attr(0, 0, 0, 0, 0, 0x12, 0x34), format: FormatRaw48, order: "01", bits: 0x3412, value: 0x3412, str: "13330"},
		{name: "z byte order pads", a: attr(0, 0, 0, 0, 0, 0, 0x34), format: FormatRaw48, order: "0z", bits: 0x3400, value: 0x3400, str: "13312"},
		{name: "invalid byte order falls back", a: attr(0, 0, 0, 0, 0, 0, 5), format: FormatRaw48, order: "9x", bits: 5, value: 5, str: "5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := DecodeRaw(tc.a, tc.format, tc.order)
			assert.Equal(t, tc.format, r.Format)
			assert.Equal(t, tc.bits, r.Bits, "bits %#x", r.Bits)
			assert.Equal(t, tc.value, r.Value)
			assert.Equal(t, tc.aux, r.Aux)
			assert.Equal(t, tc.duration, r.Duration)
			if tc.minMax != nil {
				require.True(t, r.HasMinMax)
				assert.Equal(t, tc.minMax, []int{r.Min, r.Max})
			} else {
				assert.False(t, r.HasMinMax)
			}
			assert.Equal(t, tc.overTemp, r.OverTemp)
			assert.Equal(t, tc.str, r.String())
		})
	}
}

func TestDurationSaturates(t *testing.T) {
	r := DecodeRaw(RawAttribute{Reserved: 0xff, RawBytes: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}, FormatMsec24Hour32, "")
	assert.Equal(t, int64(math.MaxUint32), r.Value)
	assert.Equal(t, time.Duration(math.MaxInt64), r.Duration)
	// 2^48 seconds is longer than a Duration can hold.
	r = DecodeRaw(RawAttribute{RawBytes: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}, FormatSec2Hour, "")
	assert.Equal(t, time.Duration(math.MaxInt64), r.Duration)
	assert.Equal(t, int64((1<<48-1)/3600), r.Value)
}

func TestFormatNames(t *testing.T) {
	for f := range numFormats {
		got, err := ParseFormat(f.String())
		require.NoError(t, err)
		assert.Equal(t, f, got)
	}
	_, err := ParseFormat("raw42")
	require.Error(t, err)
	assert.Equal(t, "format(200)", Format(200).String())
	// An out-of-range format decodes as raw48 rather than panicking.
	assert.Equal(t, FormatRaw48, DecodeRaw(attr(0, 0, 0, 0, 0, 0, 3), Format(200), "").Format)
}

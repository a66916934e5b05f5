package ata

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Format says how an attribute's six raw bytes are to be read. The names are
// smartmontools' -v format names so that drive database facts carry over.
type Format uint8

// Formats. The zero value is raw48, the format of every attribute nobody
// says otherwise about.
const (
	FormatRaw48         Format = iota // 48-bit unsigned integer
	FormatRaw8                        // six separate bytes
	FormatRaw16                       // three 16-bit words; the count is word 0 (Seagate 188)
	FormatHex48                       // raw48 shown in hex
	FormatRaw56                       // 56 bits: reserved byte above the raw bytes
	FormatHex56                       // raw56 shown in hex
	FormatRaw64                       // 64 bits: raw bytes, then worst and normalized value
	FormatHex64                       // raw64 shown in hex
	FormatRaw16OptRaw16               // word 0 is the value, words 2 and 1 extra (reallocations)
	FormatRaw16OptAvg16               // word 0 is the value, word 1 an average (spin-up time)
	FormatRaw24OptRaw8                // low 24 bits are the value, bytes 5..3 extra (power-on hours)
	FormatRaw24DivRaw24               // high 24 bits / low 24 bits
	FormatRaw24DivRaw32               // high 24 bits / low 32 bits of 56 (Seagate error rates: errors / operations)
	FormatSec2Hour                    // seconds
	FormatMin2Hour                    // minutes in the low 32 bits, word 2 extra
	FormatHalfMin2Hour                // 30-second units
	FormatMsec24Hour32                // hours in the low 32 bits, milliseconds in the high 24 of 56
	FormatTempMinMax                  // °C in byte 0, lifetime min/max found by layout
	FormatTemp10X                     // tenths of °C in word 0
	numFormats
)

var formatNames = [numFormats]string{
	FormatRaw48:         "raw48",
	FormatRaw8:          "raw8",
	FormatRaw16:         "raw16",
	FormatHex48:         "hex48",
	FormatRaw56:         "raw56",
	FormatHex56:         "hex56",
	FormatRaw64:         "raw64",
	FormatHex64:         "hex64",
	FormatRaw16OptRaw16: "raw16(raw16)",
	FormatRaw16OptAvg16: "raw16(avg16)",
	FormatRaw24OptRaw8:  "raw24(raw8)",
	FormatRaw24DivRaw24: "raw24/raw24",
	FormatRaw24DivRaw32: "raw24/raw32",
	FormatSec2Hour:      "sec2hour",
	FormatMin2Hour:      "min2hour",
	FormatHalfMin2Hour:  "halfmin2hour",
	FormatMsec24Hour32:  "msec24hour32",
	FormatTempMinMax:    "tempminmax",
	FormatTemp10X:       "temp10x",
}

func (f Format) String() string {
	if f < numFormats {
		return formatNames[f]
	}
	return "format(" + strconv.Itoa(int(f)) + ")"
}

// ParseFormat maps a smartmontools format name to its Format.
func ParseFormat(name string) (Format, error) {
	for f, n := range formatNames {
		if n == name {
			return Format(f), nil
		}
	}
	return 0, fmt.Errorf("unknown raw value format %q", name)
}

// Temperature reports whether the format holds a temperature.
func (f Format) Temperature() bool { return f == FormatTempMinMax || f == FormatTemp10X }

// Duration reports whether the format holds a time span.
func (f Format) Duration() bool {
	switch f {
	case FormatSec2Hour, FormatMin2Hour, FormatHalfMin2Hour, FormatMsec24Hour32:
		return true
	}
	return false
}

// defaultByteOrder is the byte order a format implies when the database
// gives none. Letters: 0-5 raw bytes, r the reserved byte after them, v the
// normalized value, w the worst value, z a zero byte; most significant first.
func (f Format) defaultByteOrder() string {
	switch f {
	case FormatRaw64, FormatHex64:
		return "543210wv"
	case FormatRaw56, FormatHex56, FormatRaw24DivRaw32, FormatMsec24Hour32:
		return "r543210"
	}
	return "543210"
}

// validByteOrder reports whether s is a byte order the decoder understands.
func validByteOrder(s string) bool {
	if len(s) == 0 || len(s) > 8 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("012345rvwz", c) {
			return false
		}
	}
	return true
}

// RawValue is an attribute's raw bytes decoded per its format.
type RawValue struct {
	Format Format
	// Bits is the raw bytes assembled in the format's byte order: the number
	// smartctl reports as raw.value.
	Bits uint64
	// Value is the one number the raw bytes mean: a count for counters (word
	// 0 of raw16, the error part of raw24/raw32), whole hours for durations,
	// degrees Celsius for temperatures. It saturates at math.MaxInt64.
	Value int64
	// Aux is the second number of two-part formats: the operation count of
	// raw24/raw24 and raw24/raw32, the average of raw16(avg16), word 2 of
	// min2hour. Zero otherwise.
	Aux int64
	// Duration is the exact time span of duration formats.
	Duration time.Duration
	// Min and Max are the lifetime temperature extremes of tempminmax when
	// the byte layout gives them away (HasMinMax).
	Min, Max  int
	HasMinMax bool
	// OverTemp is the over-temperature event count some WDC drives store in
	// word 2 of their temperature attribute.
	OverTemp int

	layout tempLayout
}

// tempLayout records which tempminmax byte layout matched.
type tempLayout uint8

const (
	tempUnknown tempLayout = iota
	tempCurrentOnly
	tempMinMax
)

// DecodeRaw decodes an attribute's raw bytes with the given format and byte
// order ("" for the format's default; an invalid order also falls back to
// the default).
func DecodeRaw(a RawAttribute, f Format, byteOrder string) RawValue {
	if f >= numFormats {
		f = FormatRaw48
	}
	if !validByteOrder(byteOrder) {
		byteOrder = f.defaultByteOrder()
	}
	var bitsVal uint64
	for i := 0; i < len(byteOrder); i++ {
		var c byte
		switch ch := byteOrder[i]; ch {
		case 'r':
			c = a.Reserved
		case 'v':
			c = a.Value
		case 'w':
			c = a.Worst
		case 'z':
			c = 0
		default:
			c = a.RawBytes[ch-'0']
		}
		bitsVal = bitsVal<<8 | uint64(c)
	}
	r := RawValue{Format: f, Bits: bitsVal}
	word := func(i uint) int64 { return int64(bitsVal >> (16 * i) & 0xFFFF) }
	switch f {
	case FormatRaw8, FormatRaw48, FormatHex48, FormatRaw56, FormatHex56, FormatRaw64, FormatHex64:
		r.Value = clampInt64(bitsVal)
	case FormatRaw16, FormatRaw16OptRaw16:
		r.Value = word(0)
	case FormatRaw16OptAvg16:
		r.Value, r.Aux = word(0), word(1)
	case FormatRaw24OptRaw8:
		r.Value = int64(bitsVal & 0xFFFFFF)
	case FormatRaw24DivRaw24:
		r.Value, r.Aux = clampInt64(bitsVal>>24), int64(bitsVal&0xFFFFFF)
	case FormatRaw24DivRaw32:
		r.Value, r.Aux = clampInt64(bitsVal>>32), int64(bitsVal&0xFFFFFFFF)
	case FormatSec2Hour:
		r.Duration = spanOf(bitsVal, time.Second)
		r.Value = clampInt64(bitsVal / 3600)
	case FormatMin2Hour:
		minutes := bitsVal & 0xFFFFFFFF
		r.Duration = spanOf(minutes, time.Minute)
		r.Value, r.Aux = int64(minutes/60), word(2)
	case FormatHalfMin2Hour:
		r.Duration = spanOf(bitsVal, 30*time.Second)
		r.Value = clampInt64(bitsVal / 120)
	case FormatMsec24Hour32:
		hours, ms := bitsVal&0xFFFFFFFF, bitsVal>>32
		r.Value = int64(hours)
		r.Duration = addSpan(spanOf(hours, time.Hour), spanOf(ms, time.Millisecond))
	case FormatTempMinMax:
		r.decodeTemperature()
	case FormatTemp10X:
		r.Value = word(0) / 10
	}
	return r
}

// decodeTemperature finds the current, lowest and highest temperature in a
// tempminmax raw value. Vendors lay these bytes out differently (bytes shown
// 5..0, T current, L/H the two extremes in either order, x a sign-extension
// byte 00h/FFh, C an event counter):
//
//	00 00 00 00 x T   current only
//	00 00 H  L  x T   Seagate, Samsung, Toshiba, Maxtor
//	00 00 00 H  L T   WDC
//	x  H  x  L  x T   Hitachi/HGST (and L/H swapped on Kingston)
//	C  C  H  L  x T   WDC with an over-temperature count
//
// A layout is only believed when its two extremes bracket the current value
// within -60..120 °C; otherwise only the current value is reported.
func (r *RawValue) decodeTemperature() {
	var b [6]byte
	for i := range b {
		b[i] = byte(r.Bits >> (8 * i))
	}
	w0 := uint16(b[0]) | uint16(b[1])<<8
	w1 := uint16(b[2]) | uint16(b[3])<<8
	w2 := uint16(b[4]) | uint16(b[5])<<8
	t := int(int8(b[0]))
	r.Value = int64(t)

	// A word holds just a temperature when its high byte only extends its
	// low byte: as an unsigned-high-zero byte, or as a signed word.
	asByte := func(w uint16) bool { return w <= 0xFF }
	asWord := func(w uint16) bool { return w <= 0x7F || w >= 0xFF80 }
	w0ok := asByte(w0) || asWord(w0)

	var lo, hi int
	var ok bool
	switch {
	case w2 == 0 && w1 == 0 && w0ok:
		r.layout = tempCurrentOnly
		return
	case w2 == 0:
		if lo, hi, ok = bracket(t, b[2], b[3]); !ok || !w0ok {
			lo, hi, ok = bracket(t, b[1], b[2])
			ok = ok && b[3] == 0
		}
	case w0ok:
		sameKind := (asByte(w0) && asByte(w1) && asByte(w2)) || (asWord(w0) && asWord(w1) && asWord(w2))
		if lo, hi, ok = bracket(t, b[2], b[4]); ok && sameKind {
			break
		}
		if lo, hi, ok = bracket(t, b[2], b[3]); ok && w2 < 0x7FFF && hi >= 40 {
			r.OverTemp = int(w2)
		} else {
			ok = false
		}
	}
	if ok {
		r.Min, r.Max, r.HasMinMax = lo, hi, true
		r.layout = tempMinMax
	}
}

// bracket reads x and y as signed bytes and reports them as (low, high) when
// they plausibly are lifetime extremes around the current value t.
func bracket(t int, x, y byte) (lo, hi int, ok bool) {
	lo, hi = int(int8(x)), int(int8(y))
	if lo > hi {
		lo, hi = hi, lo
	}
	// -1..0 is what an unset FFh/00h pair looks like, not a range.
	ok = lo >= -60 && lo <= t && t <= hi && hi <= 120 && !(lo == -1 && hi <= 0)
	return lo, hi, ok
}

// String renders the value the way smartctl prints its RAW_VALUE column, so
// logs and events read familiar and tests can compare with smartctl output.
func (r RawValue) String() string {
	v := r.Bits
	b := func(i uint) uint64 { return v >> (8 * i) & 0xFF }
	w := func(i uint) uint64 { return v >> (16 * i) & 0xFFFF }
	switch r.Format {
	case FormatRaw8:
		return fmt.Sprintf("%d %d %d %d %d %d", b(5), b(4), b(3), b(2), b(1), b(0))
	case FormatRaw16:
		return fmt.Sprintf("%d %d %d", w(2), w(1), w(0))
	case FormatHex48:
		return fmt.Sprintf("0x%012x", v)
	case FormatHex56:
		return fmt.Sprintf("0x%014x", v)
	case FormatHex64:
		return fmt.Sprintf("0x%016x", v)
	case FormatRaw16OptRaw16:
		if w(1) != 0 || w(2) != 0 {
			return fmt.Sprintf("%d (%d %d)", w(0), w(2), w(1))
		}
		return strconv.FormatUint(w(0), 10)
	case FormatRaw16OptAvg16:
		if w(1) != 0 {
			return fmt.Sprintf("%d (Average %d)", w(0), w(1))
		}
		return strconv.FormatUint(w(0), 10)
	case FormatRaw24OptRaw8:
		if v>>24&0xFFFFFF != 0 {
			return fmt.Sprintf("%d (%d %d %d)", v&0xFFFFFF, b(5), b(4), b(3))
		}
		return strconv.FormatUint(v&0xFFFFFF, 10)
	case FormatRaw24DivRaw24:
		return fmt.Sprintf("%d/%d", v>>24, v&0xFFFFFF)
	case FormatRaw24DivRaw32:
		return fmt.Sprintf("%d/%d", v>>32, v&0xFFFFFFFF)
	case FormatSec2Hour:
		return fmt.Sprintf("%dh+%02dm+%02ds", v/3600, v%3600/60, v%60)
	case FormatMin2Hour:
		m := v & 0xFFFFFFFF
		s := fmt.Sprintf("%dh+%02dm", m/60, m%60)
		if w(2) != 0 {
			s += fmt.Sprintf(" (%d)", w(2))
		}
		return s
	case FormatHalfMin2Hour:
		return fmt.Sprintf("%dh+%02dm", v/120, v%120/2)
	case FormatMsec24Hour32:
		ms := v >> 32
		return fmt.Sprintf("%dh+%02dm+%02d.%03ds", v&0xFFFFFFFF, ms/1000/60, ms/1000%60, ms%1000)
	case FormatTempMinMax:
		switch {
		case r.OverTemp != 0:
			return fmt.Sprintf("%d (Min/Max %d/%d #%d)", r.Value, r.Min, r.Max, r.OverTemp)
		case r.HasMinMax:
			return fmt.Sprintf("%d (Min/Max %d/%d)", r.Value, r.Min, r.Max)
		case r.layout == tempCurrentOnly:
			return strconv.FormatInt(r.Value, 10)
		}
		return fmt.Sprintf("%d (%d %d %d %d %d)", b(0), b(5), b(4), b(3), b(2), b(1))
	case FormatTemp10X:
		return fmt.Sprintf("%d.%d", w(0)/10, w(0)%10)
	}
	return strconv.FormatUint(v, 10)
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// spanOf multiplies n by unit, saturating at the largest Duration.
func spanOf(n uint64, unit time.Duration) time.Duration {
	if n > uint64(math.MaxInt64/unit) {
		return math.MaxInt64
	}
	return time.Duration(n) * unit
}

func addSpan(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

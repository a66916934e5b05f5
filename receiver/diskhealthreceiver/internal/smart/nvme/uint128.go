package nvme

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
)

// Uint128 is one of the SMART log's 16-byte little-endian counters, kept
// exact. Conversions are explicit about what happens beyond 64 bits:
// Uint64 saturates at 2^64-1 and says so, Float64 rounds.
type Uint128 struct {
	Lo, Hi uint64
}

func uint128At(b []byte) Uint128 {
	return Uint128{Lo: binary.LittleEndian.Uint64(b), Hi: binary.LittleEndian.Uint64(b[8:])}
}

// Uint64 returns the counter if it fits in 64 bits, else 2^64-1 and false.
func (u Uint128) Uint64() (uint64, bool) {
	if u.Hi != 0 {
		return math.MaxUint64, false
	}
	return u.Lo, true
}

// Float64 returns the counter rounded to the nearest float64 (exact below
// 2^53).
func (u Uint128) Float64() float64 {
	return float64(u.Hi)*0x1p64 + float64(u.Lo)
}

// Cmp compares u and v: -1, 0 or +1.
func (u Uint128) Cmp(v Uint128) int {
	switch {
	case u.Hi != v.Hi:
		if u.Hi < v.Hi {
			return -1
		}
		return 1
	case u.Lo != v.Lo:
		if u.Lo < v.Lo {
			return -1
		}
		return 1
	}
	return 0
}

// IsZero reports whether the counter is 0.
func (u Uint128) IsZero() bool { return u.Lo == 0 && u.Hi == 0 }

// MulUint64 returns u×m, saturating at 2^128-1.
func (u Uint128) MulUint64(m uint64) Uint128 {
	hiHi, hiLo := bits.Mul64(u.Hi, m)
	loHi, loLo := bits.Mul64(u.Lo, m)
	hi, carry := bits.Add64(hiLo, loHi, 0)
	if hiHi != 0 || carry != 0 {
		return Uint128{Lo: math.MaxUint64, Hi: math.MaxUint64}
	}
	return Uint128{Lo: loLo, Hi: hi}
}

// String is the decimal value, as nvme-cli prints it.
func (u Uint128) String() string {
	if u.Hi == 0 {
		return new(big.Int).SetUint64(u.Lo).String()
	}
	v := new(big.Int).SetUint64(u.Hi)
	v.Lsh(v, 64)
	return v.Or(v, new(big.Int).SetUint64(u.Lo)).String()
}

// Sub returns u-v; the caller makes sure v ≤ u.
func (u Uint128) Sub(v Uint128) Uint128 {
	lo, borrow := bits.Sub64(u.Lo, v.Lo, 0)
	hi, _ := bits.Sub64(u.Hi, v.Hi, borrow)
	return Uint128{Lo: lo, Hi: hi}
}

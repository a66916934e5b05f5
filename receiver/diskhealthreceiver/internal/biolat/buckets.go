package biolat

import (
	"math"
	"math/big"
	"math/bits"
)

// Scale is the exponential-histogram scale of every histogram: bucket i holds (2^(i/8), 2^((i+1)/8)]
// seconds, Prometheus native-histogram schema 3 (buckets about 9 % wide).
const Scale = 3

// The BPF histogram's slots cover bucket indexes [firstIndex, firstIndex+slotCount) at Scale,
// 2^-20 s (0.95 µs) to 2^10 s; the top slot also takes anything longer.
const (
	slotCount  = 240
	firstIndex = -160
)

// ZeroThreshold is the upper bound of the zero bucket, in seconds: latencies at or below it (and
// exact zeros) are counted in ZeroCount.
var ZeroThreshold = math.Ldexp(1, firstIndex>>Scale)

// thresholds returns the constants that bucketIndex (and slot_of in bpf/biolat.bpf.c) need to map a
// latency in nanoseconds to its bucket at scale s, with integers only.
//
// With ns = 2^e·m, m in [1, 2), and 2^s·log2(1e9) = A + a (A an integer, a in [0, 1)), the index is
// e·2^s − A − 1 + #{k < 2^s : m > 2^((k+a)/2^s)}. As 63-bit fixed point the bounds are
// T_k = ⌊(10^(9·2^s) · 2^(k−A+63·2^s))^(1/2^s)⌋, an integer 2^s-th root taken as s nested integer
// square roots (⌊√⌊√x⌋⌋ = ⌊x^¼⌋); base is −A−1.
func thresholds(s int) (t []uint64, base int32) {
	n := 1 << s
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(9*n)), nil) // 10^(9·2^s) = (1e9)^(2^s)
	a := p.BitLen() - 1                                                // A = ⌊2^s·log2(1e9)⌋
	t = make([]uint64, n)
	for k := range n {
		x := new(big.Int).Lsh(p, uint(k-a+63*n))
		for range s {
			x.Sqrt(x)
		}
		t[k] = x.Uint64()
	}
	return t, int32(-a - 1)
}

// SlotConstants is what bpf/slots.h's thresholds and index_base are set to before a program that
// includes it is loaded.
func SlotConstants() (t [1 << Scale]uint64, base int32) {
	s, base := thresholds(Scale)
	return [1 << Scale]uint64(s), base
}

// bucketIndex is slot_of's math without the slot range: the scale-s bucket index of ns > 0
// nanoseconds, given thresholds(s).
func bucketIndex(ns uint64, t []uint64, base int32, s int) int32 {
	e := bits.Len64(ns) - 1
	mant := ns << (63 - e)
	i := int32(e<<s) + base
	for _, tk := range t {
		if mant > tk {
			i++
		}
	}
	return i
}

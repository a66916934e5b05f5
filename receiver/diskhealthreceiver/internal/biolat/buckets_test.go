package biolat

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// exactIndex is the definition: the i with b^i < ns/1e9 ≤ b^(i+1), b = 2^(2^-s), decided on integers
// alone as ns^(2^s) ≤ 10^(9·2^s)·2^(i+1).
func exactIndex(ns uint64, s int) int32 {
	n := int64(1) << s
	lhs := new(big.Int).Exp(new(big.Int).SetUint64(ns), big.NewInt(n), nil)
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(9*n), nil)
	fits := func(i int32) bool { // ns^(2^s) ≤ 10^(9·2^s) · 2^(i+1)
		l, r := new(big.Int).Set(lhs), new(big.Int).Set(scale)
		if i+1 >= 0 {
			r.Lsh(r, uint(i+1))
		} else {
			l.Lsh(l, uint(-(i + 1)))
		}
		return l.Cmp(r) <= 0
	}
	// A float estimate, then walk to the exact answer.
	i := int32(math.Ceil(math.Log2(float64(ns)/1e9)*float64(n))) - 1
	for !fits(i) {
		i++
	}
	for fits(i - 1) {
		i--
	}
	return i
}

// testValues are the boundary cases and n log-uniform values from 1 ns to 1000 s.
func testValues(n int, s int) []uint64 {
	v := []uint64{1, 2, 3, 999, 1000, 1001, 953, 954, 1953125, 1953124, 1953126,
		1e9 - 1, 1e9, 1e9 + 1, 2e9, 2e9 + 1, 1<<63 - 1, 1 << 63, math.MaxUint64}
	// Every ns that lies next to a bucket boundary between 1 µs and 100 s.
	for i := int32(-20 << s); i < int32(7<<s); i++ {
		b := math.Pow(2, float64(i)/float64(int(1)<<s)) * 1e9
		for d := -1.0; d <= 1; d++ {
			v = append(v, uint64(math.Round(b+d)))
		}
	}
	r := rand.New(rand.NewPCG(1, uint64(s)))
	for range n {
		v = append(v, uint64(math.Exp(r.Float64()*math.Log(1e12))))
	}
	return v
}

func TestBucketIndexMatchesDefinition(t *testing.T) {
	for s := 0; s <= 4; s++ {
		th, base := thresholds(s)
		mismatches := 0
		for _, ns := range testValues(20000, s) {
			if ns == 0 {
				continue
			}
			if got, want := bucketIndex(ns, th, base, s), exactIndex(ns, s); got != want {
				mismatches++
				if mismatches < 5 {
					t.Errorf("scale %d, %d ns: index %d, want %d", s, ns, got, want)
				}
			}
		}
		require.Zero(t, mismatches, "scale %d", s)
	}
}

func TestBucketIndexRationalBoundaries(t *testing.T) {
	th, base := thresholds(Scale)
	// Buckets are upper-inclusive: 1 s is the top of bucket -1, 2 s the top of bucket 7, and
	// 1953125 ns = 2^-9 s the top of bucket -73.
	require.Equal(t, int32(-1), bucketIndex(1e9, th, base, Scale))
	require.Equal(t, int32(0), bucketIndex(1e9+1, th, base, Scale))
	require.Equal(t, int32(7), bucketIndex(2e9, th, base, Scale))
	require.Equal(t, int32(-73), bucketIndex(1953125, th, base, Scale))
	require.Equal(t, int32(-72), bucketIndex(1953126, th, base, Scale))
	// The zero threshold, 2^-20 s = 953.67 ns: 953 ns is below the first slot, 954 ns in it.
	require.Less(t, bucketIndex(953, th, base, Scale), int32(firstIndex))
	require.Equal(t, int32(firstIndex), bucketIndex(954, th, base, Scale))
}

func TestThresholdsScale3(t *testing.T) {
	th, base := thresholds(Scale)
	require.Len(t, th, 8)
	require.Equal(t, int32(-240), base) // A = bitlen(10^72) - 1 = 239
	for k, v := range th {
		require.GreaterOrEqual(t, v, uint64(1)<<63, "T_%d", k)
		if k > 0 {
			require.Greater(t, v, th[k-1])
		}
	}
}

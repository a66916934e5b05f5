package biolat

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCombineHistograms(t *testing.T) {
	a := Histogram{ZeroCount: 1, Offset: -10, Buckets: []uint64{1, 0, 2}, Count: 4, Sum: 1}
	b := Histogram{ZeroCount: 2, Offset: -12, Buckets: []uint64{3}, Count: 5, Sum: 2}
	sum := a.Add(b)
	require.Equal(t, Histogram{ZeroCount: 3, Offset: -12, Buckets: []uint64{3, 0, 1, 0, 2}, Count: 9, Sum: 3}, sum)
	require.Equal(t, a, sum.Sub(b))
	require.Equal(t, Histogram{}, a.Sub(a))
	require.Equal(t, a, Histogram{}.Add(a))
}

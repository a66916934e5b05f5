package topn

import (
	"cmp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHoldersHysteresis(t *testing.T) {
	h := New[string](2)
	h.Update(map[string]uint64{"a": 10, "b": 5, "c": 1}, cmp.Compare[string])
	require.True(t, h.Held("a"))
	require.True(t, h.Held("b"))
	require.False(t, h.Held("c"), "no free slot, and 1 is not twice b's 5")
	// b idle keeps its slot while c is not twice as active as b's decayed activity.
	h.Update(map[string]uint64{"a": 10, "b": 0, "c": 5}, cmp.Compare[string])
	require.True(t, h.Held("b"), "c 5.75 is not more than twice b's 3.75")
	// c ten times as busy takes the slot at once.
	h.Update(map[string]uint64{"a": 10, "b": 0, "c": 50}, cmp.Compare[string])
	require.True(t, h.Held("c"))
	require.False(t, h.Held("b"))
	require.Equal(t, 2, h.Len())
	// A key not listed is gone: its slot is free, its state freed.
	h.Update(map[string]uint64{"c": 1}, cmp.Compare[string])
	require.Equal(t, 1, h.Len())
	require.Equal(t, 1, h.Live())
	require.False(t, h.Held("a"))
}

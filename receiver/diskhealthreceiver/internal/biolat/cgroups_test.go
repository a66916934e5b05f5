package biolat

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// cgVal is a struct cg_val with count requests in bucket index -80 (about 1 ms), sum ns and bytes.
func cgVal(count, sum, bytes uint64) []byte {
	var v rawCgVal
	binary.LittleEndian.PutUint64(v[8*(-80-firstIndex):], count)
	binary.LittleEndian.PutUint64(v[8*(slotCount+1):], sum)
	binary.LittleEndian.PutUint64(v[8*(slotCount+2):], bytes)
	return v[:]
}

func TestCgroupKeyRoundTrip(t *testing.T) {
	k := cgKey{cgid: 1<<40 | 7, dev: Dev{Major: 259, Minor: 3}, dir: Write}
	raw := encodeCgKey(k)
	got, err := decodeCgKey(raw[:])
	require.NoError(t, err)
	require.Equal(t, k, got)
	raw[12] = byte(numDirections)
	_, err = decodeCgKey(raw[:])
	require.ErrorIs(t, err, errBadKey)
	_, err = decodeCgKey(raw[:8])
	require.ErrorIs(t, err, errBadKey)
}

// Live ids become series with their paths; an id no live cgroup has is never a series: it is dead, and
// once retired its counts are in its device's Other, added to the BPF Other table's, cumulatively.
func TestSplitCgroupsAndOther(t *testing.T) {
	sda, loop := Dev{Major: 8}, Dev{Major: 7, Minor: 1}
	entries := []cgEntry{
		{key: cgKey{cgid: 10, dev: sda, dir: Read}, val: cgVal(5, 5e6, 20480)},
		{key: cgKey{cgid: 11, dev: sda, dir: Read}, val: cgVal(2, 2e6, 8192)},
		{key: cgKey{cgid: 12, dev: loop, dir: Write}, val: cgVal(1, 1e6, 4096)},
	}
	live, dead := splitCgroups(entries, map[uint64]string{1: "/", 10: "/a"})
	require.Equal(t, []cgKey{{cgid: 11, dev: sda, dir: Read}, {cgid: 12, dev: loop, dir: Write}}, dead)
	require.Len(t, live, 1)
	require.Equal(t, CgroupSeries{CgroupID: 10, Path: "/a", Dev: sda, Direction: Read, Bytes: 20480,
		Histogram: Histogram{Offset: -80, Buckets: []uint64{5}, Count: 5, Sum: 5e-3}}, live[0])

	retired := map[cgKey]*rawCgVal{}
	retire(retired, dead[0], entries[1].val)
	retire(retired, dead[1], entries[2].val)
	others := []cgEntry{{key: cgKey{dev: sda, dir: Read}, val: cgVal(3, 3e6, 0)}}
	other := otherSeries(others, retired)
	require.Len(t, other, 2)
	require.Equal(t, loop, other[0].Dev)
	require.Equal(t, uint64(1), other[0].Histogram.Count)
	require.Equal(t, sda, other[1].Dev)
	require.Equal(t, uint64(5), other[1].Histogram.Count) // 2 retired + 3 in the BPF table
	require.Equal(t, uint64(8192), other[1].Bytes)
	require.InDelta(t, 5e-3, other[1].Histogram.Sum, 1e-12)
	require.Zero(t, other[1].CgroupID)
	require.Empty(t, other[1].Path)

	// Reading again does not add the retired sums twice.
	require.Equal(t, other, otherSeries(others, retired))
}

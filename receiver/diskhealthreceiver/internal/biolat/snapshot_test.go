package biolat

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

func histBytes(zero, sumNs uint64, slots map[int]uint64) []byte {
	b := make([]byte, histValSize)
	for i, n := range slots {
		binary.LittleEndian.PutUint64(b[8*i:], n)
	}
	binary.LittleEndian.PutUint64(b[8*slotCount:], zero)
	binary.LittleEndian.PutUint64(b[8*(slotCount+1):], sumNs)
	return b
}

func TestDecodeHist(t *testing.T) {
	// Slot 80 is bucket -80, which holds 1 ms: (0.977, 1.065] ms.
	h := DecodeHist(histBytes(2, 3_500_000_000, map[int]uint64{80: 5, 82: 1, 239: 4}))
	require.Equal(t, Histogram{ZeroCount: 2, Offset: -80, Buckets: append([]uint64{5, 0, 1}, append(make([]uint64, 156), 4)...), Count: 12, Sum: 3.5}, h)

	th, base := thresholds(Scale)
	require.Equal(t, int32(-80), bucketIndex(1_000_000, th, base, Scale))

	require.Equal(t, Histogram{ZeroCount: 7, Count: 7}, DecodeHist(histBytes(7, 0, nil)))
	first := DecodeHist(histBytes(0, 1, map[int]uint64{0: 1}))
	require.Equal(t, int32(firstIndex), first.Offset)
	require.Equal(t, []uint64{1}, first.Buckets)
}

func TestKeys(t *testing.T) {
	d := Dev{Major: 259, Minor: 1 << 19}
	for dir := range numDirections {
		for kind := range numKinds {
			k := histKey(d, dir, kind)
			gd, gdir, gkind, err := decodeHistKey(k[:])
			require.NoError(t, err)
			require.Equal(t, []any{d, dir, kind}, []any{gd, gdir, gkind})
		}
	}
	k := histKey(Dev{Major: 7, Minor: 3}, Flush, Total)
	require.Equal(t, rawKey{3, 0, 0x70, 0, 3, 0, 0, 0}, k) // MKDEV(7, 3) = 7<<20 | 3, little-endian
	k[4] = 4
	_, _, _, err := decodeHistKey(k[:])
	require.ErrorIs(t, err, errBadKey)
	_, _, _, err = decodeHistKey(k[:7])
	require.ErrorIs(t, err, errBadKey)

	dev, dir, code, err := decodeErrKey([]byte{0, 0, 0x80, 0, 1, 10, 0, 0})
	require.NoError(t, err)
	require.Equal(t, []any{Dev{Major: 8}, Write, uint8(10)}, []any{dev, dir, code})
	require.Equal(t, "8:0", dev.String())
}

func TestNames(t *testing.T) {
	require.Equal(t, []string{"read", "write", "discard", "flush", "Direction(4)"},
		[]string{Read.String(), Write.String(), Discard.String(), Flush.String(), Direction(4).String()})
	require.Equal(t, []string{"total", "device", "Kind(2)"}, []string{Total.String(), DeviceTime.String(), Kind(2).String()})
}

func TestSortSnapshot(t *testing.T) {
	s := Snapshot{
		Series: []Series{{Dev: Dev{8, 16}}, {Dev: Dev{8, 0}, Direction: Write}, {Dev: Dev{8, 0}, Direction: Read, Kind: DeviceTime}, {Dev: Dev{8, 0}}},
		Errors: []ErrorCount{{Dev: Dev{8, 0}, Status: "timeout"}, {Dev: Dev{8, 0}, Status: "ioerr"}},
	}
	sortSnapshot(&s)
	require.Equal(t, []Series{{Dev: Dev{8, 0}}, {Dev: Dev{8, 0}, Kind: DeviceTime}, {Dev: Dev{8, 0}, Direction: Write}, {Dev: Dev{8, 16}}}, s.Series)
	require.Equal(t, "ioerr", s.Errors[0].Status)
}

func FuzzDecodeHistKey(f *testing.F) {
	f.Add([]byte{3, 0, 0x70, 0, 3, 0, 0, 0})
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, dir, kind, err := decodeHistKey(b)
		if err != nil {
			return
		}
		k := histKey(d, dir, kind)
		// The padding bytes are not part of the key's meaning.
		require.Equal(t, b[:6], k[:6])
	})
}

func FuzzDecodeHist(f *testing.F) {
	f.Add(histBytes(1, 2, map[int]uint64{3: 4}), uint16(0))
	f.Fuzz(func(t *testing.T, seed []byte, at uint16) {
		b := make([]byte, histValSize)
		copy(b[int(at)%histValSize:], seed)
		h := DecodeHist(b)
		total := h.ZeroCount
		for _, n := range h.Buckets {
			total += n
		}
		require.Equal(t, total, h.Count)
		if len(h.Buckets) > 0 {
			require.NotZero(t, h.Buckets[0])
			require.NotZero(t, h.Buckets[len(h.Buckets)-1])
			require.GreaterOrEqual(t, h.Offset, int32(firstIndex))
			require.LessOrEqual(t, int(h.Offset)+len(h.Buckets), firstIndex+slotCount)
		}
	})
}

package dm

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func FuzzStatusLines(f *testing.F) {
	for _, s := range []string{
		"1 196/4096 1024/163840 - rw discard_passdown queue_if_no_space - 1024", "Fail", "Error", "-", "0 -",
		"2097152 4194303", "253:1 253:2 128 32768 1 skip_block_zeroing", "253:3 1",
		"2 0 0 0 1 1 A 0 2 0 8:16 A 0 8:32 F 1", "2 0 0 0 2 1 A 0 1 2 8:16 A 0 0 1 E 0 1 2 8:32 A 0 0 1",
		"9 512/4096 2048/163840 - ro no_discard_passdown queue_if_no_space needs_check 1024",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if p, err := ParseThinPoolStatus(line); err == nil && !p.Fail && !p.Error {
			require.LessOrEqual(t, p.UsedDataBlocks, p.TotalDataBlocks)
			require.LessOrEqual(t, p.UsedMetadataBlocks, p.TotalMetadataBlocks)
			require.True(t, p.DataRatio() >= 0 && p.DataRatio() <= 1)
			require.NotEmpty(t, p.Mode)
		}
		if tb, err := ParseThinPoolTable(line); err == nil {
			require.NotZero(t, tb.DataBlockBytes())
		}
		_, _ = ParseThinStatus(line)
		_, _ = ParseThinTable(line)
		if m, err := ParseMultipathStatus(line); err == nil {
			total, active, failed := m.Counts()
			require.Equal(t, total, active+failed)
			require.LessOrEqual(t, total, len(strings.Fields(line)))
		}
		_, _, _ = SplitLVMName(line)
		_ = ParseUUID(line)
	})
}

func FuzzWire(f *testing.F) {
	rec := make([]byte, 64)
	binary.NativeEndian.PutUint64(rec, encodeDev(253, 0))
	copy(rec[12:], "vg-lv\x00")
	f.Add(rec, uint32(1))
	spec := make([]byte, 80)
	copy(spec[24:], "thin")
	copy(spec[40:], "0 -\x00")
	f.Add(spec, uint32(1))
	f.Add([]byte{}, uint32(3))
	f.Fuzz(func(t *testing.T, b []byte, count uint32) {
		_, _ = decodeNameList(b)
		ts, _ := decodeTargets(b, count%64)
		require.LessOrEqual(t, len(ts), int(count%64))
		if h, err := decodeHeader(b); err == nil {
			_, _ = h.data(b)
		}
		maj, mnr := DevMajorMinor(uint64(count) | uint64(len(b))<<32)
		if maj < 1<<12 && mnr < 1<<20 {
			require.Equal(t, [2]uint32{maj, mnr}, func() [2]uint32 { a, b := DevMajorMinor(encodeDev(maj, mnr)); return [2]uint32{a, b} }())
		}
	})
}

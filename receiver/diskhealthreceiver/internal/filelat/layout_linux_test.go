//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelat

import (
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
)

// decodeSeries reads the map as raw bytes: its layout must be the object's, with biolat's histogram
// first so that biolat.DecodeHist reads it.
func TestMapLayout(t *testing.T) {
	spec, err := loadFilelat()
	require.NoError(t, err)
	files := spec.Maps[filelatMapFiles]
	require.Equal(t, uint32(keySize), files.KeySize)
	require.Equal(t, uint32(valSize), files.ValueSize)
	offsets := func(typ btf.Type) map[string]uint32 {
		s, ok := typ.(*btf.Struct)
		require.True(t, ok, "%v", typ)
		out := map[string]uint32{}
		for _, m := range s.Members {
			out[m.Name] = m.Offset.Bytes()
		}
		return out
	}
	h := uint32(biolat.HistSize)
	require.Equal(t, map[string]uint32{"mnt_id": 0, "op": 4, "pad": 5}, offsets(files.Key))
	require.Equal(t, map[string]uint32{"slots": 0, "zero": h - 16, "sum_ns": h - 8, "bytes": h, "pages": h + 8, "added": h + 16},
		offsets(files.Value))
	cg := spec.Maps[filelatMapCgfiles]
	require.Equal(t, uint32(cgKeySize), cg.KeySize)
	require.Equal(t, uint32(valSize), cg.ValueSize)
	require.Equal(t, map[string]uint32{"cgid": 0, "mnt_id": 8, "op": 12, "pad": 13}, offsets(cg.Key))
	require.Equal(t, offsets(files.Value), offsets(cg.Value))
	// The drop reasons Go reads are the BPF enum's.
	require.Equal(t, uint32(2), spec.Maps[filelatMapDrops].MaxEntries)
}

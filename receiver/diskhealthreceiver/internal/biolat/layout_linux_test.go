//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package biolat

import (
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"
)

// The Go decoders read the maps as raw bytes: their layout must be the object's.
func TestMapLayout(t *testing.T) {
	spec, err := loadBiolat()
	require.NoError(t, err)
	for _, name := range []string{"hists", "errors"} {
		require.Equal(t, uint32(keySize), spec.Maps[name].KeySize, name)
	}
	require.Equal(t, uint32(histValSize), spec.Maps["hists"].ValueSize)
	require.Equal(t, uint32(8), spec.Maps["errors"].ValueSize)

	offsets := func(typ btf.Type) map[string]uint32 {
		s, ok := typ.(*btf.Struct)
		require.True(t, ok, "%v", typ)
		out := map[string]uint32{}
		for _, m := range s.Members {
			out[m.Name] = m.Offset.Bytes()
		}
		return out
	}
	require.Equal(t, map[string]uint32{"dev": 0, "dir": 4, "kind": 5, "pad": 6}, offsets(spec.Maps["hists"].Key))
	require.Equal(t, map[string]uint32{"dev": 0, "dir": 4, "status": 5, "pad": 6}, offsets(spec.Maps["errors"].Key))
	require.Equal(t, map[string]uint32{"slots": 0, "zero": 8 * slotCount, "sum_ns": 8 * (slotCount + 1)}, offsets(spec.Maps["hists"].Value))

	// The drop reasons Go reads, in order, are the BPF enum's.
	require.Equal(t, uint32(4), spec.Maps["drops"].MaxEntries)
	require.Equal(t, uint32(8*8), spec.Variables[biolatVarThresholds].Size())
}

// The per-cgroup program's maps, likewise.
func TestCgroupMapLayout(t *testing.T) {
	spec, err := loadCglat()
	require.NoError(t, err)
	for _, name := range []string{cglatMapCghists, cglatMapOthers} {
		require.Equal(t, uint32(cgKeySize), spec.Maps[name].KeySize, name)
		require.Equal(t, uint32(cgValSize), spec.Maps[name].ValueSize, name)
	}
	s, ok := spec.Maps[cglatMapCghists].Key.(*btf.Struct)
	require.True(t, ok)
	offsets := map[string]uint32{}
	for _, m := range s.Members {
		offsets[m.Name] = m.Offset.Bytes()
	}
	require.Equal(t, map[string]uint32{"cgid": 0, "dev": 8, "dir": 12, "pad": 13}, offsets)
	v, ok := spec.Maps[cglatMapCghists].Value.(*btf.Struct)
	require.True(t, ok)
	offsets = map[string]uint32{}
	for _, m := range v.Members {
		offsets[m.Name] = m.Offset.Bytes()
	}
	require.Equal(t, map[string]uint32{"slots": 0, "zero": 8 * slotCount, "sum_ns": 8 * (slotCount + 1), "bytes": 8 * (slotCount + 2)}, offsets)
	// The counts Go reads, in order, are the BPF enum's.
	require.Equal(t, uint32(5), spec.Maps[cglatMapCounts].MaxEntries)
}

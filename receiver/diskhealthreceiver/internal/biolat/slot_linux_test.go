//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package biolat

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/require"
)

// The BPF program's own slot_of, run by the kernel on the values of TestBucketIndexMatchesDefinition,
// against the exact definition (the Go mirror is tested there; this tests the instructions).
func TestBPFSlotMatchesDefinition(t *testing.T) {
	requireRoot(t)
	spec, err := loadBiolat()
	require.NoError(t, err)
	probe := spec.Programs[biolatProgProbeSlot]
	_, err = configure(spec, kernelConfig{}, Options{}) // sets the thresholds, drops the other programs
	require.NoError(t, err)
	spec.Programs = map[string]*ebpf.ProgramSpec{biolatProgProbeSlot: probe}
	coll, err := ebpf.NewCollection(spec)
	require.NoError(t, err)
	defer coll.Close()
	prog := coll.Programs[biolatProgProbeSlot]

	values := testValues(20000, Scale)
	for _, ns := range values {
		ret, err := prog.Run(&ebpf.RunOptions{Context: struct{ NS uint64 }{ns}})
		require.NoError(t, err)
		want := uint32(0) // zero bucket
		if ns != 0 {
			if i := exactIndex(ns, Scale); i >= firstIndex {
				want = uint32(min(i-firstIndex, slotCount-1)) + 1
			}
		}
		require.Equal(t, want, ret, "%d ns", ns)
	}
	t.Logf("%d values, every slot as defined", len(values))
}

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

// The BPF program's own is_passthrough, run by the kernel: the error count skips the operations of
// pass-through requests on every kernel the probe loads on (REQ_OP_SCSI_IN/OUT up to 5.10, DRV_IN/OUT
// since), whose CHECK CONDITION answers to SMART's CK_COND commands are no I/O errors, and no other.
func TestBPFPassthroughOps(t *testing.T) {
	requireRoot(t)
	spec, err := loadBiolat()
	require.NoError(t, err)
	probe := spec.Programs[biolatProgProbePassthrough]
	_, err = configure(spec, kernelConfig{}, Options{})
	require.NoError(t, err)
	spec.Programs = map[string]*ebpf.ProgramSpec{biolatProgProbePassthrough: probe}
	coll, err := ebpf.NewCollection(spec)
	require.NoError(t, err)
	defer coll.Close()
	prog := coll.Programs[biolatProgProbePassthrough]
	for op := uint32(0); op < 64; op++ {
		ret, err := prog.Run(&ebpf.RunOptions{Context: struct{ Op uint32 }{op}})
		require.NoError(t, err)
		require.Equal(t, op >= 32 && op <= 35, ret == 1, "op %d", op)
	}
}

//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package biolat

import (
	"bytes"
	"os"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// fakeKernel builds a kernel BTF with the given tracepoints (name → parameter types after the
// probe's data pointer) and, when rqf is set, a named enum rqf_flags.
func fakeKernel(t *testing.T, tps map[string][]btf.Type, rqf bool) *btf.Spec {
	t.Helper()
	var types []btf.Type
	voidPtr := &btf.Pointer{Target: &btf.Void{}}
	for name, params := range tps {
		proto := &btf.FuncProto{Return: &btf.Void{}, Params: []btf.FuncParam{{Type: voidPtr}}}
		for _, p := range params {
			proto.Params = append(proto.Params, btf.FuncParam{Type: p})
		}
		types = append(types, &btf.Typedef{Name: "btf_trace_" + name, Type: &btf.Pointer{Target: proto}})
	}
	if rqf {
		types = append(types, &btf.Enum{Name: "rqf_flags", Size: 4, Values: []btf.EnumValue{
			{Name: "__RQF_STARTED", Value: 0}, {Name: "__RQF_FLUSH_SEQ", Value: 1}, {Name: "__RQF_QUIET", Value: 7}, {Name: "__RQF_IO_STAT", Value: 8}}})
	}
	b, err := btf.NewBuilder(types, nil)
	require.NoError(t, err)
	raw, err := b.Marshal(nil, nil)
	require.NoError(t, err)
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	require.NoError(t, err)
	return spec
}

func TestInspectKernelVersions(t *testing.T) {
	u8 := &btf.Int{Name: "unsigned char", Size: 1}
	status := &btf.Typedef{Name: "blk_status_t", Type: u8}
	errno := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	uint := &btf.Int{Name: "unsigned int", Size: 4}
	rq := &btf.Pointer{Target: &btf.Struct{Name: "request"}}
	q := &btf.Pointer{Target: &btf.Struct{Name: "request_queue"}}

	// 6.18: block_io_done, blk_status_t, one-argument issue, rqf_flags enum.
	cfg, err := inspectKernel(fakeKernel(t, map[string][]btf.Type{
		"block_io_done": {rq}, "block_rq_complete": {rq, status, uint}, "block_rq_issue": {rq},
	}, true), "6.18")
	require.NoError(t, err)
	require.Equal(t, kernelConfig{ioDone: true, rqfIOStat: 1 << 8, rqfFlushSeq: 1 << 1, rqfQuiet: 1 << 7}, cfg)

	// 6.1 (Debian 12): no block_io_done, flags as #defines.
	cfg, err = inspectKernel(fakeKernel(t, map[string][]btf.Type{
		"block_rq_complete": {rq, status, uint}, "block_rq_issue": {rq},
	}, false), "6.1")
	require.NoError(t, err)
	require.Equal(t, kernelConfig{rqfIOStat: 1 << 13, rqfFlushSeq: 1 << 4, rqfQuiet: 1 << 11}, cfg)

	// 5.10 before 5.10.137: errno and block_rq_issue(q, rq).
	cfg, err = inspectKernel(fakeKernel(t, map[string][]btf.Type{
		"block_rq_complete": {rq, errno, uint}, "block_rq_issue": {q, rq},
	}, false), "5.10")
	require.NoError(t, err)
	require.Equal(t, kernelConfig{issueTwoArgs: true, statusIsErrno: true, rqfIOStat: 1 << 13, rqfFlushSeq: 1 << 4, rqfQuiet: 1 << 11}, cfg)

	// Nothing to attach to.
	_, err = inspectKernel(fakeKernel(t, map[string][]btf.Type{"block_rq_issue": {rq}}, false), "5.4.0-1")
	var unavailable *UnavailableError
	require.ErrorAs(t, err, &unavailable)
	require.Equal(t, CauseOldKernel, unavailable.Cause)
	require.Contains(t, err.Error(), "kernel 5.4.0-1 has neither")
}

// This machine's kernel, read for real.
func TestInspectThisKernel(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		testkit.Unavailable(t, "this kernel has no BTF: %v", err)
	}
	spec, err := loadKernelBTF()
	require.NoError(t, err)
	st := readProcessState()
	cfg, err := inspectKernel(spec, st.release)
	require.NoError(t, err)
	t.Logf("kernel %s: %+v", st.release, cfg)
	require.Equal(t, st.kernel.atLeast(kernelVersion{6, 5}), cfg.ioDone)
	if st.kernel.atLeast(kernelVersion{6, 10}) {
		require.Equal(t, kernelConfig{ioDone: true, rqfIOStat: 1 << 8, rqfFlushSeq: 1 << 1, rqfQuiet: 1 << 7}, cfg)
	}
}

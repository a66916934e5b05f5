package biolat

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// classifyCase is one error and process state, and what classify makes of them.
type classifyCase struct {
	name        string
	err         error
	unsupported bool
	st          processState
	cause       Cause
	missing     []string
	says        string
}

func TestClassify(t *testing.T) {
	eperm := fmt.Errorf("map create: %w", syscall.EPERM)
	k618 := processState{kernel: kernelVersion{6, 18}, release: "6.18.44", seccomp: "0", lockdown: "[none] integrity confidentiality"}
	with := func(st processState, caps ...uint) processState {
		for _, c := range caps {
			st.capEff |= 1 << c
		}
		return st
	}
	// What cilium/ebpf returns when its feature probe was refused with EPERM: the feature "not supported".
	unsupported := errors.New("map create: prealloc maps not supported (requires >= v4.6)")
	cases := []classifyCase{
		{"no caps", eperm, false, k618, CauseMissingCapabilities, []string{"CAP_BPF", "CAP_PERFMON"},
			"lacks CAP_BPF, CAP_PERFMON: grant it (Kubernetes: securityContext.capabilities.add [BPF, PERFMON]; Docker: --cap-add BPF --cap-add PERFMON)"},
		{"bpf only", eperm, false, with(k618, capBPF), CauseMissingCapabilities, []string{"CAP_PERFMON"}, "lacks CAP_PERFMON"},
		{"sys_admin covers both", eperm, false, with(k618, capSysAdmin), CauseDenied, nil, "a seccomp filter or kernel lockdown blocks bpf()"},
		{"seccomp", eperm, false, with(processState{kernel: kernelVersion{6, 1}, seccomp: "2"}, capBPF, capPerfmon), CauseDenied, nil,
			"so a seccomp filter blocks bpf(): allow the bpf syscall"},
		{"lockdown", eperm, false, with(processState{kernel: kernelVersion{6, 1}, seccomp: "0", lockdown: "none integrity [confidentiality]"}, capBPF, capPerfmon),
			CauseDenied, nil, "kernel lockdown (confidentiality) blocks bpf()"},
		{"before CAP_BPF", eperm, false, processState{kernel: kernelVersion{5, 4}}, CauseMissingCapabilities, []string{"CAP_SYS_ADMIN"}, "lacks CAP_SYS_ADMIN"},
		{"verifier", errors.New("load program: invalid argument"), false, k618, CauseRejected, nil,
			"the kernel rejected the block latency BPF program (load program: invalid argument): this is a diskhealth bug on kernel 6.18.44"},
	}
	cases = append(cases,
		classifyCase{"unsupported without CAP_BPF", unsupported, true, with(k618, capPerfmon), CauseMissingCapabilities, []string{"CAP_BPF"}, "lacks CAP_BPF"},
		classifyCase{"unsupported with both", unsupported, true, with(k618, capBPF, capPerfmon), CauseRejected, nil, "the kernel rejected"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := classify(c.err, c.st, c.unsupported)
			require.Equal(t, c.cause, e.Cause)
			require.Equal(t, c.missing, e.Missing)
			require.Contains(t, e.Error(), c.says)
			require.ErrorIs(t, e, c.err)
		})
	}
}

func TestUnavailableMessages(t *testing.T) {
	for _, e := range []*UnavailableError{
		{Cause: CauseUnsupportedOS, Detail: "darwin/arm64"},
		{Cause: CauseNoBTF},
		{Cause: CauseOldKernel, Detail: "5.4.0"},
	} {
		msg := e.Error()
		require.Contains(t, msg, ": ", "cause, then the fix")
		require.NotContains(t, msg, "\n")
	}
	require.Contains(t, (&UnavailableError{Cause: CauseOldKernel, Detail: "5.4.0"}).Error(), "kernel 5.4.0 has neither")
}

func TestParseProcStatus(t *testing.T) {
	caps, seccomp := parseProcStatus("Name:\tcat\nCapInh:\t0000000000000000\nCapEff:\t000000c000000000\nSeccomp:\t2\nSeccomp_filters:\t1\n")
	require.Equal(t, uint64(1)<<capBPF|1<<capPerfmon, caps)
	require.Equal(t, "2", seccomp)
	require.Equal(t, "integrity", activeLockdown("none [integrity] confidentiality"))
	require.Empty(t, activeLockdown(""))
}

func FuzzParseProcStatus(f *testing.F) {
	f.Add("CapEff:\t000001ffffffffff\nSeccomp:\t0\n")
	f.Fuzz(func(t *testing.T, s string) {
		parseProcStatus(s)
		activeLockdown(s)
	})
}

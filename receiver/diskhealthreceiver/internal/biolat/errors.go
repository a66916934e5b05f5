package biolat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// Cause is why the probe cannot run.
type Cause int

const (
	// CauseUnsupportedOS is not Linux,, or an architecture the committed object does not serve.
	CauseUnsupportedOS Cause = iota + 1
	// CauseNoBTF means the kernel exposes no BTF (/sys/kernel/btf/vmlinux).
	CauseNoBTF
	// CauseOldKernel means the kernel has neither block_io_done nor block_rq_complete as BTF tracepoints.
	CauseOldKernel
	// CauseMissingCapabilities means bpf() refused and the process lacks the capabilities it needs.
	CauseMissingCapabilities
	// CauseDenied means bpf() refused although the capabilities are there: seccomp or kernel lockdown.
	CauseDenied
	// CauseRejected means the kernel refused the program or a map for another reason (a bug to report).
	CauseRejected
)

// UnavailableError says why a BPF measurement (block latency, or Measure) cannot be made here and how
// to fix it, in one sentence (Error), for one log line; Err keeps the underlying error for a debug log.
type UnavailableError struct {
	// Measure names what cannot be measured in the sentence: "block latency" when empty (this
	// package's probes); filelat says "file latency".
	Measure string
	Cause   Cause
	// Missing lists the capabilities the process lacks (CauseMissingCapabilities).
	Missing []string
	// Detail is what the sentence needs besides the cause: the OS, the kernel release, what blocks bpf().
	Detail string
	Err    error
}

func (e *UnavailableError) Error() string {
	what := e.Measure
	if what == "" {
		what = "block latency"
	}
	switch e.Cause {
	case CauseUnsupportedOS:
		return fmt.Sprintf("%s needs Linux eBPF on a little-endian CPU and this is %s: run the collector on Linux to get it", what, e.Detail)
	case CauseNoBTF:
		return what + " needs kernel BTF and /sys/kernel/btf/vmlinux is missing: run a kernel built with CONFIG_DEBUG_INFO_BTF=y (the default of current distribution kernels)"
	case CauseOldKernel:
		if e.Measure != "" {
			return fmt.Sprintf("%s needs BTF tracepoints this kernel (%s) lacks: upgrade the kernel", what, e.Detail)
		}
		return fmt.Sprintf("block latency needs the block_io_done (Linux 6.5+) or block_rq_complete (5.5+) BTF tracepoint and kernel %s has neither: upgrade the kernel", e.Detail)
	case CauseMissingCapabilities:
		caps := strings.Join(e.Missing, ", ")
		short := strings.ReplaceAll(caps, "CAP_", "")
		return fmt.Sprintf("loading the %s BPF program was refused because the collector lacks %s: grant it (Kubernetes: securityContext.capabilities.add [%s]; Docker: --cap-add %s)",
			what, caps, short, strings.ReplaceAll(short, ", ", " --cap-add "))
	case CauseDenied:
		return fmt.Sprintf("loading the %s BPF program was refused although the collector has the capabilities, so %s blocks bpf(): allow the bpf syscall in the seccomp profile (Kubernetes: seccompProfile Unconfined or a profile that allows bpf) or boot without lockdown", what, e.Detail)
	}
	return fmt.Sprintf("the kernel rejected the %s BPF program (%v): this is a diskhealth bug on kernel %s, please report it", what, e.Err, e.Detail)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// CauseName is the log field naming why a probe is off: unsupported_os, no_btf, old_kernel,
// missing_capabilities, denied, rejected, or error for an error that is no *UnavailableError.
func CauseName(err error) string {
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		return "error"
	}
	switch ue.Cause {
	case CauseUnsupportedOS:
		return "unsupported_os"
	case CauseNoBTF:
		return "no_btf"
	case CauseOldKernel:
		return "old_kernel"
	case CauseMissingCapabilities:
		return "missing_capabilities"
	case CauseDenied:
		return "denied"
	}
	return "rejected"
}

// StatusReason is why a probe is off as disk_health.source.reason spells it (emit.Reason's values):
// unsupported_kernel (no BTF, too old, not Linux), missing_capability, seccomp (bpf() refused with the
// capabilities held: a seccomp filter's, or kernel lockdown's — the log line says which), or error.
func StatusReason(err error) string {
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		return "error"
	}
	switch ue.Cause {
	case CauseUnsupportedOS, CauseNoBTF, CauseOldKernel:
		return "unsupported_kernel"
	case CauseMissingCapabilities:
		return "missing_capability"
	case CauseDenied:
		return "seccomp"
	}
	return "error"
}

// Capability bits of /proc/self/status CapEff.
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// processState is what classify reads about the process and the kernel.
type processState struct {
	kernel   kernelVersion
	release  string
	capEff   uint64
	seccomp  string // /proc/self/status "Seccomp:": 0 off, 1 strict, 2 filter
	lockdown string // /sys/kernel/security/lockdown, e.g. "none [integrity] confidentiality"
}

// classify turns an error from loading or attaching into an UnavailableError. EPERM is missing
// capabilities when CapEff lacks them, seccomp or lockdown otherwise; anything else is a rejection.
// unsupported says the BPF library reported a feature as missing: without CAP_BPF its feature probes
// are refused with EPERM, which it reads as the feature's absence (as uid 65534 with CAP_PERFMON alone
// on 6.18: "prealloc maps not supported (requires >= v4.6)"), so with capabilities missing that too is
// theirs, not a rejection to report.
func classify(err error, st processState, unsupported bool) *UnavailableError {
	has := func(bit uint) bool { return st.capEff&(1<<bit) != 0 }
	lacking := st.kernel.atLeast(kernelVersion{5, 8}) && !has(capSysAdmin) && (!has(capBPF) || !has(capPerfmon))
	if !errors.Is(err, syscall.EPERM) && !(unsupported && lacking) {
		return &UnavailableError{Cause: CauseRejected, Detail: st.release, Err: err}
	}
	var missing []string
	switch {
	case !st.kernel.atLeast(kernelVersion{5, 8}):
		// CAP_BPF and CAP_PERFMON split from CAP_SYS_ADMIN in 5.8.
		if !has(capSysAdmin) {
			missing = []string{"CAP_SYS_ADMIN"}
		}
	case !has(capSysAdmin):
		if !has(capBPF) {
			missing = append(missing, "CAP_BPF")
		}
		if !has(capPerfmon) {
			missing = append(missing, "CAP_PERFMON")
		}
	}
	if len(missing) > 0 {
		return &UnavailableError{Cause: CauseMissingCapabilities, Missing: missing, Err: err}
	}
	var blockers []string
	if st.seccomp == "2" {
		blockers = append(blockers, "a seccomp filter")
	}
	if mode := activeLockdown(st.lockdown); mode != "" && mode != "none" {
		blockers = append(blockers, "kernel lockdown ("+mode+")")
	}
	if len(blockers) == 0 {
		blockers = []string{"a seccomp filter or kernel lockdown"}
	}
	return &UnavailableError{Cause: CauseDenied, Detail: strings.Join(blockers, " or "), Err: err}
}

// activeLockdown picks the bracketed mode of /sys/kernel/security/lockdown.
func activeLockdown(s string) string {
	for f := range strings.FieldsSeq(s) {
		if strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
			return strings.Trim(f, "[]")
		}
	}
	return ""
}

// parseProcStatus reads CapEff (hex) and Seccomp from /proc/<pid>/status.
func parseProcStatus(s string) (capEff uint64, seccomp string) {
	for line := range strings.Lines(s) {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "CapEff":
			capEff, _ = strconv.ParseUint(val, 16, 64)
		case "Seccomp":
			seccomp = val
		}
	}
	return capEff, seccomp
}

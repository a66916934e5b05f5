//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package biolat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// kernelConfig is what the program needs to know about the running kernel, read from its BTF.
type kernelConfig struct {
	// ioDone: block_io_done exists (6.5+), where /proc/diskstats accounts a request; otherwise
	// latency is taken at the final block_rq_complete.
	ioDone bool
	// issueTwoArgs: block_rq_issue(q, rq), before 5.11 (and 5.10.137).
	issueTwoArgs bool
	// statusIsErrno: block_rq_complete passes an errno, not a blk_status_t (older kernels).
	statusIsErrno bool
	rqfIOStat     uint32
	rqfFlushSeq   uint32
	rqfQuiet      uint32
}

// The request flag bits before they became an enum (include/linux/blk-mq.h, 4.x to 6.x).
const (
	oldRQFFlushSeq = 1 << 4
	oldRQFQuiet    = 1 << 11
	oldRQFIOStat   = 1 << 13
)

// inspectKernel reads the tracepoints' prototypes and the request flags from the kernel's BTF.
func inspectKernel(spec *btf.Spec, release string) (kernelConfig, error) {
	complete, err := tracepointParams(spec, "block_rq_complete")
	if err != nil {
		return kernelConfig{}, &UnavailableError{Cause: CauseOldKernel, Detail: release, Err: err}
	}
	cfg := kernelConfig{rqfIOStat: oldRQFIOStat, rqfFlushSeq: oldRQFFlushSeq, rqfQuiet: oldRQFQuiet}
	_, err = tracepointParams(spec, "block_io_done")
	cfg.ioDone = err == nil
	// (void *data, struct request *rq, blk_status_t or int error, unsigned int nr_bytes)
	if len(complete) != 4 {
		return kernelConfig{}, &UnavailableError{Cause: CauseRejected, Detail: release,
			Err: fmt.Errorf("block_rq_complete has %d parameters, want 4", len(complete))}
	}
	if td, ok := complete[2].Type.(*btf.Typedef); !ok || td.Name != "blk_status_t" {
		cfg.statusIsErrno = true
	}
	if issue, err := tracepointParams(spec, "block_rq_issue"); err == nil {
		cfg.issueTwoArgs = len(issue) == 3
	}
	if bits, ok := rqfBits(spec); ok {
		cfg.rqfFlushSeq = 1 << bits["__RQF_FLUSH_SEQ"]
		cfg.rqfQuiet = 1 << bits["__RQF_QUIET"]
		cfg.rqfIOStat = 1 << bits["__RQF_IO_STAT"]
	}
	return cfg, nil
}

// tracepointParams returns the parameters of a BTF tracepoint, whose first is the probe's data.
func tracepointParams(spec *btf.Spec, tp string) ([]btf.FuncParam, error) {
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_"+tp, &td); err != nil {
		return nil, fmt.Errorf("tracepoint %s: %w", tp, err)
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		return nil, fmt.Errorf("tracepoint %s: %s is not a function pointer", tp, td.Type)
	}
	proto, ok := ptr.Target.(*btf.FuncProto)
	if !ok {
		return nil, fmt.Errorf("tracepoint %s: %s is not a function pointer", tp, ptr.Target)
	}
	return proto.Params, nil
}

// rqfBits finds the enum of request flag bit numbers: named rqf_flags on current kernels, anonymous
// when it was introduced, absent (plain #defines) before.
func rqfBits(spec *btf.Spec) (map[string]uint64, bool) {
	want := []string{"__RQF_FLUSH_SEQ", "__RQF_QUIET", "__RQF_IO_STAT"}
	find := func(e *btf.Enum) (map[string]uint64, bool) {
		bits := map[string]uint64{}
		for _, v := range e.Values {
			bits[v.Name] = v.Value
		}
		for _, w := range want {
			if b, ok := bits[w]; !ok || b >= 32 {
				return nil, false
			}
		}
		return bits, true
	}
	var named *btf.Enum
	if spec.TypeByName("rqf_flags", &named) == nil {
		return find(named)
	}
	for typ, err := range spec.All() {
		if err != nil {
			return nil, false
		}
		if e, ok := typ.(*btf.Enum); ok && e.Name == "" {
			if bits, ok := find(e); ok {
				return bits, true
			}
		}
	}
	return nil, false
}

// readProcessState gathers what classify needs; a file that cannot be read leaves its field empty.
func readProcessState() processState {
	var st processState
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		st.release = unix.ByteSliceToString(u.Release[:])
		st.kernel, _ = parseKernelRelease(st.release)
	}
	if b, err := bounded.ReadFile("/proc/self/status", bounded.ProcStatus, nil); err == nil {
		st.capEff, st.seccomp = parseProcStatus(string(b))
	}
	if b, err := bounded.ReadFile("/sys/kernel/security/lockdown", bounded.Attr, nil); err == nil {
		st.lockdown = strings.TrimSpace(string(b))
	}
	return st
}

// loadKernelBTF is btf.LoadKernelSpec with its failure as an UnavailableError.
func loadKernelBTF() (*btf.Spec, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, &UnavailableError{Cause: CauseNoBTF, Err: err}
	}
	return spec, nil
}

// classifyLoad classifies err from this package's or another's BPF load or attach (classify), telling
// it whether cilium/ebpf reported a feature as unsupported.
func classifyLoad(err error, st processState) *UnavailableError {
	return classify(err, st, errors.Is(err, ebpf.ErrNotSupported))
}

// Unavailable classifies an error from loading or attaching another package's BPF program (measure
// names it, as filelat's "file latency") the way Open classifies its own: no kernel BTF, missing
// capabilities, seccomp or lockdown, else a rejection to report.
func Unavailable(measure string, err error) *UnavailableError {
	var ue *UnavailableError
	if _, berr := loadKernelBTF(); berr != nil {
		ue = &UnavailableError{Cause: CauseNoBTF, Err: err}
	} else {
		ue = classifyLoad(err, readProcessState())
	}
	ue.Measure = measure
	return ue
}

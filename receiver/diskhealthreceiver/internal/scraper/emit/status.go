package emit

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// SourceState is a source's state in disk_health.source.status: the worst of its parts'.
type SourceState int

// The states, from best to worst.
const (
	StateOK SourceState = iota
	StateDegraded
	StateOff
)

func (s SourceState) String() string {
	switch s {
	case StateDegraded:
		return "degraded"
	case StateOff:
		return "off"
	}
	return "ok"
}

// Reason is why a source is not ok, a bounded set (disk_health.source.reason in the receiver's
// metadata.yaml), classified from the real errno or condition by Classify.
type Reason string

// The reasons, as disk_health.source.reason's enum spells them.
const (
	ReasonNone              Reason = "none"
	ReasonMissingCapability Reason = "missing_capability"
	ReasonSeccomp           Reason = "seccomp"
	ReasonNoDeviceAccess    Reason = "no_device_access"
	ReasonUnsupportedKernel Reason = "unsupported_kernel"
	ReasonNotConfigured     Reason = "not_configured"
	ReasonError             Reason = "error"
)

// Classify names the reason of a refused or failed call from its errno. held says whether the process
// has the capability the call needs (HasCapability): a refusal with it held is a seccomp filter's (or
// kernel lockdown's), without it the missing capability's. EACCES opening a node under /dev is
// no_device_access (the device is not in the container, or its cgroup device rules deny it, which no
// capability fixes); ENOENT, ENOSYS and EOPNOTSUPP/ENOTTY mean the kernel (or the host) lacks it.
func Classify(err error, held bool) Reason {
	switch {
	case err == nil:
		return ReasonNone
	case errors.Is(err, syscall.EACCES) && onDevice(err):
		return ReasonNoDeviceAccess
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		if held {
			return ReasonSeccomp
		}
		return ReasonMissingCapability
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOSYS), errors.Is(err, syscall.EOPNOTSUPP),
		errors.Is(err, syscall.ENOTTY):
		return ReasonUnsupportedKernel
	}
	return ReasonError
}

// Refused is Classify for a call its source saw refused (a permission error whose errno may be hidden
// behind the source's own sentinel): what the errno does not tell is the seccomp filter's with the
// capability held, the missing capability's without it.
func Refused(err error, held bool) Reason {
	if r := Classify(err, held); r != ReasonError {
		return r
	}
	if held {
		return ReasonSeccomp
	}
	return ReasonMissingCapability
}

// onDevice reports whether err is about a path under a /dev directory (the host's, or root_path's).
func onDevice(err error) bool {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return false
	}
	return strings.Contains(filepath.ToSlash(pe.Path)+"/", "/dev/")
}

// Capability bits of /proc/self/status CapEff (linux/capability.h).
const (
	CapSysRawio = 17
	CapSysAdmin = 21
	CapSyslog   = 34
	CapPerfmon  = 38
	CapBPF      = 39
)

// procStatus is read by HasCapability; tests replace it.
var procStatus = func() ([]byte, error) { return os.ReadFile("/proc/self/status") }

// HasCapability reports whether the process has capability bit in its effective set (false when that
// cannot be read).
func HasCapability(bit uint) bool {
	b, err := procStatus()
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && eff&(1<<bit) != 0
		}
	}
	return false
}

// Status is one source's state as disk_health.source.status reports it. A source sets a part (the
// probe, a disk, a part of the stack, its scrape) where it logs that the part cannot run, and clears
// it where it logs that it works again: the log line and the metric say the same thing, from the same
// place. The source's state is its worst part's, with that part's reason (the first part by name among
// equals). A nil *Status (a source built without the receiver, in tests) ignores everything. Safe for
// concurrent use.
type Status struct {
	mu    sync.Mutex
	parts map[string]part
}

type part struct {
	state  SourceState
	reason Reason
}

// NewStatus returns an empty (ok) status.
func NewStatus() *Status { return &Status{parts: map[string]part{}} }

// Set records that the named part of the source is in state for reason; StateOK clears it.
func (s *Status) Set(name string, state SourceState, reason Reason) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if state == StateOK {
		delete(s.parts, name)
		return
	}
	s.parts[name] = part{state: state, reason: reason}
}

// Clear records that the named part works.
func (s *Status) Clear(name string) { s.Set(name, StateOK, ReasonNone) }

// ClearPrefix clears every part whose name starts with prefix (the disks of one read, before the read
// sets the ones that fail).
func (s *Status) ClearPrefix(prefix string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.parts {
		if strings.HasPrefix(name, prefix) {
			delete(s.parts, name)
		}
	}
}

// Get returns the source's state and reason.
func (s *Status) Get() (SourceState, Reason) {
	if s == nil {
		return StateOK, ReasonNone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.parts))
	for n := range s.parts {
		names = append(names, n)
	}
	sort.Strings(names)
	state, reason := StateOK, ReasonNone
	for _, n := range names {
		if p := s.parts[n]; p.state > state {
			state, reason = p.state, p.reason
		}
	}
	return state, reason
}

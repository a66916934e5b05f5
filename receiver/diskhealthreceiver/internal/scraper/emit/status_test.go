package emit

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestClassify: each reason from the errno a real refusal carries, wrapped as the sources wrap it.
func TestClassify(t *testing.T) {
	open := func(path string, errno syscall.Errno) error {
		return fmt.Errorf("smart: %w", &fs.PathError{Op: "open", Path: path, Err: errno})
	}
	for _, c := range []struct {
		name string
		err  error
		held bool
		want Reason
	}{
		{"no error", nil, false, ReasonNone},
		{"EPERM without the capability", fmt.Errorf("bpf: %w", syscall.EPERM), false, ReasonMissingCapability},
		{"EPERM with the capability held: seccomp", fmt.Errorf("bpf: %w", syscall.EPERM), true, ReasonSeccomp},
		{"EACCES without the capability", fmt.Errorf("ioctl: %w", syscall.EACCES), false, ReasonMissingCapability},
		{"EACCES with it held: seccomp", fmt.Errorf("ioctl: %w", syscall.EACCES), true, ReasonSeccomp},
		{"open EACCES on a /dev node", open("/dev/nvme0", syscall.EACCES), false, ReasonNoDeviceAccess},
		{"open EACCES on a /dev node under root_path", open("/hostfs/dev/sda", syscall.EACCES), true, ReasonNoDeviceAccess},
		{"open EACCES elsewhere", open("/hostfs/proc/kmsg", syscall.EACCES), false, ReasonMissingCapability},
		{"open EPERM on a /dev node (a capability, not the device list)", open("/dev/kmsg", syscall.EPERM), false, ReasonMissingCapability},
		{"ENOENT", open("/proc/pressure/io", syscall.ENOENT), false, ReasonUnsupportedKernel},
		{"ENOSYS", fmt.Errorf("bpf: %w", syscall.ENOSYS), true, ReasonUnsupportedKernel},
		{"ENOTTY", fmt.Errorf("ioctl: %w", syscall.ENOTTY), true, ReasonUnsupportedKernel},
		{"anything else", errors.New("parse error"), true, ReasonError},
		{"EIO", fmt.Errorf("read: %w", syscall.EIO), true, ReasonError},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Classify(c.err, c.held))
		})
	}
}

func TestHasCapability(t *testing.T) {
	saved := procStatus
	t.Cleanup(func() { procStatus = saved })
	// CapEff with CAP_BPF (39) and CAP_PERFMON (38), as a container granted those two shows it.
	procStatus = func() ([]byte, error) {
		return []byte("Name:\totelcol\nCapInh:\t0000000000000000\nCapEff:\t000000c000000000\nSeccomp:\t2\n"), nil
	}
	assert.True(t, HasCapability(CapBPF))
	assert.True(t, HasCapability(CapPerfmon))
	assert.False(t, HasCapability(CapSysAdmin))
	procStatus = func() ([]byte, error) { return nil, fs.ErrNotExist }
	assert.False(t, HasCapability(CapBPF), "unknown is not held")
}

// TestStatusWorstPart: the source is its worst part, with that part's reason; clearing a part restores
// the next worst; a nil Status (a source built without the receiver) is ok and ignores everything.
func TestStatusWorstPart(t *testing.T) {
	s := NewStatus()
	state, reason := s.Get()
	assert.Equal(t, "ok", state.String())
	assert.Equal(t, ReasonNone, reason)

	s.Set("per_cgroup", StateDegraded, ReasonUnsupportedKernel)
	s.Set("probe", StateOff, ReasonSeccomp)
	state, reason = s.Get()
	assert.Equal(t, StateOff, state)
	assert.Equal(t, ReasonSeccomp, reason)

	s.Clear("probe")
	state, reason = s.Get()
	assert.Equal(t, "degraded", state.String())
	assert.Equal(t, ReasonUnsupportedKernel, reason)

	s.Set("disk:sda", StateDegraded, ReasonError)
	s.ClearPrefix("disk:")
	s.Set("per_cgroup", StateOK, ReasonNone)
	state, _ = s.Get()
	assert.Equal(t, StateOK, state)

	var none *Status
	none.Set("probe", StateOff, ReasonSeccomp)
	none.ClearPrefix("")
	state, reason = none.Get()
	assert.Equal(t, StateOK, state)
	assert.Equal(t, ReasonNone, reason)
}

// TestRefused: a refusal whose errno is hidden behind a source's sentinel is the seccomp filter's with
// the capability held, the missing capability's without it; an errno that tells more wins.
func TestRefused(t *testing.T) {
	hidden := errors.New("permission denied by the device layer")
	assert.Equal(t, ReasonSeccomp, Refused(hidden, true))
	assert.Equal(t, ReasonMissingCapability, Refused(hidden, false))
	assert.Equal(t, ReasonNoDeviceAccess, Refused(&fs.PathError{Op: "open", Path: "/dev/sg0", Err: syscall.EACCES}, true))
}

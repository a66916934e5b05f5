package smartscraper

import (
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
)

// TestRecordStatus: what logStatus logs per disk, as the source's state: every disk refused is off,
// some refused or failed is degraded, standby and disks without SMART are ok; the reason is classified
// from the refusal's errno and the capabilities the process holds.
func TestRecordStatus(t *testing.T) {
	saved := hasCapability
	t.Cleanup(func() { hasCapability = saved })
	openDenied := fmt.Errorf("%w: %w", device.ErrPermission, &fs.PathError{Op: "open", Path: "/hostfs/dev/nvme0", Err: syscall.EACCES})
	ioctlDenied := fmt.Errorf("%w: nvme admin: %w", device.ErrPermission, syscall.EPERM)
	res := func(st device.Status, err error) device.Result { return device.Result{Status: st, Err: err} }
	for _, c := range []struct {
		name    string
		held    bool
		results []device.Result
		state   emit.SourceState
		reason  emit.Reason
	}{
		{"no disks", false, nil, emit.StateOK, emit.ReasonNone},
		{"all read, one in standby", false, []device.Result{res(device.StatusOK, nil), res(device.StatusStandbySkipped, nil), res(device.StatusUnsupported, nil)}, emit.StateOK, emit.ReasonNone},
		{"the /dev node refused", true, []device.Result{res(device.StatusPermissionDenied, openDenied)}, emit.StateOff, emit.ReasonNoDeviceAccess},
		{"the ioctl refused without CAP_SYS_ADMIN", false, []device.Result{res(device.StatusPermissionDenied, ioctlDenied)}, emit.StateOff, emit.ReasonMissingCapability},
		{"the ioctl refused with the capabilities", true, []device.Result{res(device.StatusPermissionDenied, ioctlDenied)}, emit.StateOff, emit.ReasonSeccomp},
		{"one of two refused", false, []device.Result{res(device.StatusOK, nil), res(device.StatusPermissionDenied, ioctlDenied)}, emit.StateDegraded, emit.ReasonMissingCapability},
		{"a read timed out", true, []device.Result{res(device.StatusOK, nil), res(device.StatusTimeout, nil)}, emit.StateDegraded, emit.ReasonError},
	} {
		t.Run(c.name, func(t *testing.T) {
			hasCapability = func(uint) bool { return c.held }
			s := &smartScraper{status: emit.NewStatus()}
			s.recordStatus([]device.Result{res(device.StatusPermissionDenied, ioctlDenied)}) // cleared by the next read
			s.recordStatus(c.results)
			state, reason := s.status.Get()
			assert.Equal(t, c.state, state)
			assert.Equal(t, c.reason, reason)
		})
	}
}

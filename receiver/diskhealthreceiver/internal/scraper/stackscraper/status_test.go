package stackscraper

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/dm"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
)

// TestSourceStatusOfParts: a part's read status as the source's state and reason (the part logged
// "Storage stack read refused" is degraded, for the capability or the seccomp filter).
func TestSourceStatusOfParts(t *testing.T) {
	saved := hasCapability
	t.Cleanup(func() { hasCapability = saved })
	refused := fmt.Errorf("%w: DM_LIST_DEVICES: %w", dm.ErrPermission, syscall.EPERM)
	for _, c := range []struct {
		name   string
		st     metadata.AttributeStackReadStatus
		err    error
		held   bool
		state  emit.SourceState
		reason emit.Reason
	}{
		{"ok", metadata.AttributeStackReadStatusOk, nil, false, emit.StateOK, emit.ReasonNone},
		{"no device-mapper on this host", metadata.AttributeStackReadStatusUnsupported, dm.ErrUnsupported, false, emit.StateOK, emit.ReasonNone},
		{"refused without CAP_SYS_ADMIN", metadata.AttributeStackReadStatusPermissionDenied, refused, false, emit.StateDegraded, emit.ReasonMissingCapability},
		{"refused with CAP_SYS_ADMIN", metadata.AttributeStackReadStatusPermissionDenied, refused, true, emit.StateDegraded, emit.ReasonSeccomp},
		{"refused, no errno", metadata.AttributeStackReadStatusPermissionDenied, dm.ErrPermission, true, emit.StateDegraded, emit.ReasonSeccomp},
		{"timeout", metadata.AttributeStackReadStatusTimeout, errors.New("deadline"), true, emit.StateDegraded, emit.ReasonError},
	} {
		t.Run(c.name, func(t *testing.T) {
			hasCapability = func(uint) bool { return c.held }
			st := emit.NewStatus()
			st.Set("dm", sourceState(c.st), sourceReason(c.st, c.err))
			state, reason := st.Get()
			assert.Equal(t, c.state, state)
			assert.Equal(t, c.reason, reason)
		})
	}
}

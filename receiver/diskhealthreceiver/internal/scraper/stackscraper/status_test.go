package stackscraper

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/dm"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/mdraid"
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

// TestAbsentPartsSaidOnce: a host without md in its kernel and without device-mapper says so at the first
// scrape (unsupported, one point per part) and then sends nothing for them; an md driver without arrays
// is a part that works (ok, every scrape); a part that appears is ok, with its unsupported left at 0.
func TestAbsentPartsSaidOnce(t *testing.T) {
	sys := fstest.MapFS{"block": &fstest.MapFile{Mode: fs.ModeDir}}
	noDM := &fakeDM{err: fmt.Errorf("open /dev/mapper/control: %w", dm.ErrUnsupported)}
	rig := newRig(t, readers{sys: sys, md: mdraid.NewReader(sys, time.Second), dm: noDM}, nil)
	status := func(md pmetric.Metrics) map[string]string {
		out := map[string]string{}
		pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
			if m.Name() != "disk_health.stack.read.status" {
				return
			}
			for i := range m.Sum().DataPoints().Len() {
				p := m.Sum().DataPoints().At(i)
				part, _ := p.Attributes().Get("stack.part")
				st, _ := p.Attributes().Get("stack.read.status")
				out[part.Str()+" "+st.Str()] = fmt.Sprint(p.IntValue())
			}
		})
		return out
	}
	assert.Equal(t, map[string]string{"md unsupported": "1", "device_mapper unsupported": "1"}, status(rig.scrape(t)))
	assert.Empty(t, status(rig.scrape(t)))
	assert.Empty(t, status(rig.scrape(t)))
	assert.Equal(t, 2, rig.obs.FilterMessageSnippet("not available on this host").Len(), "logged once per part")

	sys["module/md_mod"] = &fstest.MapFile{Mode: fs.ModeDir}
	assert.Equal(t, map[string]string{"md ok": "1", "md unsupported": "0"}, status(rig.scrape(t)))
	assert.Equal(t, map[string]string{"md ok": "1"}, status(rig.scrape(t)))
}

package qemu

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// TestLatencyIOErrorsQEMU (issue 12, "done when" 3): in the QEMU guest (Debian's 6.1 kernel, the
// probe's block_rq_complete path), scsi_debug's medium error emulation fails a fixed number of
// direct reads of the boot's scsi_debug disk with MEDIUM ERROR (ENODATA to the reader,
// BLK_STS_MEDIUM's errno). The latency
// source's disk_health.disk.kernel.errors for that disk rises by exactly the reads that failed (all read,
// all medium; the good reads add nothing), as many as the SCSI midlayer's ioerr_cnt counted; the
// disk's SMART verdict (SCSI log pages) goes from ok to degraded through the signs board, and one
// state change (ok → degraded, naming the kernel-seen errors) and one new sign
// (kernel_io_errors_rising) are sent, however many verdicts follow. The stack source (a receiver of
// its own) counts the disk's SCSI ioerr_cnt: its hw.errors rises by as much (issue 13, "done when" 4).
func TestLatencyIOErrorsQEMU(t *testing.T) {
	_, run := bootGuest(t, "ioerrguest", 5*time.Minute, nil)
	var b vmproto.IOErrBundle
	run.bundle(t, vmproto.MarkerIOErr, &b)
	require.True(t, strings.HasPrefix(b.Kernel, "6.1."), "the guest runs Debian's 6.1 kernel, not %s", b.Kernel)
	disk := b.Disk

	hex := func(s string) uint64 {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(s), "0x"), 16, 64)
		require.NoError(t, err, "ioerr_cnt %q", s)
		return v
	}
	ioerr := hex(b.IOErrCntAfter) - hex(b.IOErrCntBefore)
	before, after, final := unmarshalMetrics(t, b.Before), unmarshalMetrics(t, b.After), unmarshalMetrics(t, b.Final)
	require.NotEmpty(t, b.ErrorsAfter, "no export with disk_health.disk.kernel.errors after the reads")
	// Before the reads the disk had no error series (a counter is reported once it is above 0).
	e0 := kernelErrorPoints(before, disk)
	e1, e2 := kernelErrorPoints(unmarshalMetrics(t, b.ErrorsAfter), disk), kernelErrorPoints(unmarshalMetrics(t, b.ErrorsFinal), disk)
	delta := map[string]int64{}
	var total int64
	for k, v := range e1 {
		delta[k] = v - e0[k]
		total += delta[k]
	}
	t.Logf("%s: reads failed (ENODATA) %d, succeeded %d; SCSI ioerr_cnt +%d; disk_health.disk.kernel.errors before %v, after %v (Δ %d), final %v",
		disk, b.Failed, b.Succeeded, ioerr, e0, e1, total, e2)
	require.Positive(t, b.Failed)
	assert.Equal(t, uint64(b.Failed), ioerr, "the SCSI midlayer counted each failed read once (no retries)")
	assert.Equal(t, map[string]int64{"read/medium": int64(b.Failed)}, delta, "the kernel error counter rose by exactly the failed reads, all medium errors on reads")
	assert.Equal(t, e1, e2, "nothing more failed after the reads")
	// The stack source's counter of the same disk is ioerr_cnt itself: it rises by as much.
	s0, s1 := scsiErrorPoint(t, unmarshalMetrics(t, b.StackBefore), disk), scsiErrorPoint(t, unmarshalMetrics(t, b.StackAfter), disk)
	t.Logf("%s: the stack source's hw.errors{error.type=scsi_io_error} %d → %d", disk, s0, s1)
	assert.Equal(t, int64(hex(b.IOErrCntBefore)), s0, "the stack source's SCSI error count before the reads is ioerr_cnt")
	assert.Equal(t, int64(ioerr), s1-s0, "the stack source's SCSI error count rose by as much as ioerr_cnt")

	states := map[string]string{"before": smartState(before, disk), "after": smartState(after, disk), "final": smartState(final, disk)}
	t.Logf("%s hw.status: %v", disk, states)
	assert.Equal(t, map[string]string{"before": "ok", "after": "degraded", "final": "degraded"}, states,
		"the scsi_debug disk (a SMART verdict from its SCSI log pages) turns degraded")

	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(b.Events)
	require.NoError(t, err)
	type event struct{ disk, name, state, prev, rule, body, severity string }
	var events []event
	pdatawalk.ForEachLogRecord(ld, func(res pcommon.Resource, lr plog.LogRecord) {
		d, _ := res.Attributes().Get("hw.name")
		a := lr.Attributes().AsRaw()
		e := event{d.Str(), lr.EventName(), fmt.Sprint(a["hw.state"]), fmt.Sprint(a["disk_health.previous_state"]),
			fmt.Sprint(a["disk_health.rule"]), lr.Body().Str(), lr.SeverityText()}
		t.Logf("event: %+v", e)
		events = append(events, e)
	})
	require.Len(t, events, 2, "one state change and one new sign, over several verdicts: %+v", events)
	change, sign := events[0], events[1]
	assert.Equal(t, disk, change.disk)
	assert.Equal(t, "disk_health.state_change", change.name)
	assert.Equal(t, []string{"degraded", "ok"}, []string{change.state, change.prev})
	assert.Contains(t, change.body, fmt.Sprintf("health changed from ok to degraded: kernel-seen I/O errors of %s rose from 0 to %d since monitoring began", disk, b.Failed))
	assert.Equal(t, disk, sign.disk)
	assert.Equal(t, "disk_health.new_sign", sign.name)
	assert.Equal(t, "kernel_io_errors_rising", sign.rule)
}

func unmarshalMetrics(t *testing.T, raw json.RawMessage) pmetric.Metrics {
	t.Helper()
	md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(raw)
	require.NoError(t, err)
	return md
}

// kernelErrorPoints is disk_health.disk.kernel.errors of dev, by "direction/error.type".
func kernelErrorPoints(md pmetric.Metrics, dev string) map[string]int64 {
	out := map[string]int64{}
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		a := dp.Attributes()
		if d, _ := a.Get("system.device"); m.Name() != "disk_health.disk.kernel.errors" || m.Type() != pmetric.MetricTypeSum || d.Str() != dev {
			return
		}
		dir, _ := a.Get("disk.io.direction")
		typ, _ := a.Get("error.type")
		out[dir.Str()+"/"+typ.Str()] += dp.IntValue()
	})
	return out
}

// scsiErrorPoint is the stack source's hw.errors{error.type=scsi_io_error} of the disk named disk.
func scsiErrorPoint(t *testing.T, md pmetric.Metrics, disk string) int64 {
	t.Helper()
	var v int64
	var found int
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		if m.Name() != "hw.errors" || m.Type() != pmetric.MetricTypeSum {
			return
		}
		n, _ := dp.Attributes().Get("hw.name")
		typ, _ := dp.Attributes().Get("error.type")
		if n.Str() == disk && typ.Str() == "scsi_io_error" {
			v = dp.IntValue()
			found++
		}
	})
	require.Equal(t, 1, found, "one hw.errors{error.type=scsi_io_error} point of %s", disk)
	return v
}

// smartState is the hw.state whose hw.status point is 1 for the disk named disk, "" if none.
func smartState(md pmetric.Metrics, disk string) string {
	var state string
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		a := dp.Attributes()
		if n, _ := a.Get("hw.name"); m.Name() != "hw.status" || m.Type() != pmetric.MetricTypeSum || n.Str() != disk || dp.IntValue() != 1 {
			return
		}
		s, _ := a.Get("hw.state")
		state = s.Str()
	})
	return state
}

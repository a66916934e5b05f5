//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// The unprivileged part: the guest program again as nobody, without CAP_SYS_ADMIN.

const argUnprivileged = "unprivileged"

// unprivilegedReport is what the unprivileged child prints.
type unprivilegedReport struct {
	UID      int               `json:"uid"`
	Scrapes  int               `json:"scrapes"`  // exports of the stack source
	Status   map[string]string `json:"status"`   // stack.part -> stack.read.status of the last export
	Refused  int               `json:"refused"`  // permission_denied warnings over all scrapes
	Warnings []string          `json:"warnings"` // every warning and error the receiver logged
	MD0      string            `json:"md0"`      // md0's hw.status
	Pool     string            `json:"pool"`     // the thin pool's hw.status (none expected)
	IOStat   int               `json:"iostat"`   // system.disk.* metrics in all exports
	Error    string            `json:"error"`
}

// unprivileged runs the receiver (stack and I/O sources) as nobody, without any capability, for
// four scrapes, and prints what it saw.
func unprivileged() {
	rep := unprivilegedReport{UID: os.Getuid(), Status: map[string]string{}}
	defer func() {
		out, _ := json.Marshal(rep)
		fmt.Printf("%s\n", out)
	}()
	logger, logs := guestrx.Observe(zapcore.WarnLevel)
	stop, ms, _, err := start(logger, true)
	if err != nil {
		rep.Error = err.Error()
		return
	}
	// The stack source's exports (the I/O source may export on its own).
	stackExports := func() []pmetric.Metrics {
		var out []pmetric.Metrics
		for _, md := range ms.AllMetrics() {
			if hasMetric(md, "disk_health.stack.read.status") {
				out = append(out, md)
			}
		}
		return out
	}
	deadline := time.Now().Add(wait)
	for len(stackExports()) < 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	all, stacked := ms.AllMetrics(), stackExports()
	rep.Scrapes = len(stacked)
	if len(stacked) == 0 {
		rep.Error = "no export of the stack source"
		return
	}
	last := stacked[len(stacked)-1]
	for _, md := range all {
		pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
			if strings.HasPrefix(m.Name(), "system.disk.") {
				rep.IOStat++
			}
		})
	}
	pdatawalk.ForEachNumberPoint(last, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		if m.Name() == "disk_health.stack.read.status" && dp.IntValue() == 1 {
			part, _ := dp.Attributes().Get("stack.part")
			st, _ := dp.Attributes().Get("stack.read.status")
			rep.Status[part.AsString()] = st.AsString()
		}
	})
	id, err := md0ID()
	if err != nil {
		rep.Error = err.Error()
	}
	rep.MD0, rep.Pool = status(last, id), status(last, "dm:pool")
	rep.Warnings = guestrx.Lines(logs)
	rep.Refused = logs.FilterField(zap.String("status", "permission_denied")).Len()
}

// unprivilegedPart runs this program again as nobody (uid and gid 65534: no capabilities) and
// compares what its receiver saw with what root's sees.
func unprivilegedPart(e *env) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, argUnprivileged)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Dir = "/"
	out, err := cmd.Output()
	e.part.Tools["unprivileged child"] = string(out)
	if err != nil {
		return fmt.Errorf("unprivileged child: %w", err)
	}
	var rep unprivilegedReport
	if err := json.Unmarshal(out, &rep); err != nil {
		return fmt.Errorf("unprivileged child: %w: %s", err, out)
	}
	if rep.Error != "" {
		return errors.New("unprivileged child: " + rep.Error)
	}
	e.part.Logs = append(e.part.Logs, rep.Warnings...)
	id, err := md0ID()
	if err != nil {
		return err
	}
	root, err := e.export(e.count(), "an export as root", func(md pmetric.Metrics) bool { return has(md, "hw.status", id, nil) })
	if err != nil {
		return err
	}
	e.part.Series["unprivileged scrapes"] = float64(rep.Scrapes)
	e.check("the child runs as uid", "65534", strconv.Itoa(rep.UID))
	e.check("scrapes", "≥ 4", ge(rep.Scrapes, 4))
	e.check("device_mapper read status", "permission_denied", rep.Status["device_mapper"])
	e.check("permission_denied reported once over the scrapes", "1", strconv.Itoa(rep.Refused))
	e.check("warnings logged in all", "1", strconv.Itoa(len(rep.Warnings)))
	e.check("md read status (sysfs needs no privilege)", "ok", rep.Status["md"])
	e.check("errors read status", "ok", rep.Status["errors"])
	e.check("md0 hw.status (as root's)", status(root, id), rep.MD0)
	e.check("thin pool hw.status (none without the ioctls)", "", rep.Pool)
	e.check("the I/O source unaffected (system.disk.* metrics)", "yes", yes(rep.IOStat > 0))
	return nil
}

func hasMetric(md pmetric.Metrics, name string) bool {
	found := false
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) { found = found || m.Name() == name })
	return found
}

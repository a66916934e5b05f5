//go:build linux

package main

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// What every part uses: the receiver's exports, the tools it runs and the comparisons it records.

// env is what a part works with: the receiver's sinks and the part's observations.
type env struct {
	ms   *consumertest.MetricsSink
	ls   *consumertest.LogsSink
	part *vmproto.StackPart
}

// count is the number of exports so far.
func (e *env) count() int { return len(e.ms.AllMetrics()) }

func (e *env) check(what, want, got string) {
	e.part.Checks = append(e.part.Checks, vmproto.StackCheck{What: what, Want: want, Got: got})
}

// sh runs a command, logging it and its output.
func (e *env) sh(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	e.part.Logs = append(e.part.Logs, fmt.Sprintf("$ %s %s\n%s", name, strings.Join(args, " "), out))
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// tool runs a command and keeps its output under step.
func (e *env) tool(step, name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	e.part.Tools[step] = string(out)
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// export returns the first export after index from+1 (a scrape that started after the caller's
// action) that pred accepts.
func (e *env) export(from int, what string, pred func(pmetric.Metrics) bool) (pmetric.Metrics, error) {
	deadline := time.Now().Add(wait)
	from++
	for time.Now().Before(deadline) {
		all := e.ms.AllMetrics()
		for ; from < len(all); from++ {
			if pred(all[from]) {
				return all[from], nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return pmetric.Metrics{}, fmt.Errorf("no export with %s within %v", what, wait)
}

// next returns the export at index from (waiting for it) and the index after it.
func (e *env) next(from int) (pmetric.Metrics, int, error) {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if all := e.ms.AllMetrics(); from < len(all) {
			return all[from], from + 1, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return pmetric.Metrics{}, from, fmt.Errorf("no export within %v", wait)
}

// events are the bodies of the state-change events of hw.id id from the logs index from on.
func events(ls *consumertest.LogsSink, from int, id string) []string {
	var out []string
	n := 0
	for _, l := range ls.AllLogs() {
		pdatawalk.ForEachLogRecord(l, func(res pcommon.Resource, lr plog.LogRecord) {
			n++
			if v, _ := res.Attributes().Get("hw.id"); n <= from || v.AsString() != id {
				return
			}
			if strings.HasSuffix(lr.EventName(), "state_change") {
				state, _ := lr.Attributes().Get("hw.state")
				out = append(out, lr.Body().AsString()+" [hw.state="+state.AsString()+"]")
			}
		})
	}
	return out
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func ge(n, min int) string {
	if n >= min {
		return "≥ " + strconv.Itoa(min)
	}
	return strconv.Itoa(n)
}

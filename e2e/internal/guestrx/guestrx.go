// Package guestrx runs the disk_health receiver inside the QEMU guest programs of the end-to-end tests
// (e2e/internal/*guest), as a collector would: on the VM's root, metrics and logs into sinks.
package guestrx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"
)

// Start runs a receiver whose configuration is the default one on the root "/" with no initial delay,
// then each of settings in order, written as a user writes the receiver's keys (later ones win, key by
// key, as the collector merges configuration files). stop shuts it down; a shutdown error is ignored
// (the guest's results are in the sinks by then).
func Start(logger *zap.Logger, settings ...map[string]any) (stop func(), ms *consumertest.MetricsSink, ls *consumertest.LogsSink, err error) {
	ctx := context.Background()
	f := diskhealthreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*diskhealthreceiver.Config)
	cfg.RootPath = "/"
	cfg.ControllerConfig.InitialDelay = 0
	for _, m := range settings {
		if err := confmap.NewFromStringMap(m).Unmarshal(cfg); err != nil {
			return nil, nil, nil, err
		}
	}
	set := receivertest.NewNopSettings(f.Type())
	set.Logger = logger
	ms, ls = &consumertest.MetricsSink{}, &consumertest.LogsSink{}
	var mr, lr receiver.Metrics
	if mr, err = f.CreateMetrics(ctx, set, cfg, ms); err != nil {
		return nil, nil, nil, err
	}
	if lr, err = f.CreateLogs(ctx, set, cfg, ls); err != nil {
		return nil, nil, nil, err
	}
	for _, c := range []receiver.Metrics{mr, lr} {
		if err := c.Start(ctx, componenttest.NewNopHost()); err != nil {
			return nil, nil, nil, err
		}
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = mr.Shutdown(sctx)
		_ = lr.Shutdown(sctx)
	}, ms, ls, nil
}

// WaitExport returns the first export of ms from index from on that pred accepts, and the index after
// it.
func WaitExport(ms *consumertest.MetricsSink, from int, timeout time.Duration, what string, pred func(pmetric.Metrics) bool) (pmetric.Metrics, int, error) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		all := ms.AllMetrics()
		for ; from < len(all); from++ {
			if pred(all[from]) {
				return all[from], from + 1, nil
			}
		}
	}
	return pmetric.Metrics{}, from, fmt.Errorf("no export with %s within %v", what, timeout)
}

// HasMetric accepts an export with a metric of that name.
func HasMetric(name string) func(pmetric.Metrics) bool {
	return func(md pmetric.Metrics) bool {
		found := false
		EachMetric(md, func(_ pmetric.ResourceMetrics, m pmetric.Metric) { found = found || m.Name() == name })
		return found
	}
}

// EachMetric calls f with every metric of md and its resource.
func EachMetric(md pmetric.Metrics, f func(pmetric.ResourceMetrics, pmetric.Metric)) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				f(rms.At(i), ms.At(k))
			}
		}
	}
}

// MetricsJSON is md as OTLP JSON.
func MetricsJSON(md pmetric.Metrics) json.RawMessage {
	b, _ := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	return b
}

// Kernel is the release of the kernel the guest runs, as the bundles report it ("" if unreadable).
func Kernel() string {
	k, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(k))
}

// Observe is a logger for the guest's receivers that keeps every entry at level and above, for
// Lines to put into the bundle.
func Observe(level zapcore.Level) (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(level)
	return zap.New(core), logs
}

// Lines renders each entry as its message followed by its fields as " key=value", in the order the
// host tests print and search them.
func Lines(logs *observer.ObservedLogs) []string {
	var lines []string
	for _, e := range logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		lines = append(lines, line)
	}
	return lines
}

// ScsiDebugDisk is the name of the scsi_debug disk the guest booted with.
func ScsiDebugDisk() (string, error) {
	ents, _ := os.ReadDir("/sys/block")
	for _, e := range ents {
		m, err := os.ReadFile(filepath.Join("/sys/block", e.Name(), "device", "model"))
		if err == nil && strings.TrimSpace(string(m)) == "scsi_debug" {
			return e.Name(), nil
		}
	}
	return "", errors.New("no scsi_debug disk in /sys/block")
}

// LoadExtraModules inserts the harness's extra modules (/lib/modules/extra, in extra.list's order)
// without parameters, but those named in skip; a module already in is fine.
func LoadExtraModules(skip ...string) error {
	list, err := os.ReadFile("/lib/modules/extra/extra.list")
	if err != nil {
		return err
	}
	for _, m := range strings.Fields(string(list)) {
		if slices.Contains(skip, m) {
			continue
		}
		if out, err := exec.Command("insmod", "/lib/modules/extra/"+m).CombinedOutput(); err != nil && !strings.Contains(string(out), "File exists") {
			return fmt.Errorf("insmod %s: %w: %s", m, err, out)
		}
	}
	return nil
}

//go:build linux

// Command verdictguest runs inside the QEMU VM of the pass-through verdict end-to-end test
// (e2e/qemu/verdict_qemu_test.go), on the guest's Debian kernel: it starts the disk_health receiver with
// every source enabled at its defaults but SMART, read every few seconds; first lets it read the disks
// alone, sampling the SCSI midlayer's counters of every sd disk after each SMART read; then polls every
// disk with smartctl -a as well until at least minReads SMART reads are done; and prints the exports,
// the samples and the events as one JSON line for the host test. It is built by that test and means
// nothing outside the VM.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap/zapcore"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
)

const (
	smartEvery = 3 * time.Second
	// aloneReads are the SMART reads with nothing else touching the disks: their counter steps are
	// the receiver's own.
	aloneReads = 4
	// The run lasts until the receiver made minReads SMART reads, the stack source (at the default
	// collection_interval, 30 s) minStack scrapes, each posting what it counts, and smartctl minPasses
	// passes over every disk; under TCG on a loaded host the guest's clock says little about progress.
	minReads  = 22
	minStack  = 3
	minPasses = 5
	pollGap   = 2 * time.Second // between two smartctl passes over every disk
)

func main() {
	b, err := run()
	if err != nil {
		b.Errors = append(b.Errors, err.Error())
	}
	vmproto.Print(os.Stdout, vmproto.MarkerVerdict, b)
	if err != nil {
		os.Exit(1)
	}
}

func run() (b vmproto.VerdictBundle, err error) {
	b.States, b.Smartctl = map[string]map[string]int{}, map[string]int{}
	b.Kernel = guestrx.Kernel()
	logger, logs := guestrx.Observe(zapcore.WarnLevel)
	defer func() { b.Logs = guestrx.Lines(logs) }()
	for _, d := range disks() {
		if v, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(d), "device", "vendor")); err == nil && strings.TrimSpace(string(v)) == "ATA" {
			b.ATA = append(b.ATA, filepath.Base(d))
		}
	}
	t0 := time.Now()
	sample := func(label string) {
		b.Samples = append(b.Samples, vmproto.VerdictSample{Label: label, At: time.Since(t0).Seconds(), Disks: scsiCounters()})
	}
	sample("start")
	stop, ms, ls, err := guestrx.Start(logger, map[string]any{
		// TCG on a shared host: a read of five disks can take many seconds.
		"smart": map[string]any{"interval": smartEvery.String(), "timeout": time.Minute.String()},
	})
	if err != nil {
		return b, err
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	isRead, isStack := guestrx.HasMetric("disk_health.physical_disk.smart.read.status"), guestrx.HasMetric("disk_health.physical_disk.scsi.commands")
	// Each sample follows a read that ended after the previous sample: exports that piled up while the
	// guest waited for CPU are skipped, not sampled at once.
	for i := range aloneReads {
		if _, _, err = guestrx.WaitExport(ms, len(ms.AllMetrics()), 2*time.Minute, "a SMART read", isRead); err != nil {
			return b, err
		}
		sample(fmt.Sprintf("read %d", i+1))
	}

	// smartctl polls every disk while the receiver goes on.
	var mu sync.Mutex
	passes := 0
	quit, polled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(polled)
		for pass := 1; ; pass++ {
			for _, d := range append(disks(), "/dev/nvme0") {
				out, _ := exec.Command("smartctl", "-a", "--json", d).Output() // its exit status is a bit mask of findings
				mu.Lock()
				b.Smartctl[d]++
				if !json.Valid(out) {
					b.SmartctlFailed = append(b.SmartctlFailed, fmt.Sprintf("%s: %.200q", d, out))
				}
				mu.Unlock()
			}
			mu.Lock()
			sample(fmt.Sprintf("smartctl %d", pass))
			passes = pass
			mu.Unlock()
			select {
			case <-quit:
				return
			case <-time.After(pollGap):
			}
		}
	}()
	count := func(pred func(pmetric.Metrics) bool) int {
		n := 0
		for _, md := range ms.AllMetrics() {
			if pred(md) {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(8 * time.Minute); ; time.Sleep(time.Second) {
		mu.Lock()
		p := passes
		mu.Unlock()
		if count(isRead) >= minReads && count(isStack) >= minStack && p >= minPasses {
			break
		}
		if time.Now().After(deadline) {
			err = fmt.Errorf("after 8 min: %d SMART reads, %d stack scrapes, %d smartctl passes", count(isRead), count(isStack), p)
			break
		}
	}
	close(quit)
	<-polled
	stop()
	stopped = true
	sample("end")
	if err != nil {
		return b, err
	}

	for _, md := range ms.AllMetrics() {
		if isRead(md) {
			b.Reads++
			for disk, state := range states(md) {
				if b.States[disk] == nil {
					b.States[disk] = map[string]int{}
				}
				b.States[disk][state]++
			}
		}
		if guestrx.HasMetric("disk_health.disk.kernel.errors")(md) {
			b.KernelErrors = guestrx.MetricsJSON(md)
		}
		b.Latency = b.Latency || guestrx.HasMetric("disk_health.latency.dropped")(md)
		if isStack(md) {
			if b.StackFirst == nil {
				b.StackFirst = guestrx.MetricsJSON(md)
			}
			b.StackLast = guestrx.MetricsJSON(md)
		}
	}
	merged := plog.NewLogs()
	for _, l := range ls.AllLogs() {
		l.ResourceLogs().MoveAndAppendTo(merged.ResourceLogs())
	}
	b.Events, _ = (&plog.JSONMarshaler{}).MarshalLogs(merged)
	return b, nil
}

// disks lists the VM's whole sd disks as device nodes.
func disks() []string {
	var out []string
	ents, _ := os.ReadDir("/sys/block")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "sd") {
			out = append(out, "/dev/"+e.Name())
		}
	}
	return out
}

// scsiCounters reads the SCSI midlayer's command counters of every sd disk.
func scsiCounters() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, d := range disks() {
		name := filepath.Base(d)
		c := map[string]string{}
		for _, f := range []string{"iorequest_cnt", "iodone_cnt", "ioerr_cnt", "iotmo_cnt"} {
			if v, err := os.ReadFile(filepath.Join("/sys/block", name, "device", f)); err == nil {
				c[f] = strings.TrimSpace(string(v))
			}
		}
		out[name] = c
	}
	return out
}

// states is, per disk (hw.name), the hw.state whose hw.status point is 1.
func states(md pmetric.Metrics) map[string]string {
	out := map[string]string{}
	guestrx.EachMetric(md, func(_ pmetric.ResourceMetrics, m pmetric.Metric) {
		if m.Name() != "hw.status" || m.Type() != pmetric.MetricTypeSum {
			return
		}
		dps := m.Sum().DataPoints()
		for l := range dps.Len() {
			a := dps.At(l).Attributes()
			if n, _ := a.Get("hw.name"); dps.At(l).IntValue() == 1 {
				s, _ := a.Get("hw.state")
				out[n.Str()] = s.Str()
			}
		}
	})
	return out
}

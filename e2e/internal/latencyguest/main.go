//go:build linux

// Command latencyguest runs inside the QEMU VM of the latency end-to-end test
// (e2e/qemu/latency_qemu_test.go), on the guest's Debian kernel (the block_rq_complete path before 6.5):
// it starts the disk_health receiver with only the latency source, then creates disks of known
// latency after the probe attached (null_blk completing every request after 1 ms on a timer, the
// boot's scsi_debug disk delayed to 5 ms, a bio-based dm-linear device over null_blk), does a fixed
// number of direct 4 KiB reads and writes on each, and prints the receiver's exports and
// /proc/diskstats from before and after the I/O as one JSON line for the host test to compare. It is
// built by that test and means nothing outside the VM.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"
)

// The known latencies.
const (
	nullDelayNs  = 1_000_000 // null_blk completion_nsec (irqmode=2: an hrtimer per request)
	scsiDelayNs  = 5_000_000 // scsi_debug ndelay
	ios          = 64        // reads and as many writes on null_blk
	ioPerSlowDev = 32        // reads and as many writes on scsi_debug and on the dm device
	interval     = time.Second
)

func main() {
	b, err := run()
	if err != nil {
		b.Errors = append(b.Errors, err.Error())
	}
	vmproto.Print(os.Stdout, vmproto.MarkerLatency, b)
	if err != nil {
		os.Exit(1)
	}
}

func run() (b vmproto.LatencyBundle, err error) {
	b = vmproto.LatencyBundle{Devices: map[string]string{}, Issued: map[string]map[string]int{}}
	b.Kernel = guestrx.Kernel()
	logger, logs := guestrx.Observe(zapcore.InfoLevel)
	defer func() {
		b.Logs = guestrx.Lines(logs)
		for _, e := range logs.FilterMessage("Block latency probe attached.").All() {
			if hook, ok := e.ContextMap()["hook"]; ok {
				b.Hook = fmt.Sprint(hook)
			}
		}
	}()

	// The receiver first: the null_blk and dm devices are made after the probe attached, so every
	// request of theirs is seen (scsi_debug's boot I/O is before; the test compares differences).
	stop, ms, err := start(logger)
	if err != nil {
		return b, err
	}
	defer stop()

	if err := loadExtraModules(); err != nil {
		return b, err
	}
	if err := waitFile("/sys/block/nullb0", 10*time.Second); err != nil {
		return b, err
	}
	b.Devices["null"] = "nullb0"
	scsi, err := guestrx.ScsiDebugDisk()
	if err != nil {
		return b, err
	}
	b.Devices["scsi"] = scsi
	if err := os.WriteFile("/sys/bus/pseudo/drivers/scsi_debug/ndelay", []byte(strconv.Itoa(scsiDelayNs)), 0o644); err != nil {
		return b, fmt.Errorf("scsi_debug ndelay: %w", err)
	}
	dm, err := dmLinear("dhlat", "nullb0")
	if err != nil {
		return b, err
	}
	b.Devices["dm"] = dm

	// Quiet: two scrapes with nothing happening, then the baseline.
	time.Sleep(2*interval + interval/2)
	// The latency source's last export: the receiver's own disk_health.source.status comes in exports of
	// its own, which hold no histogram.
	all := ms.AllMetrics()
	for i := len(all) - 1; i >= 0 && b.Before == nil; i-- {
		if hasLatency(all[i]) {
			b.Before = metricsJSON(all[i])
		}
	}
	if b.DiskstatsBefore, err = readFile("/proc/diskstats"); err != nil {
		return b, err
	}
	for _, job := range []struct {
		dev string
		n   int
	}{{"nullb0", ios}, {scsi, ioPerSlowDev}, {dm, ioPerSlowDev}} {
		if err := directIO(job.dev, job.n); err != nil {
			return b, err
		}
		b.Issued[job.dev] = map[string]int{"read": job.n, "write": job.n}
	}
	ended := time.Now()
	if b.DiskstatsAfter, err = readFile("/proc/diskstats"); err != nil {
		return b, err
	}
	// An export whose scrape started after the I/O ended.
	deadline := time.Now().Add(30 * time.Second)
	for b.After == nil && time.Now().Before(deadline) {
		all := ms.AllMetrics()
		for i := len(all) - 1; i >= 0 && b.After == nil; i-- {
			if hasLatency(all[i]) && latest(all[i]).After(ended.Add(50*time.Millisecond)) {
				b.After = metricsJSON(all[i])
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if b.After == nil {
		return b, errors.New("no export after the I/O within 30 s")
	}
	return b, nil
}

// start runs the receiver with only the latency source, every device class, a scrape a second.
func start(logger *zap.Logger) (stop func(), ms *consumertest.MetricsSink, err error) {
	// Every other source off, also those whose exports (no latency points) would be taken for the
	// baseline; the device classes are iostat's, which latency follows.
	stop, ms, _, err = guestrx.Start(logger, diskhealthreceiver.Only("latency"), map[string]any{
		"collection_interval": interval.String(),
		"iostat":              map[string]any{"device_classes": []any{"disk", "partition", "dm", "md", "loop", "ram", "other"}},
	})
	return stop, ms, err
}

// loadExtraModules inserts the harness's extra modules in order: null_blk with a fixed 1 ms
// completion on a timer, one 1 GiB multi-queue device.
func loadExtraModules() error {
	list, err := readFile("/lib/modules/extra/extra.list")
	if err != nil {
		return err
	}
	params := map[string][]string{
		"null_blk.ko": {"queue_mode=2", "irqmode=2", "completion_nsec=" + strconv.Itoa(nullDelayNs), "nr_devices=1", "gb=1"},
	}
	for _, m := range strings.Fields(list) {
		args := append([]string{"/lib/modules/extra/" + m}, params[m]...)
		if out, err := exec.Command("insmod", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("insmod %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// dmLinear maps the first half of dev with dm-linear (a bio-based target: it has no requests of its
// own, its bios become requests of dev) and returns the dm-N name.
func dmLinear(name, dev string) (string, error) {
	size, err := readFile(filepath.Join("/sys/block", dev, "size"))
	if err != nil {
		return "", err
	}
	sectors, err := strconv.ParseUint(strings.TrimSpace(size), 10, 64)
	if err != nil {
		return "", err
	}
	table := fmt.Sprintf("0 %d linear /dev/%s 0", sectors/2, dev)
	if out, err := exec.Command("dmsetup", "create", name, "--noudevsync", "--table", table).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dmsetup create %s: %w: %s", name, err, out)
	}
	ents, _ := os.ReadDir("/sys/block")
	for _, e := range ents {
		if n, err := readFile(filepath.Join("/sys/block", e.Name(), "dm", "name")); err == nil && strings.TrimSpace(n) == name {
			return e.Name(), nil
		}
	}
	return "", fmt.Errorf("dmsetup created %s, but no dm device has that name", name)
}

// directIO does n direct 4 KiB reads and then n writes at distinct offsets, one at a time (no merges).
func directIO(dev string, n int) error {
	fd, err := unix.Open("/dev/"+dev, unix.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		return fmt.Errorf("open /dev/%s: %w", dev, err)
	}
	defer func() { _ = unix.Close(fd) }() // direct I/O: nothing buffered to lose
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Munmap(buf) }() // an anonymous mapping of this process
	for i := range n {
		if _, err := unix.Pread(fd, buf, int64(i)*8192); err != nil {
			return fmt.Errorf("read /dev/%s: %w", dev, err)
		}
	}
	for i := range n {
		if _, err := unix.Pwrite(fd, buf, int64(i)*8192); err != nil {
			return fmt.Errorf("write /dev/%s: %w", dev, err)
		}
	}
	return nil
}

// latest is the newest data point timestamp of an export.
func latest(md pmetric.Metrics) time.Time {
	var t time.Time
	pdatawalk.ForEachHistogramPoint(md, func(_ pcommon.Resource, _ pmetric.Metric, dp pmetric.ExponentialHistogramDataPoint) {
		if ts := dp.Timestamp().AsTime(); ts.After(t) {
			t = ts
		}
	})
	return t
}

func metricsJSON(md pmetric.Metrics) json.RawMessage {
	b, _ := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	return b
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

func waitFile(p string, timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s did not appear within %v", p, timeout)
}

// hasLatency accepts an export of the latency source: one with its block latency histograms.
var hasLatency = guestrx.HasMetric("disk_health.disk.operation.duration")

//go:build linux

// Command ioerrguest runs inside the QEMU VM of the kernel-seen I/O error end-to-end test
// (e2e/qemu/latency_ioerr_qemu_test.go), on the guest's Debian kernel: it starts the disk_health
// receiver (metrics and logs) with the latency and SMART sources only, and a second one with the
// stack source alone; waits until the boot's scsi_debug disk has a SMART verdict that saw its zero
// error baseline; turns on scsi_debug's medium error emulation (opts bit 2: reads of sectors
// 0x1234..0x123d fail with MEDIUM ERROR, unrecovered read error); does a fixed number of direct 4 KiB
// reads inside that range (each must fail with ENODATA, the errno of BLK_STS_MEDIUM) and outside it
// (each must succeed); turns the emulation off; and prints the receivers' exports and events as one
// JSON line for the host test. It is built by that test and means nothing outside the VM.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"
)

const (
	interval     = time.Second     // the latency scrape
	smartEvery   = 2 * time.Second // the SMART read and verdict
	failingReads = 5
	goodReads    = 7
	// scsi_debug's medium error range (OPT_MEDIUM_ERR_ADDR, OPT_MEDIUM_ERR_NUM): sectors 4660..4669.
	// A 4 KiB read at sector 4664 lies inside it from its first sector, so sd completes none of it
	// (no partial success) and the request fails once, with BLK_STS_MEDIUM.
	badOffset = 4664 * 512
)

func main() {
	b, err := run()
	if err != nil {
		b.Errors = append(b.Errors, err.Error())
	}
	vmproto.Print(os.Stdout, vmproto.MarkerIOErr, b)
	if err != nil {
		os.Exit(1)
	}
}

func run() (b vmproto.IOErrBundle, err error) {
	b.Kernel = guestrx.Kernel()
	logger, logs := guestrx.Observe(zapcore.InfoLevel)
	defer func() { b.Logs = guestrx.Lines(logs) }()
	if b.Disk, err = guestrx.ScsiDebugDisk(); err != nil {
		return b, err
	}
	// The stack source would post the disk's SCSI ioerr_cnt on the board too: off, so that the
	// latency source's count is the only one the verdict weighs.
	stop, ms, ls, err := guestrx.Start(logger, diskhealthreceiver.Only("smart", "latency"), map[string]any{
		"collection_interval": interval.String(),
		"smart":               map[string]any{"interval": smartEvery.String(), "timeout": "20s"},
	})
	if err != nil {
		return b, err
	}
	stopStack, stack, _, err := guestrx.Start(logger, diskhealthreceiver.Only("stack"), map[string]any{
		"collection_interval": interval.String(),
		"stack":               map[string]any{"md": false, "device_mapper": false},
	})
	if err != nil {
		stop()
		return b, err
	}
	defer stopStack()
	defer func() {
		stop()
		all := ls.AllLogs()
		merged := plog.NewLogs()
		for _, l := range all {
			l.ResourceLogs().MoveAndAppendTo(merged.ResourceLogs())
		}
		b.Events, _ = (&plog.JSONMarshaler{}).MarshalLogs(merged)
	}()

	// The baseline: a verdict of the disk from a SMART read that began after two latency scrapes
	// (each posts the disk's zero error count on the signs board).
	started := time.Now()
	md, from, err := guestrx.WaitExport(ms, 0, 60*time.Second, "an ok verdict of "+b.Disk+" after two latency scrapes", func(md pmetric.Metrics) bool {
		return status(md, b.Disk) == "ok" && newest(md, "hw.status").After(started.Add(2*interval+interval/2))
	})
	if err != nil {
		return b, err
	}
	b.Before = metricsJSON(md)
	smd, sfrom, err := guestrx.WaitExport(stack, 0, 30*time.Second, "the stack source's hw.errors of "+b.Disk, func(md pmetric.Metrics) bool {
		return !newest(md, "hw.errors").IsZero()
	})
	if err != nil {
		return b, err
	}
	b.StackBefore = metricsJSON(smd)

	errcnt := filepath.Join("/sys/block", b.Disk, "device", "ioerr_cnt")
	if b.IOErrCntBefore, err = readFile(errcnt); err != nil {
		return b, err
	}
	opts := "/sys/bus/pseudo/drivers/scsi_debug/opts"
	if err := os.WriteFile(opts, []byte("2"), 0o644); err != nil {
		return b, fmt.Errorf("scsi_debug opts: %w", err)
	}
	b.Failed, b.Succeeded, err = reads(b.Disk)
	if werr := os.WriteFile(opts, []byte("0"), 0o644); werr != nil && err == nil {
		err = fmt.Errorf("scsi_debug opts: %w", werr)
	}
	if err != nil {
		return b, err
	}
	ended := time.Now()
	if b.IOErrCntAfter, err = readFile(errcnt); err != nil {
		return b, err
	}

	// A verdict from a SMART read begun after a latency scrape that began after the reads ended.
	md, from, err = guestrx.WaitExport(ms, from, 60*time.Second, "a verdict of "+b.Disk+" after the reads", func(md pmetric.Metrics) bool {
		return newest(md, "hw.status").After(ended.Add(interval + smartEvery + 500*time.Millisecond))
	})
	if err != nil {
		return b, err
	}
	b.After = metricsJSON(md)
	if smd, _, err = guestrx.WaitExport(stack, sfrom, 30*time.Second, "a stack scrape after the reads", func(md pmetric.Metrics) bool {
		return newest(md, "hw.errors").After(ended.Add(interval))
	}); err != nil {
		return b, err
	}
	b.StackAfter = metricsJSON(smd)
	b.ErrorsAfter = newestWith(ms, "disk_health.disk.kernel.errors")
	// Three more verdicts: the disk stays degraded and no second state change is sent.
	last := md
	for range 3 {
		if last, from, err = guestrx.WaitExport(ms, from, 30*time.Second, "another verdict", func(md pmetric.Metrics) bool {
			return status(md, b.Disk) != ""
		}); err != nil {
			return b, err
		}
	}
	b.Final = metricsJSON(last)
	b.ErrorsFinal = newestWith(ms, "disk_health.disk.kernel.errors")
	return b, nil
}

// reads does the failing reads (inside the medium error range) and the good ones (at the start of
// the disk), direct, 4 KiB each; a failing read must fail with ENODATA (the errno of BLK_STS_MEDIUM,
// "critical medium error"), a good one must read it all.
func reads(dev string) (failed, succeeded int, err error) {
	fd, err := unix.Open("/dev/"+dev, unix.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("open /dev/%s: %w", dev, err)
	}
	defer func() { _ = unix.Close(fd) }() // read-only
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = unix.Munmap(buf) }() // an anonymous mapping of this process
	for range failingReads {
		n, err := unix.Pread(fd, buf, badOffset)
		if !errors.Is(err, unix.ENODATA) {
			return failed, succeeded, fmt.Errorf("read of /dev/%s at %d inside the medium error range: %d bytes, %v (want ENODATA)", dev, badOffset, n, err)
		}
		failed++
	}
	for i := range goodReads {
		n, err := unix.Pread(fd, buf, int64(i)*8192)
		if err != nil || n != len(buf) {
			return failed, succeeded, fmt.Errorf("read of /dev/%s at %d: %d bytes, %v", dev, i*8192, n, err)
		}
		succeeded++
	}
	return failed, succeeded, nil
}

// status is the hw.state whose hw.status point is 1 on the resource named disk, "" if none.
func status(md pmetric.Metrics, disk string) string {
	var state string
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		if m.Name() != "hw.status" || m.Type() != pmetric.MetricTypeSum {
			return
		}
		if n, _ := dp.Attributes().Get("hw.name"); n.Str() == disk && dp.IntValue() == 1 {
			s, _ := dp.Attributes().Get("hw.state")
			state = s.Str()
		}
	})
	return state
}

// newest is the newest timestamp of the named metric's points in md.
func newest(md pmetric.Metrics, name string) time.Time {
	var t time.Time
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		if ts := dp.Timestamp().AsTime(); m.Name() == name && m.Type() == pmetric.MetricTypeSum && ts.After(t) {
			t = ts
		}
	})
	return t
}

// newestWith is the newest export so far that has the named metric, nil if none.
func newestWith(ms *consumertest.MetricsSink, name string) json.RawMessage {
	all := ms.AllMetrics()
	for i := len(all) - 1; i >= 0; i-- {
		found := false
		pdatawalk.ForEachMetric(all[i], func(_ pcommon.Resource, m pmetric.Metric) { found = found || m.Name() == name })
		if found {
			return metricsJSON(all[i])
		}
	}
	return nil
}

func metricsJSON(md pmetric.Metrics) json.RawMessage {
	b, _ := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	return b
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

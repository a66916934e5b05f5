//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"
)

// netemDelay is the file latency part's delay on every packet the loopback interface sends: a
// READ's call and its reply each cross it once, so each READ takes twice this longer.
const netemDelay = 10 * time.Millisecond

// filelatScrape accepts the filelat source's scrapes: the probe's drop counter is in each once it is
// attached (the source's status comes in exports of its own). Where the probe cannot load, the source
// logs why (in the bundle's logs) and no export has it.
var filelatScrape = guestrx.HasMetric("disk_health.filesystem.operation.dropped")

// readPasses is how often each pass reads the accuracy part's file: 2 × ioCount reads of ioBlock.
const readPasses = 2

// fileLatency times O_DIRECT reads of m's file (the accuracy part's, ioCount blocks of ioBlock) with
// a receiver running the filelat source alone, scraping each interval: a pass as the server is, then
// a pass with netemDelay on the loopback interface. Each pass is bracketed by the receiver's last
// export before it and its first export scraped after it, and by mountstats read just before and
// after it; nothing else reads the mount, so the two exports differ by the pass's reads alone.
func fileLatency(b *vmproto.NFSBundle, logf func(string, ...any), m mount) error {
	b.ReadMount = m.label
	ms, next, stop, err := startFilelat(b, interval)
	if err != nil {
		return err
	}
	defer stop()
	for _, delay := range []time.Duration{0, netemDelay} {
		if delay > 0 {
			if err := run(logf, "/usr/sbin/tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", strconv.Itoa(int(delay.Microseconds()))+"us"); err != nil {
				return err
			}
		}
		p, n, err := readPass(ms, next, m.point+"/data")
		if delay > 0 {
			err = errors.Join(err, run(logf, "/usr/sbin/tc", "qdisc", "del", "dev", "lo", "root"))
		}
		if err != nil {
			return fmt.Errorf("pass with %v delay: %w", delay, err)
		}
		p.Delay, next = delay.Seconds(), n
		b.ReadPasses = append(b.ReadPasses, p)
	}
	return nil
}

// startFilelat runs a receiver with the filelat source alone, a scrape each every, and waits for its
// first scrape (the probe attached). It returns the receiver's sink, the index after that scrape, and
// stop, which shuts the receiver down and puts its log lines into b's logs.
func startFilelat(b *vmproto.NFSBundle, every time.Duration) (ms *consumertest.MetricsSink, next int, stop func(), err error) {
	logger, logs := guestrx.Observe(zapcore.InfoLevel)
	halt, ms, _, err := guestrx.Start(logger, diskhealthreceiver.Only("filelat"), map[string]any{
		"collection_interval": every.String(),
	})
	stop = func() {
		if halt != nil {
			halt()
		}
		b.Logs = append(b.Logs, guestrx.Lines(logs)...)
	}
	if err == nil {
		_, next, err = guestrx.WaitExport(ms, 0, wait, "the filelat probe attached", filelatScrape)
	}
	if err != nil {
		stop()
		return nil, 0, nil, err
	}
	return ms, next, stop, nil
}

// readPass reads path, O_DIRECT, block by block, readPasses times, between the receiver's last export
// (of ms, from index from on) and its first scraped after the reads; it returns the index after that.
func readPass(ms *consumertest.MetricsSink, from int, path string) (vmproto.NFSReadPass, int, error) {
	p := vmproto.NFSReadPass{ReadSize: ioBlock}
	all := ms.AllMetrics()
	last := -1
	for i, md := range all {
		if filelatScrape(md) {
			last = i
		}
	}
	if last < 0 {
		return p, from, errors.New("no filelat scrape before the pass")
	}
	p.Before = guestrx.MetricsJSON(all[last])
	before, err := os.ReadFile("/proc/self/mountstats")
	if err != nil {
		return p, from, err
	}
	began := time.Now()
	if p.Reads, err = directReads(path); err != nil {
		return p, from, err
	}
	ended := time.Now()
	after, err := os.ReadFile("/proc/self/mountstats")
	if err != nil {
		return p, from, err
	}
	p.Seconds = ended.Sub(began).Seconds()
	p.MountstatsBefore, p.MountstatsAfter = string(before), string(after)
	md, next, err := guestrx.WaitExport(ms, len(all), wait, "a filelat scrape after the reads", func(md pmetric.Metrics) bool {
		return filelatScrape(md) && latest(md) > ended.UnixNano()
	})
	if err != nil {
		return p, from, err
	}
	p.After = guestrx.MetricsJSON(md)
	return p, next, nil
}

// directReads reads path's ioCount blocks of ioBlock with O_DIRECT, readPasses times: none cached,
// each read one READ of the server as long as ioBlock is at most the mount's rsize (the host checks
// it). It returns the reads made.
func directReads(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	defer func() { _ = unix.Close(fd) }() // read-only: a failed close loses nothing
	buf, err := unix.Mmap(-1, 0, ioBlock, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return 0, err
	}
	defer func() { _ = unix.Munmap(buf) }() // an anonymous mapping of this process
	n := 0
	for range readPasses {
		for i := range ioCount {
			if _, err := unix.Pread(fd, buf, int64(i*ioBlock)); err != nil {
				return n, fmt.Errorf("read %s: %w", path, err)
			}
			n++
		}
	}
	return n, nil
}

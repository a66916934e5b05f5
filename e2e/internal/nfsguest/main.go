//go:build linux

// Command nfsguest runs inside the QEMU VM of the NFS end-to-end test (e2e/qemu/nfs_qemu_test.go): it
// serves a tmpfs with the guest kernel's nfsd and mounts it over the loopback interface with NFSv3,
// NFSv4.2 and NFSv4.2 nconnect=4 (the last after the plain v4.2 mount is gone: the kernel would
// merge their clients). The accuracy part brackets direct reads and writes between two scrapes of a
// receiver with the netfs source and keeps /proc/self/mountstats as those scrapes read it; the file
// latency part times O_DIRECT reads of the v3 mount with the filelat source, without and with a
// netem delay on the loopback interface (filelat.go); the hang
// part stops the server under a receiver scraping each second (netfs and iostat), starts it again and
// remounts the v3 mount; the large-folio part, last, reads a file cold and warm on an XFS (folio.go).
// Everything goes to the host as one JSON line. It is
// built by that test and means nothing outside the VM.
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

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
	// accuracyInterval is the accuracy part's scrape interval: a round's I/O fits between its first
	// and second scrape under TCG, the first NFSv4 OPEN waiting out the server's 10 s grace period.
	accuracyInterval = 30 * time.Second
	interval         = time.Second // the hang part's
	statfsTimeout    = 2 * time.Second
	// timeo (deciseconds) and retrans of every mount: a major timeout after 3 s.
	timeo   = 10
	retrans = 2
	ioBlock = 64 << 10
	ioCount = 32 // blocks written and read back per mount: 2 MiB
	wait    = 60 * time.Second
)

type mount struct {
	label, server, dir, opts, point string
}

// mounts are three superblocks with three clients: the nconnect mount has a server address of its
// own, since the kernel shares one client (and its transports) among the mounts of one server
// address and version.
var mounts = []mount{
	{label: "v3", server: "127.0.0.1", dir: "v3", opts: "vers=3,proto=tcp,nolock", point: "/mnt/v3"},
	{label: "v4.2", server: "127.0.0.1", dir: "v42", opts: "vers=4.2", point: "/mnt/v42"},
	{label: "v4.2-nconnect4", server: "127.0.0.2", dir: "v42n", opts: "vers=4.2,nconnect=4", point: "/mnt/v42n"},
}

func (m mount) source() string { return m.server + ":" + exportDir(m) }
func (m mount) options() string {
	return m.opts + ",hard,retry=0,timeo=" + strconv.Itoa(timeo) + ",retrans=" + strconv.Itoa(retrans)
}

func main() {
	b := &vmproto.NFSBundle{
		Interval: interval.Seconds(), StatfsTimeout: statfsTimeout.Seconds(),
		RPCTimeout: float64(timeo*(retrans+1)) / 10,
	}
	b.Kernel = guestrx.Kernel()
	logf := func(f string, a ...any) { b.Logs = append(b.Logs, fmt.Sprintf(f, a...)) }
	err := runAll(b, logf)
	if err != nil {
		b.Errors = append(b.Errors, err.Error())
	}
	vmproto.Print(os.Stdout, vmproto.MarkerNFS, b)
	if err != nil {
		os.Exit(1)
	}
}

func runAll(b *vmproto.NFSBundle, logf func(string, ...any)) error {
	if err := startServer(logf); err != nil {
		return err
	}
	for _, m := range mounts {
		b.Mounts = append(b.Mounts, vmproto.NFSMount{Label: m.label, Source: m.source(), MountPoint: m.point, Options: m.options()})
	}
	v3, v42, v42n := mounts[0], mounts[1], mounts[2]
	// The v4.2 mounts one after the other: the kernel would merge the second's client into the
	// first's (session trunking), both with the first one's transports.
	for _, m := range []mount{v3, v42} {
		if err := mountNFS(logf, m); err != nil {
			return err
		}
	}
	if err := accuracy(b, logf, v3, v42); err != nil {
		return fmt.Errorf("accuracy part (v3, v4.2): %w", err)
	}
	if err := run(logf, "umount", v42.point); err != nil {
		return err
	}
	if err := mountNFS(logf, v42n); err != nil {
		return err
	}
	if err := accuracy(b, logf, v42n); err != nil {
		return fmt.Errorf("accuracy part (nconnect): %w", err)
	}
	if err := fileLatency(b, logf, v3); err != nil {
		return fmt.Errorf("file latency part: %w", err)
	}
	if err := hang(b, logf, v3, v42n); err != nil {
		return fmt.Errorf("hang part: %w", err)
	}
	// Last: its loop device and XFS stay until the guest powers off, out of the other parts' way.
	if err := largeFolios(b, logf); err != nil {
		return fmt.Errorf("large-folio part: %w", err)
	}
	return nil
}

func mountNFS(logf func(string, ...any), m mount) error {
	return run(logf, "mount.nfs", m.source(), m.point, "-o", m.options())
}

// accuracy: mountstats is read, then the receiver starts (its first scrape reads the same
// counters: nothing touches the mounts in between), the I/O runs, mountstats is read again and the
// second scrape reads that. The scrapes' statfs calls come after their reads, the first one's inside
// the bracket.
func accuracy(b *vmproto.NFSBundle, logf func(string, ...any), with ...mount) error {
	r := vmproto.NFSRound{IO: map[string]int{}}
	before, err := os.ReadFile("/proc/self/mountstats")
	if err != nil {
		return err
	}
	r.MountstatsBefore = string(before)
	logger, logs := guestrx.Observe(zapcore.WarnLevel)
	defer func() { b.Logs = append(b.Logs, guestrx.Lines(logs)...) }()
	start := time.Now()
	stop, ms, _, err := guestrx.Start(logger, diskhealthreceiver.Only("netfs"), map[string]any{
		"collection_interval": accuracyInterval.String(),
		"netfs":               map[string]any{"statfs_timeout": statfsTimeout.String()},
		"metrics": map[string]any{
			"disk_health.nfs.client.mount.operation.execute_time": map[string]any{"enabled": true},
			"disk_health.nfs.client.mount.operation.queue_time":   map[string]any{"enabled": true},
			"disk_health.nfs.client.mount.io":                     map[string]any{"enabled": true},
		},
	})
	if err != nil {
		return err
	}
	defer stop()
	first, next, err := guestrx.WaitExport(ms, 0, wait, "the first netfs scrape", guestrx.HasMetric("disk_health.filesystem.client.state"))
	if err != nil {
		return err
	}
	r.First = guestrx.MetricsJSON(first)
	began := time.Now()
	for _, m := range with {
		n, err := readWrite(m.point + "/data")
		if err != nil {
			return err
		}
		r.IO[m.point] = n
		r.Mounts = append(r.Mounts, m.label)
	}
	r.IOSeconds = time.Since(began).Seconds()
	after, err := os.ReadFile("/proc/self/mountstats")
	if err != nil {
		return err
	}
	r.MountstatsAfter = string(after)
	if took := time.Since(start); took >= accuracyInterval {
		return fmt.Errorf("the I/O ended %v after the receiver started, past its second scrape (%v): the bracket is broken", took, accuracyInterval)
	}
	second, _, err := guestrx.WaitExport(ms, next, wait, "the second netfs scrape", guestrx.HasMetric("disk_health.filesystem.client.state"))
	if err != nil {
		return err
	}
	r.Second = guestrx.MetricsJSON(second)
	b.Rounds = append(b.Rounds, r)
	return nil
}

// readWrite writes ioCount blocks with O_DIRECT (each a WRITE to the server, none cached), syncs,
// reads them back with O_DIRECT (each a READ), writes and fsyncs a small file through the page cache
// (a COMMIT), then stats the file and lists its directory (metadata operations). It returns the
// bytes written with O_DIRECT (as many were read).
func readWrite(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_RDWR|unix.O_DIRECT, 0o644)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	buf, err := unix.Mmap(-1, 0, ioBlock, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		_ = unix.Close(fd)
		return 0, err
	}
	defer func() { _ = unix.Munmap(buf) }() // an anonymous mapping of this process
	for i := range buf {
		buf[i] = byte(i)
	}
	err = func() error {
		for i := range ioCount {
			if _, err := unix.Pwrite(fd, buf, int64(i*ioBlock)); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
		}
		if err := unix.Fsync(fd); err != nil {
			return fmt.Errorf("fsync %s: %w", path, err)
		}
		for i := range ioCount {
			if _, err := unix.Pread(fd, buf, int64(i*ioBlock)); err != nil {
				return fmt.Errorf("read %s: %w", path, err)
			}
		}
		return nil
	}()
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", path, cerr)
	}
	if err != nil {
		return 0, err
	}
	// A buffered write and its fsync: an UNSTABLE WRITE and a COMMIT, an operation of the other class.
	if err := writeSync(path+".commit", buf[:4096]); err != nil {
		return 0, err
	}
	if _, err := os.Stat(path); err != nil {
		return 0, err
	}
	if _, err := os.ReadDir(path[:len(path)-len("/data")]); err != nil {
		return 0, err
	}
	return ioCount * ioBlock, nil
}

// writeSync writes data to path through the page cache, writes it back and fsyncs it.
func writeSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close() // the write's error is the one to report
		return err
	}
	// Written back without WB_SYNC_ALL, the page goes as an UNSTABLE WRITE (an fsync alone would send
	// a lone page FILE_SYNC, with nothing to commit); the fsync then sends the COMMIT.
	if err := unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER); err != nil {
		_ = f.Close() // the write-back's error is the one to report
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close() // the sync's error is the one to report
		return err
	}
	return f.Close()
}

// hang stops the server (rpc.nfsd 0: its sockets close, the hard mounts' RPCs wait for it), waits
// for every mount to be unresponsive and a few scrapes more, starts it again, waits for every mount
// to be ok, then remounts the v3 mount and waits for a scrape of the new mount.
func hang(b *vmproto.NFSBundle, logf func(string, ...any), with ...mount) error {
	for _, m := range with {
		b.HangMounts = append(b.HangMounts, m.label)
	}
	logger, logs := guestrx.Observe(zapcore.WarnLevel)
	defer func() { b.Logs = append(b.Logs, guestrx.Lines(logs)...) }()
	stop, ms, ls, err := guestrx.Start(logger, diskhealthreceiver.Only("netfs", "iostat"), map[string]any{
		"collection_interval": interval.String(),
		"netfs":               map[string]any{"statfs_timeout": statfsTimeout.String()},
	})
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	next := 0
	all := func(state string) func(pmetric.Metrics) bool {
		return func(md pmetric.Metrics) bool {
			for _, m := range with {
				if stateOf(md, m.point) != state {
					return false
				}
			}
			return true
		}
	}
	// Two scrapes with every mount ok: the RPC judge has an interval to weigh.
	for range 2 {
		if _, next, err = guestrx.WaitExport(ms, next, wait, "every mount ok", all("ok")); err != nil {
			return err
		}
	}
	if err := run(logf, "rpc.nfsd", "0"); err != nil {
		return err
	}
	b.Stopped = time.Now().UnixNano()
	if _, next, err = guestrx.WaitExport(ms, next, wait, "every mount unresponsive", all("unresponsive")); err != nil {
		return err
	}
	// The hang goes on for a few scrapes: no further event, the other source's exports keep coming.
	time.Sleep(5 * interval)
	if err := run(logf, "rpc.nfsd", strconv.Itoa(nfsdThreads)); err != nil {
		return err
	}
	b.Restarted = time.Now().UnixNano()
	if _, next, err = guestrx.WaitExport(ms, next, 2*wait, "every mount ok again", all("ok")); err != nil {
		return err
	}
	v3 := with[0]
	if err := run(logf, "umount", v3.point); err != nil {
		return err
	}
	if err := mountNFS(logf, v3); err != nil {
		return err
	}
	b.Remounted = time.Now().UnixNano()
	// Two scrapes of the new mount: a counter series and its round trips.
	for range 2 {
		if _, next, err = guestrx.WaitExport(ms, next, wait, "the remounted v3 mount ok", func(md pmetric.Metrics) bool {
			return stateOf(md, v3.point) == "ok" && latest(md) > b.Remounted
		}); err != nil {
			return err
		}
	}
	stop()
	stopped = true
	for _, md := range ms.AllMetrics() {
		if guestrx.HasMetric("disk_health.filesystem.client.state")(md) {
			b.NetfsExports = append(b.NetfsExports, guestrx.MetricsJSON(md))
		} else if guestrx.HasMetric("system.disk.io")(md) {
			b.IostatAt = append(b.IostatAt, latest(md))
		}
	}
	if len(b.NetfsExports) == 0 {
		return errors.New("no netfs export")
	}
	events := plog.NewLogs()
	for _, l := range ls.AllLogs() {
		l.ResourceLogs().MoveAndAppendTo(events.ResourceLogs())
	}
	eb, err := (&plog.JSONMarshaler{}).MarshalLogs(events)
	if err != nil {
		return err
	}
	b.Events = eb
	return kernelLog(b)
}

// kernelLog keeps the kernel log's NFS server records, read from the first one kept (/dev/kmsg
// without a seek), and the clocks to place them.
func kernelLog(b *vmproto.NFSBundle) error {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }() // read-only: a failed close loses nothing
	var mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		return err
	}
	b.Monotonic, b.Realtime = mono.Nano(), time.Now().UnixNano()
	buf := make([]byte, 8<<10)
	for {
		n, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return nil
		case errors.Is(err, unix.EPIPE):
			continue // overwritten before this read
		case err != nil:
			return fmt.Errorf("read /dev/kmsg: %w", err)
		}
		if rec := string(buf[:n]); strings.Contains(rec, ";nfs: server ") {
			b.KernelLog = append(b.KernelLog, rec)
		}
	}
}

// stateOf is the client state of the mount at point in md ("" when it has none).
func stateOf(md pmetric.Metrics, point string) string {
	var s string
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		if m.Name() != "disk_health.filesystem.client.state" || dp.IntValue() != 1 {
			return
		}
		if mp, ok := dp.Attributes().Get("system.filesystem.mountpoint"); ok && mp.Str() == point {
			st, _ := dp.Attributes().Get("disk_health.client.state")
			s = st.AsString()
		}
	})
	return s
}

// latest is the newest point time of an export (Unix ns).
func latest(md pmetric.Metrics) int64 {
	var t int64
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, _ pmetric.Metric, dp pmetric.NumberDataPoint) {
		t = max(t, int64(dp.Timestamp()))
	})
	return t
}

package qemu

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
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

// TestNFSClientQEMU (issue 24, "done when" 1 and 2): the netfs source against the guest kernel's NFS
// client, served by its nfsd over the loopback interface (e2e/internal/nfsguest), with NFSv3, NFSv4.2
// and NFSv4.2 nconnect=4 mounts.
//
//   - accuracy: between two scrapes of a receiver, 2 MiB of direct writes and reads per mount, a
//     buffered write and its COMMIT, a stat and a listing; mountstats as the scrapes read it. Two rounds: v3 and v4.2, then v4.2
//     nconnect=4 alone (the kernel merges the NFSv4.1+ clients of one server). Operations per class
//     and the bytes from and to the server equal mountstats exactly, at both scrapes; the second
//     scrape's round-trip, execute and queue times per class are within 1 % of nfsiostat's: the
//     mountstats script of Debian's nfs-common (nfsiostat's code; the guest has no python3, the host
//     runs it over the texts the scrapes read), its per-operation report since the first reading
//     summed by class for every class, its nfsiostat lines for read and write. Operations and bytes
//     equal the script's report of each reading. The nconnect mount has its four transports.
//   - series: at the defaults no mount has more than 12 points in any export.
//   - file latency (the v3 mount, nfsFileLatency): the filelat source's read histogram against
//     mountstats' READ execute time, without and with a netem delay on the loopback interface.
//   - large folios (an XFS on a loop device, nfsLargeFolios): a cold and a warm buffered read of a
//     64 MiB file cached in large folios count each page once, as a miss and as a hit.
//   - hang (the v3 and nconnect mounts): `rpc.nfsd 0` under a receiver scraping each second: each is
//     unresponsive within one scrape after the mounts' major RPC timeout and the statfs deadline, with
//     one event; the kernel logs "nfs: server X not responding, still trying" and then "nfs: server X
//     OK", and an event after such a line carries it as evidence (the recovery's, at least);
//     iostat's exports keep their interval; `rpc.nfsd 4`: ok again with one event; a remount
//     of the v3 mount is a new series (a later start time, counters from zero, the same identity).
func TestNFSClientQEMU(t *testing.T) {
	_, run := bootGuest(t, "nfsguest", 10*time.Minute, nil)
	var b vmproto.NFSBundle
	run.bundle(t, vmproto.MarkerNFS, &b)
	require.True(t, strings.HasPrefix(b.Kernel, "6.1."), "the guest runs Debian's 6.1 kernel, not %s", b.Kernel)
	require.Len(t, b.Mounts, 3, "the guest's mounts")
	t.Run("accuracy", func(t *testing.T) { nfsAccuracy(t, &b) })
	t.Run("series", func(t *testing.T) { nfsSeries(t, &b) })
	t.Run("file latency", func(t *testing.T) { nfsFileLatency(t, &b) })
	t.Run("hang", func(t *testing.T) { nfsHang(t, &b) })
	t.Run("large folios", func(t *testing.T) { nfsLargeFolios(t, &b) })
}

// nfsStat is what the test reads itself of one mount's block of /proc/self/mountstats: what the
// mountstats script does not print (every transport, the options as the kernel has them).
type nfsStat struct {
	fstype string
	opts   string
	bytes  []uint64 // normal read/write, direct read/write, server read/write, pages read/written
	xprts  int
	// ops are the per-operation lines by operation: operations, transmissions, major timeouts, bytes
	// sent and received, cumulative queue, round-trip and execute ms, errors.
	ops map[string][]uint64
}

// nfsOpName is the name of a per-operation line ("READ", "READ_PLUS", "NULL").
var nfsOpName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// parseNFSStats reads the NFS mounts' blocks of a mountstats text, by mount point.
func parseNFSStats(t *testing.T, text string) map[string]*nfsStat {
	t.Helper()
	out := map[string]*nfsStat{}
	var cur *nfsStat
	nums := func(s string) []uint64 {
		var v []uint64
		for _, f := range strings.Fields(s) {
			n, err := strconv.ParseUint(f, 10, 64)
			require.NoError(t, err, "mountstats number %q", f)
			v = append(v, n)
		}
		return v
	}
	for line := range strings.Lines(text) {
		if f := strings.Fields(line); len(f) >= 8 && f[0] == "device" && f[2] == "mounted" {
			cur = nil
			if strings.HasPrefix(f[7], "nfs") {
				cur = &nfsStat{fstype: f[7], ops: map[string][]uint64{}}
				out[f[4]] = cur
			}
			continue
		}
		key, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if cur == nil || !ok {
			continue
		}
		switch key {
		case "opts":
			cur.opts = strings.TrimSpace(rest)
		case "bytes":
			cur.bytes = nums(rest)
		case "xprt":
			cur.xprts++
		default:
			if nfsOpName.MatchString(key) {
				cur.ops[key] = nums(rest)
			}
		}
	}
	return out
}

// nfsMetadataOps are the operations of the metadata class as docs/netfs.md and the class attribute's
// description list them; READ and WRITE are their classes, the rest is other.
var nfsMetadataOps = strings.Fields(`GETATTR SETATTR LOOKUP LOOKUPP LOOKUP_ROOT ACCESS READLINK READDIR READDIRPLUS
	CREATE MKDIR SYMLINK MKNOD REMOVE RMDIR RENAME LINK FSSTAT FSINFO PATHCONF STATFS SERVER_CAPS OPEN OPEN_CONFIRM
	OPEN_NOATTR OPEN_DOWNGRADE CLOSE LOCK LOCKT LOCKU GETACL SETACL FS_LOCATIONS GETXATTR SETXATTR LISTXATTRS
	REMOVEXATTR ALLOCATE DEALLOCATE SEEK CLONE COPY LAYOUTSTATS`)

func nfsClass(op string) string {
	switch op {
	case "READ", "READ_PLUS":
		return "read"
	case "WRITE", "WRITE_PLUS":
		return "write"
	}
	for _, m := range nfsMetadataOps {
		if m == op {
			return "metadata"
		}
	}
	return "other"
}

// nfsPoint is the value of metric's point of the mount at mp with the attributes want (ok false
// when there is none).
func nfsPoint(md pmetric.Metrics, metric, mp string, want map[string]string) (v float64, ok bool) {
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		a := dp.Attributes()
		if p, _ := a.Get("system.filesystem.mountpoint"); m.Name() != metric || p.Str() != mp {
			return
		}
		for k, w := range want {
			if got, _ := a.Get(k); got.AsString() != w {
				return
			}
		}
		v, ok = dp.DoubleValue(), true
		if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
			v = float64(dp.IntValue())
		}
	})
	return v, ok
}

// nfsMount is the bundle's mount of that label.
func nfsMount(t *testing.T, b *vmproto.NFSBundle, label string) vmproto.NFSMount {
	t.Helper()
	for _, m := range b.Mounts {
		if m.Label == label {
			return m
		}
	}
	t.Fatalf("the guest has no mount %q", label)
	return vmproto.NFSMount{}
}

func nfsAccuracy(t *testing.T, b *vmproto.NFSBundle) {
	require.Len(t, b.Rounds, 2, "accuracy rounds")
	tool := mountstatsTool(t)
	worst := map[string]float64{}
	tested := 0
	for _, r := range b.Rounds {
		t.Logf("round %v: the I/O took %.2f s", r.Mounts, r.IOSeconds)
		dir := t.TempDir()
		files := [2]string{filepath.Join(dir, "before"), filepath.Join(dir, "after")}
		for i, text := range []string{r.MountstatsBefore, r.MountstatsAfter} {
			require.NoError(t, os.WriteFile(files[i], []byte(text), 0o644))
		}
		for _, label := range r.Mounts {
			nfsAccuracyMount(t, tool, &r, files, nfsMount(t, b, label), worst)
			tested++
		}
	}
	assert.Equal(t, 3, tested, "mounts compared")
	t.Logf("largest difference from nfsiostat (mountstats %s) over the mounts and classes: round trip %.4f %%, execute %.4f %%, queue %.4f %%; from its iostat lines (read, write): round trip %.4f %%, execute %.4f %%, queue %.4f %%",
		tool.script, worst["rtt"], worst["exe"], worst["queue"], worst["iostat rtt"], worst["iostat exe"], worst["iostat queue"])
}

// nfsToolClasses sums the script's operations by class: the operations and, over them, the mean
// queue, round trip and execute times (ms) as the script computes them, each operation's mean
// weighted by its count.
func nfsToolClasses(r *nfsToolReport) map[string]nfsToolOp {
	out := map[string]nfsToolOp{"read": {}, "write": {}, "metadata": {}, "other": {}}
	for op, v := range r.ops {
		c := out[nfsClass(op)]
		c.ops += v.ops
		c.queue += float64(v.ops) * v.queue
		c.rtt += float64(v.ops) * v.rtt
		c.exe += float64(v.ops) * v.exe
		out[nfsClass(op)] = c
	}
	for class, c := range out {
		if c.ops > 0 {
			n := float64(c.ops)
			out[class] = nfsToolOp{ops: c.ops, queue: c.queue / n, rtt: c.rtt / n, exe: c.exe / n}
		}
	}
	return out
}

// nfsAccuracyMount compares the receiver's scrapes of m with the mountstats script (nfsiostat's
// code) over the same mountstats texts, files[0] read by the first scrape and files[1] by the second.
func nfsAccuracyMount(t *testing.T, tool nfsTool, r *vmproto.NFSRound, files [2]string, m vmproto.NFSMount, worst map[string]float64) {
	s0, s1 := parseNFSStats(t, r.MountstatsBefore), parseNFSStats(t, r.MountstatsAfter)
	e0, e1 := unmarshalMetrics(t, r.First), unmarshalMetrics(t, r.Second)
	t.Run(m.Label, func(t *testing.T) {
		before, after := s0[m.MountPoint], s1[m.MountPoint]
		require.NotNil(t, before, "mountstats before the I/O has no %s", m.MountPoint)
		require.NotNil(t, after, "mountstats after the I/O has no %s", m.MountPoint)
		t.Logf("%s %s: fstype %s, %d transport(s), opts %s", m.Source, m.MountPoint, after.fstype, after.xprts, after.opts)
		wantXprts := 1
		if strings.Contains(m.Options, "nconnect=4") {
			wantXprts = 4
		}
		assert.Equal(t, wantXprts, after.xprts, "transports in mountstats")
		vers := strings.TrimPrefix(strings.Split(m.Options, ",")[0], "vers=")
		assert.Contains(t, after.opts, "vers="+vers, "the mount's NFS version")

		// Operations and bytes: exact, against the script's report of what each scrape read.
		for i, sc := range []struct {
			what string
			md   pmetric.Metrics
		}{{"first scrape", e0}, {"second scrape", e1}} {
			rep, err := parseMountstatsReport(tool.run(t, "mountstats", "-f", files[i], m.MountPoint))
			require.NoError(t, err, "mountstats' report of %s", m.MountPoint)
			require.True(t, rep.bytes, "mountstats' report of %s has the byte counts", m.MountPoint)
			for class, sum := range nfsToolClasses(rep) {
				got, ok := nfsPoint(sc.md, "disk_health.nfs.client.mount.operation.count", m.MountPoint, map[string]string{"disk_health.nfs.operation.class": class})
				assert.True(t, ok && got == float64(sum.ops), "%s: %s operations: mountstats %d, receiver %v (exported %v)", sc.what, class, sum.ops, got, ok)
			}
			for dir, want := range map[string]uint64{"receive": rep.readBytes, "transmit": rep.writeBytes} {
				got, ok := nfsPoint(sc.md, "disk_health.nfs.client.mount.io", m.MountPoint, map[string]string{"network.io.direction": dir})
				assert.True(t, ok && got == float64(want), "%s: bytes %s: mountstats %d, receiver %v (exported %v)", sc.what, dir, want, got, ok)
			}
		}
		// The I/O went to the server, as RPCs: the direct bytes are the program's, every block a READ or a WRITE.
		io := uint64(r.IO[m.MountPoint])
		assert.Equal(t, io, after.bytes[2]-before.bytes[2], "direct bytes read")
		assert.Equal(t, io, after.bytes[3]-before.bytes[3], "direct bytes written")

		// Means over the interval between the scrapes: the script's per-operation report since the
		// first reading (6 decimals of ms) for every class, and its nfsiostat lines (3 decimals) for
		// read and write. The bound is 1 %% of the script's mean and half its last printed digit.
		since, err := parseMountstatsReport(tool.run(t, "mountstats", "--rpc", "-f", files[1], "-S", files[0], m.MountPoint))
		require.NoError(t, err, "mountstats --rpc -S of %s", m.MountPoint)
		iostat, err := parseIostatReport(tool.run(t, "iostat", "-f", files[1], "-S", files[0], m.MountPoint))
		require.NoError(t, err, "mountstats iostat -S of %s", m.MountPoint)
		within := func(what, class, metric string, got, want, digit float64) {
			diff := math.Abs(got - want)
			pct := 0.0
			if want > 0 {
				pct = 100 * diff / want
			}
			t.Logf("%-8s %-45s %-13s %.6f ms, receiver %.6f ms (%.4f %%)", class, metric, what, want, got, pct)
			key := strings.TrimPrefix(metric, "disk_health.nfs.client.mount.operation.")
			if what == "nfsiostat" {
				key = "iostat " + key
			}
			worst[shortTime[key]] = max(worst[shortTime[key]], pct)
			assert.LessOrEqual(t, diff, 0.01*want+digit/2, "%s %s within 1 %% of %s's", metric, class, what)
		}
		classes := nfsToolClasses(since)
		for _, class := range []string{"read", "write", "metadata", "other"} {
			c := classes[class]
			// Every class is compared: 32 READs and WRITEs, the COMMIT of the buffered write (other),
			// the stat and the listing (metadata).
			if class == "read" || class == "write" {
				assert.GreaterOrEqual(t, c.ops, uint64(32), "%s operations in the interval", class)
			}
			t.Logf("%-8s %d operations in the interval", class, c.ops)
			if !assert.Positive(t, c.ops, "%s operations in the interval", class) {
				continue
			}
			for _, q := range []struct {
				metric string
				want   float64
				line   float64
			}{
				{"disk_health.nfs.client.mount.operation.round_trip_time", c.rtt, iostat[class].rtt},
				{"disk_health.nfs.client.mount.operation.execute_time", c.exe, iostat[class].exe},
				{"disk_health.nfs.client.mount.operation.queue_time", c.queue, iostat[class].queue},
			} {
				got, ok := nfsPoint(e1, q.metric, m.MountPoint, map[string]string{"disk_health.nfs.operation.class": class})
				if class == "other" && q.metric == "disk_health.nfs.client.mount.operation.round_trip_time" {
					assert.False(t, ok, "no round trip for other: its lease and session calls are not what a user waits on")
					continue
				}
				if !assert.True(t, ok, "%s %s exported", q.metric, class) {
					continue
				}
				within("mountstats", class, q.metric, got*1000, q.want, 1e-6)
				if class == "read" || class == "write" {
					within("nfsiostat", class, q.metric, got*1000, q.line, 1e-3)
				}
			}
		}
	})
}

// shortTime names the worst differences nfsAccuracy reports.
var shortTime = map[string]string{
	"round_trip_time": "rtt", "execute_time": "exe", "queue_time": "queue",
	"iostat round_trip_time": "iostat rtt", "iostat execute_time": "iostat exe", "iostat queue_time": "iostat queue",
}

func nfsSeries(t *testing.T, b *vmproto.NFSBundle) {
	most := map[string]int{}
	for _, raw := range b.NetfsExports {
		n := map[string]int{}
		pdatawalk.ForEachNumberPoint(unmarshalMetrics(t, raw), func(_ pcommon.Resource, _ pmetric.Metric, dp pmetric.NumberDataPoint) {
			mp, _ := dp.Attributes().Get("system.filesystem.mountpoint")
			n[mp.Str()]++
		})
		for mp, c := range n {
			most[mp] = max(most[mp], c)
		}
	}
	for _, label := range b.HangMounts {
		m := nfsMount(t, b, label)
		t.Logf("%s (%s): at most %d points in one export of %d", m.MountPoint, m.Label, most[m.MountPoint], len(b.NetfsExports))
		assert.Positive(t, most[m.MountPoint], "points of %s", m.MountPoint)
		assert.LessOrEqual(t, most[m.MountPoint], 12, "points of %s at the defaults", m.MountPoint)
	}
}

// nfsKernelLine is a kernel log record about an NFS server, placed on the Unix clock.
type nfsKernelLine struct {
	at   int64 // Unix ns
	text string
}

// nfsKernelLines reads the guest's /dev/kmsg records ("PRIO,SEQ,USEC,FLAGS;MESSAGE").
func nfsKernelLines(t *testing.T, b *vmproto.NFSBundle) []nfsKernelLine {
	var out []nfsKernelLine
	for _, rec := range b.KernelLog {
		head, msg, ok := strings.Cut(rec, ";")
		f := strings.Split(head, ",")
		require.True(t, ok && len(f) >= 4, "a /dev/kmsg record: %q", rec)
		usec, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err, "%q", rec)
		msg, _, _ = strings.Cut(msg, "\n")
		out = append(out, nfsKernelLine{at: b.Realtime - (b.Monotonic - usec*1000), text: msg})
	}
	return out
}

// nfsKernelEvidence: the kernel said the mount's server stopped answering and answered again, with
// the lines Linux 6.1 prints for a hard mount; a state change that came after the kernel's line
// carries it as evidence (the OK line comes with the reply that ends the outage, before the mount
// is judged ok; the "not responding" line comes after the major timeout, usually after the statfs
// deadline has made the mount unresponsive).
func nfsKernelEvidence(t *testing.T, b *vmproto.NFSBundle, m vmproto.NFSMount, down, up plog.LogRecord) {
	server, _, _ := strings.Cut(m.Source, ":")
	var notResponding, ok *nfsKernelLine
	lines := nfsKernelLines(t, b)
	for i, l := range lines {
		switch {
		case notResponding == nil && l.text == "nfs: server "+server+" not responding, still trying" && l.at > b.Stopped:
			notResponding = &lines[i]
		case ok == nil && notResponding != nil && l.text == "nfs: server "+server+" OK":
			ok = &lines[i]
		}
	}
	require.NotNil(t, notResponding, "the kernel's \"not responding\" line for %s after the server stopped; its NFS lines: %q", server, b.KernelLog)
	require.NotNil(t, ok, "the kernel's \"OK\" line for %s after it said not responding; its NFS lines: %q", server, b.KernelLog)
	secs := func(ns int64) float64 { return float64(ns) / 1e9 }
	// The kernel's clock is placed on the Unix one to within a few ms: a line well before the
	// change's scrape began was read by that scrape or an earlier one.
	const margin = int64(100 * time.Millisecond)
	carries := 0
	for _, c := range []struct {
		what string
		line *nfsKernelLine
		ev   plog.LogRecord
	}{{"unresponsive", notResponding, down}, {"ok", ok, up}} {
		evidence, _ := c.ev.Attributes().Get("disk_health.evidence")
		at := int64(c.ev.Timestamp())
		t.Logf("kernel: %q at +%.2f s after rpc.nfsd 0; the %s event's scrape began at +%.2f s, evidence %q",
			c.line.text, secs(c.line.at-b.Stopped), c.what, secs(at-b.Stopped), evidence.Str())
		if c.line.at < at-margin {
			assert.Contains(t, evidence.Str(), "kernel: "+c.line.text, "the %s event came after the kernel's line: its evidence", c.what)
		}
		if strings.Contains(evidence.Str(), "kernel: "+c.line.text) {
			carries++
		}
	}
	assert.Positive(t, carries, "an event of the outage carries the kernel's line")
}

// nfsState is a mount's state in md and the time of its point ("" when it has none).
func nfsState(md pmetric.Metrics, mp string) (string, int64) {
	var s string
	var at int64
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		p, _ := dp.Attributes().Get("system.filesystem.mountpoint")
		if m.Name() == "disk_health.filesystem.client.state" && p.Str() == mp && dp.IntValue() == 1 {
			st, _ := dp.Attributes().Get("disk_health.client.state")
			s, at = st.Str(), int64(dp.Timestamp())
		}
	})
	return s, at
}

func nfsHang(t *testing.T, b *vmproto.NFSBundle) {
	require.NotZero(t, b.Stopped)
	exports := make([]pmetric.Metrics, len(b.NetfsExports))
	for i, raw := range b.NetfsExports {
		exports[i] = unmarshalMetrics(t, raw)
	}
	secs := func(ns int64) float64 { return float64(ns) / 1e9 }
	// The bound: the mounts' major timeout, then the statfs deadline, then one scrape.
	bound := b.RPCTimeout + b.StatfsTimeout + b.Interval
	events := plog.NewLogs()
	require.NoError(t, func() (err error) { events, err = (&plog.JSONUnmarshaler{}).UnmarshalLogs(b.Events); return err }())

	for _, label := range b.HangMounts {
		m := nfsMount(t, b, label)
		t.Run(m.Label, func(t *testing.T) {
			var down, up int64
			for _, md := range exports {
				st, at := nfsState(md, m.MountPoint)
				if down == 0 && at > b.Stopped && st == "unresponsive" {
					down = at
				}
				if up == 0 && at > b.Restarted && st == "ok" {
					up = at
				}
			}
			require.NotZero(t, down, "no scrape after the server stopped said unresponsive")
			require.NotZero(t, up, "no scrape after the server started again said ok")
			// A point is stamped when its scrape began; the scrape that says unresponsive first waited
			// statfs_timeout for the statfs, so its export came at most that much later.
			exported := secs(down-b.Stopped) + b.StatfsTimeout
			t.Logf("unresponsive in the scrape begun %.2f s after rpc.nfsd 0, exported by %.2f s (bound: major timeout %.1f s + statfs_timeout %.1f s + a scrape %.1f s = %.1f s); ok in the scrape begun %.2f s after rpc.nfsd 4",
				secs(down-b.Stopped), exported, b.RPCTimeout, b.StatfsTimeout, b.Interval, bound, secs(up-b.Restarted))
			assert.LessOrEqual(t, exported, bound, "unresponsive within one scrape after the RPC timeout and the statfs deadline")

			var got []string
			var evs []plog.LogRecord
			pdatawalk.ForEachLogRecord(events, func(_ pcommon.Resource, lr plog.LogRecord) {
				mp, _ := lr.Attributes().Get("system.filesystem.mountpoint")
				if mp.Str() != m.MountPoint {
					return
				}
				st, _ := lr.Attributes().Get("disk_health.client.state")
				prev, _ := lr.Attributes().Get("disk_health.previous_state")
				t.Logf("event at +%.2f s: %s", secs(int64(lr.Timestamp())-b.Stopped), lr.Body().Str())
				got = append(got, prev.Str()+"→"+st.Str())
				evs = append(evs, lr)
			})
			assert.Equal(t, []string{"ok→unresponsive", "unresponsive→ok"}, got, "the mount's state changes: one event down, one back up")
			if len(evs) == 2 {
				nfsKernelEvidence(t, b, m, evs[0], evs[1])
			}
		})
	}

	t.Run("other sources keep their interval", func(t *testing.T) {
		var n int
		var gap, last int64
		for _, at := range b.IostatAt {
			if at < b.Stopped || at > b.Restarted {
				continue
			}
			if last != 0 {
				gap = max(gap, at-last)
			}
			last = at
			n++
		}
		hung := secs(b.Restarted - b.Stopped)
		t.Logf("iostat: %d exports in the %.1f s the server was down, the longest gap %.2f s (interval %.1f s)", n, hung, secs(gap), b.Interval)
		assert.GreaterOrEqual(t, float64(n), math.Floor(hung/b.Interval)-1, "iostat exports while the server was down")
		assert.LessOrEqual(t, secs(gap), 2*b.Interval, "iostat's longest gap while the server was down")
	})

	t.Run("remount is a new series", func(t *testing.T) {
		v3 := nfsMount(t, b, b.HangMounts[0])
		type series struct {
			start, at int64
			ops       int64
			id        string
		}
		read := func(md pmetric.Metrics) (s series, ok bool) {
			pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
				a := dp.Attributes()
				p, _ := a.Get("system.filesystem.mountpoint")
				c, _ := a.Get("disk_health.nfs.operation.class")
				if m.Name() != "disk_health.nfs.client.mount.operation.count" || p.Str() != v3.MountPoint || c.Str() != "metadata" {
					return
				}
				dev, _ := a.Get("system.device")
				typ, _ := a.Get("system.filesystem.type")
				s, ok = series{int64(dp.StartTimestamp()), int64(dp.Timestamp()), dp.IntValue(), dev.Str() + " " + p.Str() + " " + typ.Str()}, true
			})
			return s, ok
		}
		var old, cur series
		for _, md := range exports {
			if s, ok := read(md); ok && s.at < b.Remounted {
				old = s
			} else if ok {
				cur = s
			}
		}
		require.NotZero(t, old.at, "no v3 series before the remount")
		require.NotZero(t, cur.at, "no v3 series after the remount")
		t.Logf("before: start %d, %d metadata ops (%s); after: start %d (%.2f s later), %d ops (%s)",
			old.start, old.ops, old.id, cur.start, secs(cur.start-old.start), cur.ops, cur.id)
		assert.Equal(t, old.id, cur.id, "the same identity")
		assert.Greater(t, cur.start, old.at, "the new series starts after the old one's last point")
		assert.Less(t, cur.ops, old.ops, "the new mount's counters start from zero")
	})
}

package e2e

import (
	"math"
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
//   - accuracy: between two scrapes of a receiver, 2 MiB of direct writes and reads per mount and a
//     stat and a listing; mountstats as the scrapes read it. Two rounds: v3 and v4.2, then v4.2
//     nconnect=4 alone (the kernel merges the NFSv4.1+ clients of one server). Operations per class
//     and the bytes from and to the server equal mountstats exactly, at both scrapes; the second
//     scrape's round-trip and execute times per class are within 1 % of nfsiostat's (Δ time /
//     Δ operations of the summed operations, computed here from the two mountstats readings: the guest
//     has no python3 for nfsiostat itself). The nconnect mount has its four transports.
//   - series: at the defaults no mount has more than 12 points in any export.
//   - hang (the v3 and nconnect mounts): `rpc.nfsd 0` under a receiver scraping each second: each is
//     unresponsive within one scrape after the mounts' major RPC timeout and the statfs deadline, with
//     one event; iostat's exports keep their interval; `rpc.nfsd 4`: ok again with one event; a remount
//     of the v3 mount is a new series (a later start time, counters from zero, the same identity).
func TestNFSClientQEMU(t *testing.T) {
	_, run := bootGuest(t, "nfsguest", 10*time.Minute, nil)
	var b vmproto.NFSBundle
	run.bundle(t, vmproto.MarkerNFS, &b)
	require.True(t, strings.HasPrefix(b.Kernel, "6.1."), "the guest runs Debian's 6.1 kernel, not %s", b.Kernel)
	require.Len(t, b.Mounts, 3, "the guest's mounts")
	t.Run("accuracy", func(t *testing.T) { nfsAccuracy(t, &b) })
	t.Run("series", func(t *testing.T) { nfsSeries(t, &b) })
	t.Run("hang", func(t *testing.T) { nfsHang(t, &b) })
}

// nfsStat is one mount's block of /proc/self/mountstats, read as nfsiostat reads it.
type nfsStat struct {
	fstype string
	opts   string
	bytes  []uint64            // normal read/write, direct read/write, server read/write, pages read/written
	ops    map[string][]uint64 // ops, transmissions, timeouts, bytes sent, received, queue, rtt, execute (ms) …
	xprts  int
}

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
		switch {
		case key == "opts":
			cur.opts = strings.TrimSpace(rest)
		case key == "bytes":
			cur.bytes = nums(rest)
		case key == "xprt":
			cur.xprts++
		case key != "" && strings.Trim(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") == "":
			cur.ops[key] = nums(rest)
		}
	}
	return out
}

// nfsMetadataOps are the operations of the metadata class as the README and the class attribute's
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

// classSums sums a mount's operations by class: operations, rtt and execute (ms).
func (s *nfsStat) classSums() map[string][3]uint64 {
	out := map[string][3]uint64{"read": {}, "write": {}, "metadata": {}, "other": {}}
	for op, v := range s.ops {
		c := out[nfsClass(op)]
		c[0] += v[0]
		c[1] += v[6]
		c[2] += v[7]
		out[nfsClass(op)] = c
	}
	return out
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
	tested := 0
	for _, r := range b.Rounds {
		t.Logf("round %v: the I/O took %.2f s", r.Mounts, r.IOSeconds)
		for _, label := range r.Mounts {
			nfsAccuracyMount(t, &r, nfsMount(t, b, label))
			tested++
		}
	}
	assert.Equal(t, 3, tested, "mounts compared")
}

func nfsAccuracyMount(t *testing.T, r *vmproto.NFSRound, m vmproto.NFSMount) {
	s0, s1 := parseNFSStats(t, r.MountstatsBefore), parseNFSStats(t, r.MountstatsAfter)
	e0, e1 := unmarshalMetrics(t, r.First), unmarshalMetrics(t, r.Second)
	{
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

			// Operations and bytes: exact, as each scrape read them.
			for _, r := range []struct {
				what string
				st   *nfsStat
				md   pmetric.Metrics
			}{{"first scrape", before, e0}, {"second scrape", after, e1}} {
				for class, sum := range r.st.classSums() {
					got, ok := nfsPoint(r.md, "nfs.client.mount.operation.count", m.MountPoint, map[string]string{"nfs.operation.class": class})
					assert.True(t, ok && got == float64(sum[0]), "%s: %s operations: mountstats %d, receiver %v (exported %v)", r.what, class, sum[0], got, ok)
				}
				for dir, i := range map[string]int{"receive": 4, "transmit": 5} {
					got, ok := nfsPoint(r.md, "nfs.client.mount.io", m.MountPoint, map[string]string{"network.io.direction": dir})
					assert.True(t, ok && got == float64(r.st.bytes[i]), "%s: bytes %s: mountstats %d, receiver %v (exported %v)", r.what, dir, r.st.bytes[i], got, ok)
				}
			}
			// The I/O went to the server, as RPCs: the direct bytes are the program's, every block a READ or a WRITE.
			io := uint64(r.IO[m.MountPoint])
			assert.Equal(t, io, after.bytes[2]-before.bytes[2], "direct bytes read")
			assert.Equal(t, io, after.bytes[3]-before.bytes[3], "direct bytes written")

			// Means: nfsiostat's over the interval between the scrapes.
			c0, c1 := before.classSums(), after.classSums()
			for _, class := range []string{"read", "write", "metadata", "other"} {
				ops := c1[class][0] - c0[class][0]
				if class == "read" || class == "write" {
					assert.GreaterOrEqual(t, ops, uint64(32), "%s operations in the interval", class)
				}
				if ops == 0 {
					continue
				}
				for _, q := range []struct {
					metric string
					i      int
				}{{"nfs.client.mount.operation.round_trip_time", 1}, {"nfs.client.mount.operation.execute_time", 2}} {
					if class == "other" && q.i == 1 {
						continue // no round trip for other: its lease and session calls are not what a user waits on
					}
					want := float64(c1[class][q.i]-c0[class][q.i]) / float64(ops) / 1000
					got, ok := nfsPoint(e1, q.metric, m.MountPoint, map[string]string{"nfs.operation.class": class})
					t.Logf("%-8s %4d ops  %-45s nfsiostat %.6f s, receiver %.6f s", class, ops, q.metric, want, got)
					if assert.True(t, ok, "%s %s exported", q.metric, class) {
						assert.LessOrEqual(t, math.Abs(got-want), 0.01*want, "%s %s within 1 %% of nfsiostat's", q.metric, class)
					}
				}
			}
		})
	}
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

// nfsState is a mount's state in md and the time of its point ("" when it has none).
func nfsState(md pmetric.Metrics, mp string) (string, int64) {
	var s string
	var at int64
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		p, _ := dp.Attributes().Get("system.filesystem.mountpoint")
		if m.Name() == "system.filesystem.client.state" && p.Str() == mp && dp.IntValue() == 1 {
			st, _ := dp.Attributes().Get("state")
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
			pdatawalk.ForEachLogRecord(events, func(_ pcommon.Resource, lr plog.LogRecord) {
				mp, _ := lr.Attributes().Get("system.filesystem.mountpoint")
				if mp.Str() != m.MountPoint {
					return
				}
				st, _ := lr.Attributes().Get("state")
				prev, _ := lr.Attributes().Get("disk_health.previous_state")
				t.Logf("event at +%.2f s: %s", secs(int64(lr.Timestamp())-b.Stopped), lr.Body().Str())
				got = append(got, prev.Str()+"→"+st.Str())
			})
			assert.Equal(t, []string{"ok→unresponsive", "unresponsive→ok"}, got, "the mount's state changes: one event down, one back up")
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
				c, _ := a.Get("nfs.operation.class")
				if m.Name() != "nfs.client.mount.operation.count" || p.Str() != v3.MountPoint || c.Str() != "metadata" {
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

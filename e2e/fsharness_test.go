package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// Helpers of the filesystem end-to-end tests: real mounts, df, and reading the filesystem metrics out
// of an export.

// runCmd runs a command and returns its standard output, failing the test with its stderr.
func runCmd(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = []string{testkit.ToolPath(), "LC_ALL=C"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s %s: %s", name, strings.Join(args, " "), stderr.String())
	return stdout.Bytes()
}

// unmountOnCleanup unmounts mp when the test ends, lazily if it stays busy, so a failed test
// leaves no mount behind.
func unmountOnCleanup(t *testing.T, mp string) {
	t.Cleanup(func() {
		var err error
		for range 20 {
			if err = unix.Unmount(mp, 0); !errors.Is(err, unix.EBUSY) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err == nil {
			return
		}
		if derr := unix.Unmount(mp, unix.MNT_DETACH); derr != nil {
			t.Errorf("cannot unmount %s: %v; lazily: %v", mp, err, derr)
			return
		}
		t.Logf("%s stayed busy (%v) and was detached lazily", mp, err)
	})
}

// mountTmpfs mounts a tmpfs named source at mp with the given options (size=...).
func mountTmpfs(t *testing.T, mp, source, opts string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(mp, 0o755))
	require.NoError(t, unix.Mount(source, mp, "tmpfs", 0, opts), "mount tmpfs at %s", mp)
	unmountOnCleanup(t, mp)
}

// mountLoop formats an image file of the given size with mkfs (its arguments before the image),
// attaches it to a loop device and mounts it at mp. It returns the loop device. The mount and the
// loop device are undone when the test ends, whatever happened.
func mountLoop(t *testing.T, mp, fsType string, size int64, mkfs ...string) string {
	t.Helper()
	img := mp + ".img"
	f, err := os.Create(img)
	require.NoError(t, err)
	require.NoError(t, errors.Join(f.Truncate(size), f.Close()))
	runCmd(t, mkfs[0], append(mkfs[1:], img)...)

	losetup := testkit.Tool(t, "losetup", "mount")
	dev := strings.TrimSpace(string(runCmd(t, losetup, "--find", "--show", img)))
	require.True(t, strings.HasPrefix(dev, "/dev/loop"), "losetup printed %q", dev)
	t.Cleanup(func() {
		// After a lazy unmount the device is still busy; -d then marks it to be freed on last close.
		if out, err := exec.Command(losetup, "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("cannot detach %s: %v: %s", dev, err, out)
		}
	})
	require.NoError(t, os.MkdirAll(mp, 0o755))
	require.NoError(t, unix.Mount(dev, mp, fsType, 0, ""), "mount %s (%s) at %s", dev, fsType, mp)
	unmountOnCleanup(t, mp)
	return dev
}

// writeFiles creates files of the given sizes (and one directory) in dir, syncs them and the
// filesystem, and returns the inodes it created.
func writeFiles(t *testing.T, dir string, sizes []int) int {
	t.Helper()
	sub := filepath.Join(dir, "dir")
	require.NoError(t, os.Mkdir(sub, 0o755))
	pattern := bytes.Repeat([]byte("diskhealth e2e "), 4096)
	for i, size := range sizes {
		f, err := os.Create(filepath.Join(sub, fmt.Sprintf("file-%d", i)))
		require.NoError(t, err)
		for left := size; left > 0; {
			n, err := f.Write(pattern[:min(left, len(pattern))])
			require.NoError(t, err)
			left -= n
		}
		require.NoError(t, errors.Join(f.Sync(), f.Close()))
	}
	d, err := os.Open(dir)
	require.NoError(t, err)
	require.NoError(t, errors.Join(unix.Syncfs(int(d.Fd())), d.Close()))
	return len(sizes) + 1
}

// majorMinor is the st_dev of a mount point as "major:minor", mountinfo's field 3.
func majorMinor(t *testing.T, path string) string {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(path, &st))
	return fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
}

// dfFields are the columns asked of df: df -B1's byte columns and df -i's inode columns.
const dfFields = "source,fstype,size,used,avail,pcent,itotal,iused,iavail,ipcent,target"

// dfRow is one line of `df -B1 --output=` + dfFields. A percentage df prints as "-" is -1.
type dfRow struct {
	source, fstype        string
	size, used, avail     int64
	pcent                 int
	itotal, iused, iavail int64
	ipcent                int
	target                string
}

// runDf runs df on the mount points and returns its rows by mount point.
func runDf(t *testing.T, df string, mps ...string) map[string]dfRow {
	t.Helper()
	out := runCmd(t, df, append([]string{"-B1", "--output=" + dfFields}, mps...)...)
	rows, err := parseDf(out)
	require.NoError(t, err, "df output:\n%s", out)
	for _, mp := range mps {
		require.Contains(t, rows, mp, "df output:\n%s", out)
	}
	return rows
}

// parseDf reads df's output for dfFields (no spaces in sources or mount points).
func parseDf(out []byte) (map[string]dfRow, error) {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("df printed %d lines, want a header and rows", len(lines))
	}
	rows := map[string]dfRow{}
	for i, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) != 11 {
			return nil, fmt.Errorf("df line %d: %d fields, want 11: %q", i+2, len(f), line)
		}
		r := dfRow{source: f[0], fstype: f[1], target: f[10]}
		var errs []error
		num := func(s string, dst *int64) {
			v, err := strconv.ParseInt(s, 10, 64)
			errs = append(errs, err)
			*dst = v
		}
		pct := func(s string, dst *int) {
			if s == "-" {
				*dst = -1
				return
			}
			v, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
			if err == nil && (!strings.HasSuffix(s, "%") || v < 0 || v > 100) {
				err = fmt.Errorf("bad percentage %q", s)
			}
			errs = append(errs, err)
			*dst = v
		}
		num(f[2], &r.size)
		num(f[3], &r.used)
		num(f[4], &r.avail)
		pct(f[5], &r.pcent)
		num(f[6], &r.itotal)
		num(f[7], &r.iused)
		num(f[8], &r.iavail)
		pct(f[9], &r.ipcent)
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("df line %d %q: %w", i+2, line, err)
		}
		if _, dup := rows[r.target]; dup {
			return nil, fmt.Errorf("df line %d: %s listed twice", i+2, r.target)
		}
		rows[r.target] = r
	}
	return rows, nil
}

// pcentAgrees reports whether a ratio in 0..1 is the percentage df printed, which it rounds up to
// a whole percent: df's p means p-1 < 100·ratio ≤ p.
func pcentAgrees(pcent int, ratio float64) bool {
	x := ratio * 100
	return x <= float64(pcent)+1e-9 && x > float64(pcent-1)
}

// fsPoint is one data point of a system.filesystem.* metric.
type fsPoint struct {
	metric string
	state  string // system.filesystem.state; empty when absent
	status string // status (disk_health.filesystem.status); empty when absent
	intVal int64
	dblVal float64
	isInt  bool
	ts     pcommon.Timestamp
}

// fsMount is what an export says about one mount point.
type fsMount struct {
	device, fsType, mode string
	majorMinor           string // the resource's disk_health.disk.major_minor
	resources            int    // resources that carry the mount; 1 unless it is reported twice
	points               []fsPoint
}

// filesystems indexes an export's system.filesystem.* points by mount point.
func filesystems(md pmetric.Metrics) map[string]*fsMount {
	out := map[string]*fsMount{}
	str := func(m pcommon.Map, k string) string {
		if v, ok := m.Get(k); ok {
			return v.Str()
		}
		return ""
	}
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		seen := map[string]bool{}
		sms := rm.ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				if !filesystemSourceMetric(m.Name()) {
					continue
				}
				var dps pmetric.NumberDataPointSlice
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				default:
					continue
				}
				for l := range dps.Len() {
					dp := dps.At(l)
					attrs := dp.Attributes()
					if _, ok := attrs.Get("system.filesystem.mountpoint"); !ok {
						// A capacity domain's own series (usage, headroom, checkpoints): the
						// filesystem's, not one mount's.
						continue
					}
					mp := str(attrs, "system.filesystem.mountpoint")
					fm := out[mp]
					if fm == nil {
						fm = &fsMount{}
						out[mp] = fm
					}
					if !seen[mp] {
						seen[mp] = true
						fm.resources++
						fm.majorMinor = str(rm.Resource().Attributes(), "disk_health.disk.major_minor")
					}
					fm.device, fm.fsType = str(attrs, "system.device"), str(attrs, "system.filesystem.type")
					if mode := str(attrs, "system.filesystem.mode"); mode != "" {
						fm.mode = mode
					}
					p := fsPoint{metric: m.Name(), state: str(attrs, "system.filesystem.state"),
						status: str(attrs, "status"), ts: dp.Timestamp()}
					if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
						p.intVal, p.isInt = dp.IntValue(), true
					} else {
						p.dblVal = dp.DoubleValue()
					}
					fm.points = append(fm.points, p)
				}
			}
		}
	}
	return out
}

// fsStatuses are the values of disk_health.filesystem.status.
var fsStatuses = []string{"ok", "timeout", "permission", "not_found", "io_error", "error"}

// status returns the mount's current status: its one status point at 1. The status the mount left
// at this scrape may be there at 0, once; a status it neither has nor just left is not sent (not 0). It
// is an error unless exactly one known status is 1 and at most one other is 0.
func (m *fsMount) status() (string, error) {
	got := map[string]int64{}
	for _, p := range m.points {
		if p.metric != "disk_health.filesystem.status" {
			continue
		}
		if _, dup := got[p.status]; dup || !p.isInt || !slices.Contains(fsStatuses, p.status) {
			return "", fmt.Errorf("status %q: twice, not an integer or unknown", p.status)
		}
		got[p.status] = p.intVal
	}
	cur, left := "", 0
	for s, v := range got {
		switch {
		case v == 1 && cur == "":
			cur = s
		case v == 0:
			left++
		default:
			return "", fmt.Errorf("statuses %v are not one 1 and the one left at 0", got)
		}
	}
	if cur == "" || left > 1 {
		return "", fmt.Errorf("statuses %v are not one 1 and the one left at 0", got)
	}
	return cur, nil
}

// hasStatus says whether the mount is in the export with the given status.
func hasStatus(fss map[string]*fsMount, mp, want string) bool {
	m, ok := fss[mp]
	if !ok {
		return false
	}
	s, err := m.status()
	return err == nil && s == want
}

// intValue returns the integer point of a metric with the given state ("" for none).
func (m *fsMount) intValue(metric, state string) (int64, bool) {
	for _, p := range m.points {
		if p.metric == metric && p.state == state && p.isInt {
			return p.intVal, true
		}
	}
	return 0, false
}

// ratio returns the double point of a gauge.
func (m *fsMount) ratio(metric string) (float64, bool) {
	for _, p := range m.points {
		if p.metric == metric && !p.isInt {
			return p.dblVal, true
		}
	}
	return 0, false
}

// has says whether any point of the metric is there.
func (m *fsMount) has(metric string) bool {
	for _, p := range m.points {
		if p.metric == metric {
			return true
		}
	}
	return false
}

// timestamp is when the scrape that produced the mount's points started.
func (m *fsMount) timestamp() pcommon.Timestamp {
	if len(m.points) == 0 {
		return 0
	}
	return m.points[0].ts
}

// isFilesystemExport tells the filesystem scraper's exports from the iostat scraper's.
func isFilesystemExport(md pmetric.Metrics) bool {
	return len(filesystems(md)) > 0
}

// hasMetric says whether an export has a metric of that name.
func hasMetric(md pmetric.Metrics, name string) bool {
	found := false
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) { found = found || m.Name() == name })
	return found
}

// filesystemSourceMetrics are the metrics of the filesystem source, from its documentation.md: the stack
// source's filesystem error counters share the system.filesystem. prefix and are not df's numbers.
var filesystemSourceMetrics = sync.OnceValue(func() map[string]bool {
	data, err := os.ReadFile(filepath.Join("..", "receiver", "diskhealthreceiver", "internal", "scraper", "filesystemscraper", "documentation.md"))
	if err != nil {
		panic(err)
	}
	ms, err := parseDocumentation(data)
	if err != nil || len(ms) == 0 {
		panic(fmt.Sprintf("filesystem documentation.md: %d metrics, %v", len(ms), err))
	}
	out := map[string]bool{}
	for _, m := range ms {
		out[m.Name] = true
	}
	return out
})

func filesystemSourceMetric(name string) bool { return filesystemSourceMetrics()[name] }

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// hangFS is a FUSE filesystem served by the test. Its statfs answers fixed numbers, or, while hung,
// blocks until told to answer, as a FUSE daemon or network server that stopped answering does. Only
// the calls of one process (the collector) hang, so nothing else on the machine that happens to
// statfs every mount (a df) is caught by the test or miscounted.
type hangFS struct {
	fs.Inode

	mu      sync.Mutex
	pid     int           // the process whose calls hang
	release chan struct{} // non-nil while hung; closed to answer
	hung    int           // statfs calls of pid since the hang began
	limit   time.Duration // how long one statfs blocks at most; hangLimit when zero
}

var _ fs.NodeStatfser = (*hangFS)(nil)

// hangStatfs is what hangFS answers. The fragment size differs from the block size, as on some FUSE
// and network filesystems: df counts blocks in f_frsize units, and so must the collector.
var hangStatfs = fuse.StatfsOut{
	Blocks: 1000, Bfree: 600, Bavail: 500, Files: 200, Ffree: 150,
	Bsize: 64 << 10, Frsize: 4 << 10, NameLen: 255,
}

func (h *hangFS) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	pid := -1
	if c, ok := fuse.FromContext(ctx); ok {
		pid = processOf(int(c.Pid))
	}
	h.mu.Lock()
	release := h.release
	if release != nil && pid == h.pid {
		h.hung++
	} else {
		release = nil
	}
	limit := cmp.Or(h.limit, hangLimit)
	h.mu.Unlock()
	if release != nil {
		// The request's context, cancelled when the kernel forwards an interrupt, is ignored: a hung
		// daemon answers no interrupt either. The limit is a dead man's switch: a request the daemon
		// has read cannot be killed, so a caller blocked here (the collector) could not even exit if
		// the test lost track of the hang.
		select {
		case <-release:
		case <-time.After(limit):
		}
	}
	*out = hangStatfs
	return fs.OK
}

// processOf returns the process (thread group) of a thread: FUSE requests name the calling thread.
func processOf(tid int) int {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return -1
}

// hangLimit bounds how long one statfs blocks, whatever the test does.
const hangLimit = 2 * time.Minute

// setLimit sets how long one statfs blocks at most (hangLimit by default), for a test whose hang must
// outlast hangLimit. The test's cleanup still answers every blocked call when it ends.
func (h *hangFS) setLimit(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.limit = d
}

// hang makes statfs block for the process pid from now on. Call it after starting that process:
// the hang then ends, if the test has not ended it, before the process is stopped, which could
// otherwise not exit while its statfs waits for the daemon (the kernel waits out a request the
// daemon has read, even for SIGKILL).
func (h *hangFS) hang(t *testing.T, pid int) {
	t.Cleanup(func() { h.answer() })
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pid, h.hung = pid, 0
	if h.release == nil {
		h.release = make(chan struct{})
	}
}

// answer answers the blocked statfs calls and every later one, and returns how many calls hung.
func (h *hangFS) answer() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.release != nil {
		close(h.release)
		h.release = nil
	}
	return h.hung
}

// mountHangFS mounts a hangFS at mp (type fuse.e2ehang, source e2e-hang). When the test ends it
// answers any blocked call before unmounting.
func mountHangFS(t *testing.T, mp string) *hangFS {
	t.Helper()
	h := &hangFS{}
	testkit.ServeFUSE(t, mp, h, "e2e-hang", "e2ehang", func() { h.answer() })
	return h
}

// TestHungMountNeverStallsScrape runs the built collector on a FUSE mount served by the test, beside
// a loop-mounted ext4 and a tmpfs, with iostat on. The FUSE server then stops answering statfs:
// every scrape during the hang must finish within remote_statfs_timeout plus a margin (and, once the
// mount is known stuck, without waiting at all), keep reporting the other filesystems and the loop
// device's I/O at the collection interval, and report the stuck mount's status as timeout. When the
// server answers again the mount must come back with its numbers, and the log must show one warning
// for the change to timeout and one info line for the recovery, never a line per scrape.
func TestHungMountNeverStallsScrape(t *testing.T) {
	bin := collectorBinary(t)
	testkit.RequireRoot(t, "mounting a FUSE filesystem, a loop device and a tmpfs")
	_, err := os.Stat("/dev/fuse")
	require.NoError(t, err, "this kernel offers no FUSE device")
	mkext4 := testkit.Tool(t, "mkfs.ext4", "e2fsprogs")

	const (
		interval = 2 * time.Second // collection_interval
		timeout  = time.Second     // remote_statfs_timeout
		// What an export's arrival adds to its scrape's duration: the file exporter's 100 ms flush
		// interval, the test's 20 ms polling, scheduling on a busy 2-core machine.
		margin = 750 * time.Millisecond
		jitter = 300 * time.Millisecond // allowed deviation of the time between two scrapes from the interval
		// fsusage.DefaultReprobeInterval: once the hung call has returned, the stuck mount is statfs'd
		// again after this long, and only that re-probe brings it back.
		reprobe     = 30 * time.Second
		hangScrapes = 4 // filesystem scrapes watched while the server does not answer
	)

	dir := t.TempDir()
	ext4 := filepath.Join(dir, "ext4")
	loop := filepath.Base(mountLoop(t, ext4, "ext4", 16<<20, mkext4, "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"))
	mem := filepath.Join(dir, "tmpfs")
	mountTmpfs(t, mem, "e2e-hang-tmpfs", "size=8m")
	hung := filepath.Join(dir, "fuse")
	h := mountHangFS(t, hung)
	others := []string{ext4, mem}

	var include []string
	for _, mp := range []string{ext4, mem, hung} {
		include = append(include, fmt.Sprintf("%q", regexp.QuoteMeta(mp)))
	}
	out := filepath.Join(t.TempDir(), "metrics.jsonl")
	col := startCollector(t, bin, fileExportConfig(fmt.Sprintf(`receivers:
  disk_health:
    collection_interval: %s
    initial_delay: 0s
    iostat:
      enabled: true
      device_classes: [disk, loop]
    filesystem:
      enabled: true
      mount_points:
        include: [%s]
      include_memory_filesystems: true
      include_remote_filesystems: true
      statfs_timeout: %s
      remote_statfs_timeout: %s
`, interval, strings.Join(include, ", "), timeout, timeout), out))
	tt := &exportTail{path: out}

	// Before the hang: all three mounts, the FUSE one with the numbers it serves.
	iOK := col.waitExport(t, tt, 0, 20*time.Second, "the three mounts answering", func(md pmetric.Metrics) bool {
		fss := filesystems(md)
		return hasStatus(fss, hung, "ok") && hasStatus(fss, ext4, "ok") && hasStatus(fss, mem, "ok")
	})
	checkHangFSUsage(t, filesystems(tt.exports[iOK])[hung], hung)

	h.hang(t, col.cmd.Process.Pid)
	iFirst := col.waitExport(t, tt, iOK+1, interval+timeout+margin, "the FUSE mount timing out",
		func(md pmetric.Metrics) bool { return hasStatus(filesystems(md), hung, "timeout") })
	iLast := iFirst
	for range hangScrapes - 1 {
		iLast = col.waitExport(t, tt, iLast+1, interval+margin, "the next filesystem scrape during the hang", isFilesystemExport)
	}
	hungCalls := h.answer()
	answered := time.Now()

	iBack := col.waitExport(t, tt, iLast+1, reprobe+interval+margin+time.Second, "the FUSE mount answering again",
		func(md pmetric.Metrics) bool { return hasStatus(filesystems(md), hung, "ok") })
	back := tt.arrived[iBack].Sub(answered)
	checkHangFSUsage(t, filesystems(tt.exports[iBack])[hung], hung)
	col.stop()

	// One statfs met the hang; the mount, known stuck, was not asked again while that call was out.
	assert.Equal(t, 1, hungCalls, "the collector's statfs calls during the hang")

	// Every filesystem scrape from the first timeout until the recovery.
	var durations []string
	var fsTimes, ioTimes []time.Time
	for k := iOK; k < iBack; k++ {
		md := tt.exports[k]
		fss := filesystems(md)
		if len(fss) == 0 {
			continue
		}
		if !assert.Contains(t, fss, hung, "export %d", k) {
			continue
		}
		start := fss[hung].timestamp().AsTime()
		fsTimes = append(fsTimes, start)
		if k < iFirst {
			continue
		}
		took := tt.arrived[k].Sub(start)
		durations = append(durations, took.Round(time.Millisecond).String())
		assert.Len(t, fss, 3, "export %d: %v", k, slices.Sorted(maps.Keys(fss)))
		if s, err := fss[hung].status(); assert.NoError(t, err, "export %d", k) {
			assert.Equal(t, "timeout", s, "export %d: the FUSE mount's status", k)
		}
		for _, metric := range []string{"system.filesystem.usage", "system.filesystem.limit", "system.filesystem.utilization",
			"disk_health.filesystem.inodes.usage", "disk_health.filesystem.inodes.utilization"} {
			assert.False(t, fss[hung].has(metric), "export %d: the stuck mount reports %s", k, metric)
		}
		for _, mp := range others {
			m, ok := fss[mp]
			if !assert.True(t, ok, "export %d lacks %s", k, mp) {
				continue
			}
			s, err := m.status()
			require.NoError(t, err, "export %d %s", k, mp)
			assert.Equal(t, "ok", s, "export %d %s", k, mp)
			_, ok = m.intValue("system.filesystem.usage", "used")
			assert.True(t, ok, "export %d: %s has no usage", k, mp)
			assert.Equal(t, start, m.timestamp().AsTime(), "export %d: one scrape for all mounts", k)
		}
		assert.LessOrEqual(t, took, timeout+margin, "export %d: scrape start to export", k)
		if k == iFirst {
			assert.GreaterOrEqual(t, took, timeout, "the scrape that met the hang waited out remote_statfs_timeout")
		} else {
			assert.Less(t, took, timeout, "export %d: a scrape waited for the mount already known stuck", k)
		}
	}
	// The iostat scrapes over the same time, each with the loop device's I/O and none held up.
	hangStart := filesystems(tt.exports[iFirst])[hung].timestamp().AsTime()
	for k := iOK; k < iBack; k++ {
		// Filesystem (and SMART) points carry system.device too: only iostat exports count.
		if !hasMetric(tt.exports[k], "system.disk.io") {
			continue
		}
		pts := devicePoints(tt.exports[k])
		p, ok := find(pts[loop], "system.disk.io", "read")
		if !assert.True(t, ok, "export %d: iostat without %s's system.disk.io", k, loop) {
			continue
		}
		start := p.ts.AsTime()
		ioTimes = append(ioTimes, start)
		if !start.Before(hangStart) {
			assert.Less(t, tt.arrived[k].Sub(start), margin, "export %d: an iostat scrape was held up", k)
		}
	}
	checkSteady(t, "filesystem", fsTimes, interval, jitter)
	checkSteady(t, "iostat", ioTimes, interval, jitter)
	assert.GreaterOrEqual(t, len(ioTimes), len(fsTimes)-1, "iostat scrapes kept pace with the filesystem ones")
	t.Logf("from the first timeout to the recovery (%d filesystem scrapes before the server answered), "+
		"filesystem scrape start to export: %v; %d filesystem and %d iostat scrapes at %v intervals; status ok "+
		"again %v after the server answered (re-probe interval %v)", hangScrapes, durations, len(fsTimes), len(ioTimes), interval,
		back.Round(10*time.Millisecond), reprobe)
	assert.Less(t, back, reprobe+interval+margin, "recovery after the server answered")

	checkTransitionLogs(t, col.output.String(), hung, others)
}

// checkHangFSUsage checks a hangFS mount's numbers: hangStatfs in f_frsize units, as df counts them.
func checkHangFSUsage(t *testing.T, m *fsMount, mp string) {
	t.Helper()
	require.NotNil(t, m, "%s missing", mp)
	assert.Equal(t, "e2e-hang", m.device)
	assert.Equal(t, "fuse.e2ehang", m.fsType)
	fr := int64(hangStatfs.Frsize)
	st := hangStatfs
	for _, w := range []struct {
		metric, state string
		want          int64
	}{
		{"system.filesystem.limit", "", int64(st.Blocks) * fr},
		{"system.filesystem.usage", "used", int64(st.Blocks-st.Bfree) * fr},
		{"system.filesystem.usage", "free", int64(st.Bavail) * fr},
		{"system.filesystem.usage", "reserved", int64(st.Bfree-st.Bavail) * fr},
		{"disk_health.filesystem.inodes.usage", "used", int64(st.Files - st.Ffree)},
		{"disk_health.filesystem.inodes.usage", "free", int64(st.Ffree)},
	} {
		v, ok := m.intValue(w.metric, w.state)
		assert.True(t, ok, "%s: no %s %s", mp, w.metric, w.state)
		assert.Equal(t, w.want, v, "%s %s %s", mp, w.metric, w.state)
	}
}

// checkSteady requires scrape start times to follow one another at the interval.
func checkSteady(t *testing.T, what string, starts []time.Time, interval, jitter time.Duration) {
	t.Helper()
	require.GreaterOrEqual(t, len(starts), 2, "%s scrapes", what)
	for i := 1; i < len(starts); i++ {
		d := starts[i].Sub(starts[i-1])
		assert.InDelta(t, interval.Seconds(), d.Seconds(), jitter.Seconds(),
			"%s scrape %d started %v after the previous one, not about %v", what, i+1, d, interval)
	}
}

// checkTransitionLogs requires exactly one warning for the mount's change to timeout and one info
// line for its recovery, and no warning or error about the other mounts.
func checkTransitionLogs(t *testing.T, log, mp string, others []string) {
	t.Helper()
	quoted := func(mp string) string { return fmt.Sprintf("%q: %q", "mountpoint", mp) }
	var warns, recoveries []string
	for line := range strings.SplitSeq(log, "\n") {
		bad := strings.Contains(line, "\twarn\t") || strings.Contains(line, "\terror\t")
		if (bad && strings.Contains(line, quoted(mp))) || strings.Contains(line, "filesystem statfs failed") {
			warns = append(warns, line)
		}
		if strings.Contains(line, "filesystem answers statfs again") {
			recoveries = append(recoveries, line)
		}
		for _, o := range others {
			assert.False(t, bad && strings.Contains(line, o), "a warning about %s: %s", o, line)
		}
	}
	if assert.Len(t, warns, 1, "warnings about the stuck mount:\n%s", strings.Join(warns, "\n")) {
		w := warns[0]
		assert.Contains(t, w, "\twarn\t")
		assert.Contains(t, w, "filesystem statfs failed")
		assert.Contains(t, w, quoted(mp))
		assert.Contains(t, w, `"from": "ok", "to": "timeout"`)
	}
	if assert.Len(t, recoveries, 1, "recovery lines:\n%s", strings.Join(recoveries, "\n")) {
		r := recoveries[0]
		assert.Contains(t, r, "\tinfo\t")
		assert.Contains(t, r, quoted(mp))
		assert.Contains(t, r, `"from": "timeout", "to": "ok"`)
	}
}

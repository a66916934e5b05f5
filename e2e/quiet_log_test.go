package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// quietRun is how long TestPersistentProblemsLogOnce runs the collector, and quietInterval its
// collection_interval: 120 scrapes.
const (
	quietRun      = 10 * time.Minute
	quietInterval = 5 * time.Second
	// quietSettle is how long the problems may take to be logged; after it the receiver logs nothing.
	quietSettle = time.Minute
)

// TestPersistentProblemsLogOnce (issue 14, done-when 4): over 10 minutes of scrapes at a 5 s interval,
// a root_path whose /proc/diskstats holds one persistent malformed line (the other devices good) and
// whose mount table holds a FUSE mount whose statfs stays hung the whole run (beside two mounts that
// answer) gives a log with one WARN per problem — the scrape-problem reporter's line for the bad line
// (once for the receiver, though iostat and latency, where its probe attaches, both read the file),
// the filesystem source's transition line for the stuck mount — no ERROR at all, and no receiver line
// after the first minute, while the good devices and the other mounts are exported at every interval.
func TestPersistentProblemsLogOnce(t *testing.T) {
	if testing.Short() {
		t.Skipf("SKIPPED LONG END-TO-END TEST: -short (it runs the collector for %v)", quietRun)
	}
	bin := collectorBinary(t)
	testkit.RequireRoot(t, "mounting a FUSE filesystem")
	_, err := os.Stat("/dev/fuse")
	require.NoError(t, err, "this kernel offers no FUSE device")

	// The root and its answering mounts on a tmpfs of the test's own: on the machine's disk their usage
	// moved with whatever else ran (a CI run's other tests), and the checkpoint learner, seeing saves in
	// that, may rightly send events about them — log lines this test is not about.
	dir := t.TempDir()
	mountTmpfs(t, dir, "e2e-quiet", "size=64m")
	root := filepath.Join(dir, "root")
	boot := time.Now().Add(-time.Hour).Truncate(time.Second)
	good := []dsLine{{Major: 8, Minor: 0, Name: "sda"}, {Major: 8, Minor: 16, Name: "sdb"}}
	diskstats := func(k uint64) string {
		var sb strings.Builder
		for _, d := range good {
			fmt.Fprintf(&sb, "%4d %7d %s %d 0 %d 10 %d 0 %d 10 0 %d 20\n", d.Major, d.Minor, d.Name, 100+k, 800+8*k, 50+k, 400+8*k, 5*k)
		}
		sb.WriteString("   8      32 sdc 1 2 x 4 5 6 7 8 9 10 11\n") // malformed, every scrape
		return sb.String()
	}
	buildReceiverRoot(t, root, good, []byte(diskstats(0)), boot)
	// Replaced whole (write, then rename), so no scrape reads a file half written.
	put := func(rel, content string) error {
		p := filepath.Join(root, rel)
		if err := os.WriteFile(p+".tmp", []byte(content), 0o644); err != nil {
			return err
		}
		return os.Rename(p+".tmp", p)
	}

	// The mounts, statfs'd below root: "/" and /data answer (they are directories of the test's
	// temporary filesystem), /mnt/hang is the test's FUSE server, hung for the collector once it has
	// answered one scrape.
	const hungMP = "/mnt/hang"
	others := []string{"/", "/data"}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "data"), 0o755))
	h := mountHangFS(t, filepath.Join(root, hungMP))
	h.setLimit(quietRun + 5*time.Minute)
	mountinfo := "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n" +
		"2 1 8:17 / /data rw - xfs /dev/sdb1 rw\n" +
		fmt.Sprintf("3 1 %s / %s rw - fuse.e2ehang e2e-hang rw\n", majorMinor(t, filepath.Join(root, hungMP)), hungMP)
	for _, p := range []string{"proc/1/mountinfo", "proc/self/mountinfo"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(mountinfo), 0o644))
	}

	out := filepath.Join(t.TempDir(), "metrics.jsonl")
	col := startCollector(t, bin, fileExportConfig(fmt.Sprintf(`receivers:
  disk_health:
    root_path: %s
    collection_interval: %s
    initial_delay: 0s
    smart:
      enabled: false
    filesystem:
      include_remote_filesystems: true
      statfs_timeout: 1s
      remote_statfs_timeout: 1s
`, root, quietInterval), out))
	started := time.Now()
	tt := &exportTail{path: out}

	// Keep the good devices' counters moving.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := uint64(1); ; k++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			_ = put("proc/diskstats", diskstats(k)) // a failure shows as a missing export below
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()

	iOK := col.waitExport(t, tt, 0, 30*time.Second, "the FUSE mount answering", func(md pmetric.Metrics) bool {
		return hasStatus(filesystems(md), hungMP, "ok")
	})
	h.hang(t, col.cmd.Process.Pid)
	col.waitExport(t, tt, iOK+1, 3*quietInterval, "the FUSE mount timing out",
		func(md pmetric.Metrics) bool { return hasStatus(filesystems(md), hungMP, "timeout") })

	time.Sleep(time.Until(started.Add(quietSettle)))
	quietFrom := len(col.output.String())
	for time.Since(started) < quietRun {
		require.NoError(t, tt.poll())
		select {
		case <-col.exited:
			t.Fatalf("the collector exited (%v) after %v", col.waitErr, time.Since(started))
		case <-time.After(time.Second):
		}
	}
	close(stop)
	<-done
	// Read everything before the server answers: its answer is a change the receiver logs.
	time.Sleep(time.Second)
	require.NoError(t, tt.poll())
	log := col.output.String()
	ran := time.Since(started)
	hungCalls := h.answer()
	col.stop()

	// The exports: every iostat scrape with both good devices (never the bad line's), every filesystem
	// scrape with the two answering mounts ok and the stuck one timeout (after the first).
	var ioTimes, fsTimes []time.Time
	timeouts := 0
	for k, md := range tt.exports {
		if hasMetric(md, "system.disk.io") {
			pts := devicePoints(md)
			var ts time.Time
			for _, d := range good {
				p, ok := find(pts[d.Name], "system.disk.io", "read")
				if assert.True(t, ok, "export %d: iostat without %s", k, d.Name) {
					ts = p.ts.AsTime()
				}
			}
			assert.NotContains(t, pts, "sdc", "export %d: the malformed line is skipped", k)
			ioTimes = append(ioTimes, ts)
		}
		fss := filesystems(md)
		if len(fss) == 0 {
			continue
		}
		for _, mp := range others {
			assert.True(t, hasStatus(fss, mp, "ok"), "export %d: %s not ok (%v)", k, mp, slices.Sorted(maps.Keys(fss)))
		}
		if k > iOK && hasStatus(fss, hungMP, "timeout") {
			timeouts++
		}
		fsTimes = append(fsTimes, fss["/"].timestamp().AsTime())
	}
	want := int(ran/quietInterval) - 1 // the scrapes over the run, but for one at either end
	assert.GreaterOrEqual(t, len(ioTimes), want, "iostat scrapes exported over %v", ran)
	assert.GreaterOrEqual(t, len(fsTimes), want, "filesystem scrapes exported over %v", ran)
	assert.GreaterOrEqual(t, timeouts, want-2, "filesystem scrapes reporting the stuck mount as timeout")
	// No interval passes without its scrape: the stuck mount never holds one up. A scrape the machine's
	// load started late is followed by the next on time (a ticker drops what it missed), so the bound is
	// one whole interval late, not a jitter a loaded machine can exceed; the single statfs call below is
	// what shows that no scrape waited on the mount.
	for what, times := range map[string][]time.Time{"iostat": ioTimes, "filesystem": fsTimes} {
		for i := 1; i < len(times); i++ {
			gap := times[i].Sub(times[i-1])
			assert.Less(t, gap, 2*quietInterval, "%s scrape %d came %v after the previous one", what, i+1, gap)
		}
	}
	assert.Equal(t, 1, hungCalls, "statfs calls met the hang: a mount known stuck is not asked again")

	// The log: one WARN per problem, no ERROR, nothing from the receiver after the first minute.
	var badLine, stuck, otherWarns, errs []string
	for line := range strings.SplitSeq(log, "\n") {
		switch {
		case strings.Contains(line, "\terror\t"):
			errs = append(errs, line)
		case !strings.Contains(line, "\twarn\t"):
		case strings.Contains(line, "Scrape problem") && strings.Contains(line, `"problem": "diskstats line 3 (sdc)`):
			badLine = append(badLine, line)
		case strings.Contains(line, "filesystem statfs failed") && strings.Contains(line, fmt.Sprintf("%q: %q", "mountpoint", hungMP)):
			stuck = append(stuck, line)
		default:
			otherWarns = append(otherWarns, line)
		}
	}
	// One problem, one line, however many sources meet it (the receiver shares its problems).
	assert.Len(t, badLine, 1, "WARN lines for the malformed diskstats line:\n%s", strings.Join(badLine, "\n"))
	if assert.Len(t, stuck, 1, "WARN lines for the stuck mount:\n%s", strings.Join(stuck, "\n")) {
		assert.Contains(t, stuck[0], `"from": "ok", "to": "timeout"`)
	}
	assert.Empty(t, errs, "ERROR lines")
	for _, w := range otherWarns {
		// Another source that reads /proc/diskstats (cgroups, for device names) names the line once too.
		assert.Contains(t, w, "(sdc)", "a WARN about neither problem: %s", w)
	}
	// Nothing at all is logged after the first minute (the collector's own lines come at shutdown, and
	// the log was read before it), so certainly nothing per scrape.
	var late []string
	for line := range strings.SplitSeq(log[quietFrom:], "\n") {
		if strings.TrimSpace(line) != "" {
			late = append(late, line)
		}
	}
	assert.Empty(t, late, "log lines after the first %v of %v", quietSettle, ran)
	t.Logf("%v at %v: %d iostat and %d filesystem scrapes exported (%d with the stuck mount as timeout, "+
		"%d statfs call hung); WARN lines: %d for the malformed line, %d for the stuck mount, %d other (%v); "+
		"%d ERROR; %d log lines after %v",
		ran.Round(time.Second), quietInterval, len(ioTimes), len(fsTimes), timeouts, hungCalls,
		len(badLine), len(stuck), len(otherWarns), otherWarns, len(errs), len(late), quietSettle)
}

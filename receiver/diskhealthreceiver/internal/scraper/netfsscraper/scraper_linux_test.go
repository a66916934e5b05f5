package netfsscraper

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper/internal/metadata"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// fixture is the fixture root k6.8-nfs-fuse: two NFSv4.2 mounts (one with nconnect=4 and a space in
// its name), a live FUSE mount (gcsfuse, no request waiting) and a FUSE mount whose connection is gone.
type fixture struct {
	t    testing.TB
	root *testkit.Root
	s    scraper.Metrics
	logs *consumertest.LogsSink
	at   time.Time
}

func newFixture(t testing.TB, edit func(*Config)) *fixture {
	root := testkit.NewRoot(t)
	root.CopyTree(filepath.Join("testdata", "roots", "k6.8-nfs-fuse"), ".", nil)
	cfg := createDefaultConfig()
	cfg.Enabled = true
	cfg.RootPath = root.Dir
	cfg.KernelLog = "" // the host's own kernel log is no fixture
	if edit != nil {
		edit(cfg)
	}
	f := &fixture{t: t, root: root, logs: new(consumertest.LogsSink), at: t0}
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, f.logs, func() time.Time { return f.at })
	require.NoError(t, err)
	require.NoError(t, s.Start(t.Context(), nil))
	t.Cleanup(func() { require.NoError(t, s.Shutdown(t.Context())) })
	f.s = s
	return f
}

// scrape scrapes at the fixture's time plus d, with mountstats replaced by testdata/mountstats/<file>
// when file is not empty.
func (f *fixture) scrape(d time.Duration, file string) pmetric.Metrics {
	f.t.Helper()
	if file != "" {
		data, err := os.ReadFile(filepath.Join("testdata", "mountstats", file))
		require.NoError(f.t, err)
		f.root.Write("proc/1/mountstats", string(data))
	}
	f.at = f.at.Add(d)
	md, err := f.s.ScrapeMetrics(f.t.Context())
	require.NoError(f.t, err)
	return md
}

// TestGolden: the second scrape of the fixture root, 10 s after the first, with the default metrics
// and with every metric: counters from mountstats with each mount's start at its mount time, the
// round trips of the interval, the FUSE connections.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		all  bool
	}{{"netfs-defaults", false}, {"netfs-all", true}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(c *Config) {
				if tc.all {
					c.MetricsBuilderConfig = metadata.NewDefaultMetricsBuilderConfig()
					enableAll(&c.MetricsBuilderConfig.Metrics)
				}
			})
			f.scrape(0, "")
			testkit.AssertGolden(t, tc.name, f.scrape(10*time.Second, "later.txt"))
		})
	}
}

// enableAll switches every metric of the source on.
func enableAll(m *metadata.MetricsConfig) {
	for _, e := range []*bool{
		&m.FuseConnectionConnected.Enabled, &m.FuseConnectionWaiting.Enabled, &m.DiskHealthNfsClientMountIo.Enabled,
		&m.DiskHealthNfsClientMountOperationCount.Enabled, &m.DiskHealthNfsClientMountOperationExecuteTime.Enabled,
		&m.DiskHealthNfsClientMountOperationQueueTime.Enabled, &m.DiskHealthNfsClientMountOperationRoundTripTime.Enabled,
		&m.DiskHealthNfsClientMountProcedureCount.Enabled, &m.DiskHealthNfsClientMountProcedureRoundTripTime.Enabled,
		&m.DiskHealthNfsClientMountRPCBacklog.Enabled, &m.DiskHealthNfsClientMountRPCCount.Enabled,
		&m.DiskHealthNfsClientMountRPCMajorTimeoutCount.Enabled, &m.DiskHealthNfsClientMountRPCRetransmitCount.Enabled,
		&m.DiskHealthNfsClientMountTransportConnectCount.Enabled, &m.DiskHealthFilesystemClientState.Enabled,
	} {
		*e = true
	}
}

// seriesByMount counts the series (points) of each mount point.
func seriesByMount(md pmetric.Metrics) map[string]int {
	n := map[string]int{}
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, _ pmetric.Metric, dp pmetric.NumberDataPoint) {
		mp, _ := dp.Attributes().Get("system.filesystem.mountpoint")
		n[mp.Str()]++
	})
	return n
}

// TestSeriesBudget: at the defaults an NFS mount, nconnect=4 included, has at most 10 series (9, and
// the client state left, once, at a change: /mnt/ckpt's here), a FUSE mount 3 (one client state);
// every series carries its mount point.
func TestSeriesBudget(t *testing.T) {
	f := newFixture(t, nil)
	f.scrape(0, "")
	n := seriesByMount(f.scrape(10*time.Second, "later.txt"))
	assert.Equal(t, map[string]int{"/mnt/ckpt": 10, "/mnt/train set": 6, "/mnt/gcs": 3, "/mnt/dead": 3}, n,
		"/mnt/train set had no operation in the interval: no round trips")
}

// point returns the value of metric's point of mount point mp whose attributes include attrs (-1
// when there is none).
func point(md pmetric.Metrics, metric, mp string, attrs map[string]string) int64 {
	v := int64(-1)
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		if p, _ := dp.Attributes().Get("system.filesystem.mountpoint"); m.Name() != metric || p.Str() != mp {
			return
		}
		for k, want := range attrs {
			if got, _ := dp.Attributes().Get(k); got.Str() != want {
				return
			}
		}
		v = dp.IntValue()
	})
	return v
}

// stateOf returns the mount's current client state in md.
func stateOf(t *testing.T, md pmetric.Metrics, mp string) string {
	t.Helper()
	var states []string
	for _, s := range []string{"ok", "slow", "unresponsive", "stale"} {
		if point(md, "disk_health.filesystem.client.state", mp, map[string]string{"disk_health.client.state": s}) == 1 {
			states = append(states, s)
		}
	}
	require.LessOrEqual(t, len(states), 1, "%s has several current states", mp)
	if len(states) == 0 {
		return ""
	}
	return states[0]
}

// events returns the events sent so far.
func (f *fixture) events() []plog.LogRecord {
	var out []plog.LogRecord
	for _, ld := range f.logs.AllLogs() {
		pdatawalk.ForEachLogRecord(ld, func(_ pcommon.Resource, lr plog.LogRecord) { out = append(out, lr) })
	}
	return out
}

// TestStateAndEvents: the FUSE mount without a connection is stale from the start; the NFS server
// that stops answering (requests sent, no reply, none completed) turns the mount unresponsive with
// one event naming the evidence; answering again brings it back with a recovery event.
func TestStateAndEvents(t *testing.T) {
	f := newFixture(t, nil)
	md := f.scrape(0, "")
	assert.Equal(t, "stale", stateOf(t, md, "/mnt/dead"))
	assert.Equal(t, "ok", stateOf(t, md, "/mnt/gcs"))
	evs := f.events()
	require.Len(t, evs, 1)
	assert.Equal(t, "/mnt/dead (s3fs): stale, was unknown: fuse: the connection is aborted or gone", evs[0].Body().Str())
	assert.Equal(t, plog.SeverityNumberError, evs[0].SeverityNumber())

	// The later reading has 12 retransmissions and a major timeout beside 50 000 completions: slow.
	md = f.scrape(10*time.Second, "later.txt")
	assert.Equal(t, "slow", stateOf(t, md, "/mnt/ckpt"))
	evs = f.events()
	require.Len(t, evs, 2)
	assert.Equal(t, "/mnt/ckpt (nas02:/ckpt): slow, was ok: rpc: 12 retransmissions and 1 major timeouts beside 53969 completed operations in 10s", evs[1].Body().Str())
	assert.Equal(t, plog.SeverityNumberWarn, evs[1].SeverityNumber())

	md = f.scrape(10*time.Second, "stalled.txt")
	assert.Equal(t, "unresponsive", stateOf(t, md, "/mnt/ckpt"))
	assert.Equal(t, "ok", stateOf(t, md, "/mnt/train set"))
	evs = f.events()
	require.Len(t, evs, 3)
	ev := evs[2]
	assert.Equal(t, "/mnt/ckpt (nas02:/ckpt): unresponsive, was slow: rpc: no operation completed in 10s; 5 sent, 0 replies, 0 major timeouts", ev.Body().Str())
	assert.Equal(t, "disk_health.state_change", ev.EventName())
	attrs := ev.Attributes().AsRaw()
	assert.Equal(t, map[string]any{
		"system.filesystem.mountpoint": "/mnt/ckpt", "system.device": "nas02:/ckpt",
		"system.filesystem.type": "nfs4", "disk_health.client.state": "unresponsive", "disk_health.previous_state": "slow",
		"disk_health.evidence": "rpc: no operation completed in 10s; 5 sent, 0 replies, 0 major timeouts",
	}, attrs)

	// Still nothing completes (a hard mount waits between retransmissions): still unresponsive, no
	// new event. Then operations complete: ok, with a recovery event at INFO.
	md = f.scrape(10*time.Second, "stalled.txt")
	assert.Equal(t, "unresponsive", stateOf(t, md, "/mnt/ckpt"))
	assert.Len(t, f.events(), 3)
	md = f.scrape(10*time.Second, "recovered.txt")
	assert.Equal(t, "ok", stateOf(t, md, "/mnt/ckpt"))
	evs = f.events()
	require.Len(t, evs, 4)
	assert.Equal(t, plog.SeverityNumberInfo, evs[3].SeverityNumber())
	assert.Equal(t, "/mnt/ckpt (nas02:/ckpt): ok, was unresponsive: statfs ok", evs[3].Body().Str())
}

// TestKernelLines: the kernel's NFS server lines, read from a log opened at its end (the line before
// the start is not read), make the mount of that server unresponsive with the line as evidence and
// ok again with the OK line; the other server's mount is untouched.
func TestKernelLines(t *testing.T) {
	var path string
	f := newFixture(t, func(c *Config) {
		path = filepath.Join(c.RootPath, "kmsg")
		require.NoError(t, os.WriteFile(path, []byte("5,1,1,-;nfs: server nas02 not responding, still trying\n"), 0o644))
		c.KernelLog = path
	})
	logf := func(lines string) {
		w, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = w.WriteString(lines)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
	md := f.scrape(0, "")
	assert.Equal(t, "ok", stateOf(t, md, "/mnt/ckpt"), "the line before the start is not read")
	before := len(f.events())

	logf("6,2,2,-;RPC: Registered tcp transport module.\n5,3,3,-;nfs: server nas02 not responding, still trying\n")
	md = f.scrape(10*time.Second, "")
	assert.Equal(t, "unresponsive", stateOf(t, md, "/mnt/ckpt"))
	assert.Equal(t, "ok", stateOf(t, md, "/mnt/train set"))
	evs := f.events()
	require.Len(t, evs, before+1)
	ev, _ := evs[before].Attributes().Get("disk_health.evidence")
	assert.Equal(t, "kernel: nfs: server nas02 not responding, still trying", ev.Str())

	logf("5,4,4,-;nfs: server nas02 OK\n")
	md = f.scrape(10*time.Second, "later.txt")
	assert.Equal(t, "ok", stateOf(t, md, "/mnt/ckpt"))
	evs = f.events()
	require.Len(t, evs, before+2)
	assert.Equal(t, "/mnt/ckpt (nas02:/ckpt): ok, was unresponsive: kernel: nfs: server nas02 OK", evs[before+1].Body().Str())
}

// TestKernelLogUnreadable: a kernel log that cannot be opened is said once, at INFO; the states are
// judged without it.
func TestKernelLogUnreadable(t *testing.T) {
	root := testkit.NewRoot(t)
	root.CopyTree(filepath.Join("testdata", "roots", "k6.8-nfs-fuse"), ".", nil)
	cfg := createDefaultConfig()
	cfg.Enabled, cfg.RootPath, cfg.KernelLog = true, root.Dir, filepath.Join(root.Dir, "no-kmsg")
	core, logs := observer.New(zap.InfoLevel)
	set := scrapertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s, err := newScraper(set, cfg, nil, time.Now)
	require.NoError(t, err)
	require.NoError(t, s.Start(t.Context(), nil))
	t.Cleanup(func() { require.NoError(t, s.Shutdown(t.Context())) })
	for range 3 {
		md, err := s.ScrapeMetrics(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "ok", stateOf(t, md, "/mnt/ckpt"))
	}
	said := logs.FilterMessageSnippet("kernel log is not readable").All()
	require.Len(t, said, 1)
	assert.Equal(t, zap.InfoLevel, said[0].Level)
	assert.Contains(t, said[0].ContextMap()["error"], "no-kmsg")
}

// TestRemountIsNewSeries: a mount's series starts at its mount time (now - age); counters going
// back (a remount seen as the same mount, or a bad reading) start a new series after the previous
// reading. (A remount with a new mount ID is a new instance, whose series start at its own age.)
func TestRemountIsNewSeries(t *testing.T) {
	f := newFixture(t, nil)
	f.scrape(0, "later.txt")
	start := func(md pmetric.Metrics) pcommon.Timestamp {
		var start pcommon.Timestamp
		pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
			if p, _ := dp.Attributes().Get("system.filesystem.mountpoint"); m.Name() == "disk_health.nfs.client.mount.operation.count" && p.Str() == "/mnt/ckpt" {
				start = dp.StartTimestamp()
			}
		})
		require.NotZero(t, start, "no operation count for /mnt/ckpt")
		return start
	}
	data, err := os.ReadFile(filepath.Join("testdata", "roots", "k6.8-nfs-fuse", "proc", "1", "mountstats"))
	require.NoError(t, err)
	first := start(f.scrape(10*time.Second, ""))
	assert.Equal(t, pcommon.NewTimestampFromTime(t0.Add(-3610*time.Second)), first, "the mount's time: age 3610 s")

	f.root.Write("proc/1/mountstats", string(data)) // fewer operations and an age of 3600 s, same mount
	second := start(f.scrape(10*time.Second, ""))
	assert.Equal(t, pcommon.NewTimestampFromTime(t0.Add(10*time.Second)), second, "after the previous reading")

}

// TestUnreadableMountstatsCostsOnlyNFSNumbers: without mountstats the mounts still report their
// state, and the scrape says what it could not read.
func TestUnreadableMountstatsCostsOnlyNFSNumbers(t *testing.T) {
	f := newFixture(t, nil)
	require.NoError(t, os.Remove(f.root.Path("proc/1/mountstats")))
	f.at = f.at.Add(time.Second)
	md, err := f.s.ScrapeMetrics(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mountstats")
	assert.Equal(t, "ok", stateOf(t, md, "/mnt/ckpt"))
	assert.Equal(t, map[string]int{"/mnt/ckpt": 1, "/mnt/train set": 1, "/mnt/gcs": 3, "/mnt/dead": 3}, seriesByMount(md))
}

func TestConfigValidate(t *testing.T) {
	c := createDefaultConfig()
	require.NoError(t, c.Validate("netfs"))
	c.StatfsTimeout, c.StallAfter = 0, -time.Second
	c.MountPoints.Include = []string{"("}
	err := c.Validate("netfs")
	require.Error(t, err)
	for _, want := range []string{"netfs.statfs_timeout", "netfs.stall_after", "netfs.mount_points.include[0]"} {
		assert.Contains(t, err.Error(), want)
	}
}

// BenchmarkScrape is one scrape of the fixture root (two NFS mounts, one with nconnect=4, and two
// FUSE mounts) with every metric on: the mount table's poll, four statfs, mountstats and the FUSE
// connections read, parsed and recorded.
func BenchmarkScrape(b *testing.B) {
	f := newFixture(b, func(c *Config) { enableAll(&c.MetricsBuilderConfig.Metrics) })
	f.scrape(0, "")
	b.ReportAllocs()
	for b.Loop() {
		f.scrape(10*time.Second, "")
	}
}

// TestEventsDocumented: every event name and attribute the scraper sends is in documentation.md.
func TestEventsDocumented(t *testing.T) {
	doc, err := os.ReadFile("documentation.md")
	require.NoError(t, err)
	f := newFixture(t, nil)
	f.scrape(0, "")
	f.scrape(10*time.Second, "later.txt")
	evs := f.events()
	require.NotEmpty(t, evs)
	for _, ev := range evs {
		for k := range ev.Attributes().All() {
			assert.Contains(t, string(doc), "`"+k+"`", k)
		}
		assert.Contains(t, string(doc), "`"+ev.EventName()+"`")
	}
}

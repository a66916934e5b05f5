package capacityscraper

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage/fsusagetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/projquota"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
)

// projectPoints is metric name's values by "domain id name directory [limit.type]".
func projectPoints(md pmetric.Metrics, name string) map[string]int64 {
	out := map[string]int64{}
	for k, dp := range pointsBy(md, name, "disk_health.filesystem.domain", "disk_health.filesystem.project.name",
		"disk_health.filesystem.project.directory", "disk_health.filesystem.project.limit.type") {
		id, _ := dp.Attributes().Get("disk_health.filesystem.project.id")
		out[fmt.Sprintf("%d %s", id.Int(), strings.TrimSpace(k))] = dp.IntValue()
	}
	return out
}

// quotaTable is a fake projquota.Read: each directory's records, or its error.
type quotaTable struct {
	byDir map[string][]projquota.Project
	errs  map[string]error
	calls map[string]int
}

func (q *quotaTable) read(dir, _ string, dst []projquota.Project) ([]projquota.Project, error) {
	q.calls[dir]++
	if err := q.errs[dir]; err != nil {
		return dst, err
	}
	return append(dst, q.byDir[dir]...), nil
}

// TestFSScraperProjectQuotas: /data (XFS, prjquota in its options) has 150 projects; the 3 largest are
// reported (max_per_filesystem 3) with the names and directories the projid and projects files give,
// their limits as set, and a headroom bound by the hard limit or by the filesystem; / is named by
// mount_points but has no project quota on, which is logged once, not per scrape, and gives no points.
func TestFSScraperProjectQuotas(t *testing.T) {
	root := t.TempDir()
	clock := t0
	mountinfo := strings.Replace(fsusagetest.HostMountinfo, "/data rw,relatime shared:30 - xfs /dev/nvme0n1p2 rw,attr2,inode64",
		"/data rw,relatime shared:30 - xfs /dev/nvme0n1p2 rw,attr2,inode64,prjquota", 1)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc/projects"), []byte("101:/data/run-a\n149:/data/run-c\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc/projid"), []byte("run-a:101\nrun-b:120\nbad\n"), 0o644))

	core, logs := observer.New(zap.InfoLevel)
	s := newTestCapScraperWith(t, root, mountinfo, fsusagetest.HostStatfs(root), &clock, func(m *metadata.MetricsBuilderConfig) {
		m.Metrics.DiskHealthFilesystemProjectInodesLimit.Enabled = true
		m.Metrics.DiskHealthFilesystemProjectInodesUsage.Enabled = true
	})
	cfg := testConfig()
	cfg.RootPath = root
	cfg.ProjectQuotas = ProjectQuotasConfig{Enabled: true, MaxPerFilesystem: 3, ProjectsFile: "/etc/projects", ProjIDFile: "/etc/projid"}
	cfg.ProjectQuotas.MountPoints.Include = []string{"/", "/data"}
	var err error
	s.projects, err = newProjectQuotas(zap.New(core), cfg)
	require.NoError(t, err)
	q := &quotaTable{byDir: map[string][]projquota.Project{}, errs: map[string]error{filepath.Join(root, "/"): projquota.ErrOff}, calls: map[string]int{}}
	for id := uint32(1); id <= 150; id++ {
		q.byDir[filepath.Join(root, "/data")] = append(q.byDir[filepath.Join(root, "/data")], projquota.Project{ID: id, Used: uint64(id) << 20, Inodes: uint64(id)})
	}
	ps := q.byDir[filepath.Join(root, "/data")]
	ps[100].Used, ps[100].BlockHard, ps[100].BlockSoft, ps[100].InodeHard = 180<<20, 200<<20, 150<<20, 1000 // 180 MiB of 200 MiB hard
	ps[148].BlockHard = 1 << 50                                                                             // above what the filesystem has
	s.projects.read = q.read

	var md pmetric.Metrics
	for range 2 {
		clock = clock.Add(time.Minute)
		md, err = s.scrape(t.Context())
		require.NoError(t, err)
	}
	data := "259:2"
	free := int64(40_000_000 * blk)
	assert.Equal(t, map[string]int64{
		"101 " + data + " run-a /data/run-a": 180 << 20,
		"149 " + data + "  /data/run-c":      149 << 20,
		"150 " + data:                        150 << 20,
	}, projectPoints(md, "disk_health.filesystem.project.usage"), "the 3 largest of 150, 101 among them")
	assert.Equal(t, map[string]int64{
		"101 " + data + " run-a /data/run-a": 20 << 20,
		"149 " + data + "  /data/run-c":      free,
		"150 " + data:                        free,
	}, projectPoints(md, "disk_health.filesystem.project.headroom"))
	assert.Equal(t, map[string]int64{
		"101 " + data + " run-a /data/run-a hard": 200 << 20,
		"101 " + data + " run-a /data/run-a soft": 150 << 20,
		"149 " + data + "  /data/run-c hard":      1 << 50,
	}, projectPoints(md, "disk_health.filesystem.project.limit"), "only the limits set")
	assert.Equal(t, map[string]int64{"101 " + data + " run-a /data/run-a hard": 1000}, projectPoints(md, "disk_health.filesystem.project.inodes.limit"))
	assert.Equal(t, int64(150), projectPoints(md, "disk_health.filesystem.project.inodes.usage")["150 "+data])
	assert.Equal(t, map[string]int64{"0 " + data: 150}, projectPoints(md, "disk_health.filesystem.projects"), "the count before the cap; / has none")
	assert.Equal(t, 2, q.calls[filepath.Join(root, "/")], "/ is named, so it is asked")
	assert.Zero(t, q.calls[filepath.Join(root, "/backup")], "a filesystem neither named nor with prjquota is not asked")

	warned := logs.FilterMessageSnippet("project quotas cannot be read").All()
	require.Len(t, warned, 1, "once, not per scrape")
	assert.Equal(t, "253:0", warned[0].ContextMap()["domain"])
	assert.Len(t, logs.FilterMessageSnippet("project quota names").All(), 1, "the projid file's bad line, once")

	// Project quotas on again: said once, and the points come.
	delete(q.errs, filepath.Join(root, "/"))
	q.byDir[filepath.Join(root, "/")] = []projquota.Project{{ID: 7, Used: 4096}}
	clock = clock.Add(time.Minute)
	md, err = s.scrape(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(4096), projectPoints(md, "disk_health.filesystem.project.usage")["7 253:0"])
	assert.Len(t, logs.FilterMessage("project quotas read again").All(), 1)
}

// TestProjectQuotasConfig: the section's problems are named by their keys; off, nothing is built.
func TestProjectQuotasConfig(t *testing.T) {
	cfg := testConfig()
	cfg.ProjectQuotas.MaxPerFilesystem = 0
	cfg.ProjectQuotas.ProjIDFile = "etc/projid"
	cfg.ProjectQuotas.MountPoints.Include = []string{"("}
	err := cfg.Validate(section)
	require.ErrorContains(t, err, "capacity.project_quotas.max_per_filesystem: must be at least 1, got 0")
	require.ErrorContains(t, err, "capacity.project_quotas.projid_file: must be an absolute path")
	require.ErrorContains(t, err, "capacity.project_quotas.mount_points.include[0]")
	p, err := newProjectQuotas(zap.NewNop(), createDefaultConfig())
	require.NoError(t, err)
	assert.Nil(t, p, "off by default")
}

// projectScraper is the host table's scraper with /data under prjquota holding n projects, every one
// reported, named and limited, read from a fake quotactl.
func projectScraper(tb testing.TB, n int, inodes bool) (*capScraper, *time.Time, *quotaTable) {
	root := tb.TempDir()
	clock := t0
	mountinfo := strings.Replace(fsusagetest.HostMountinfo, "/data rw,relatime shared:30 - xfs /dev/nvme0n1p2 rw,attr2,inode64",
		"/data rw,relatime shared:30 - xfs /dev/nvme0n1p2 rw,attr2,inode64,prjquota", 1)
	var projects, projid strings.Builder
	q := &quotaTable{byDir: map[string][]projquota.Project{}, calls: map[string]int{}}
	for id := uint32(1); id <= uint32(n); id++ {
		fmt.Fprintf(&projects, "%d:/data/runs/run-%d\n", id, id)
		fmt.Fprintf(&projid, "run-%d:%d\n", id, id)
		q.byDir[filepath.Join(root, "/data")] = append(q.byDir[filepath.Join(root, "/data")],
			projquota.Project{ID: id, Used: uint64(id) << 20, Inodes: uint64(id), BlockHard: 2 << 30, InodeHard: 10_000})
	}
	require.NoError(tb, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	require.NoError(tb, os.WriteFile(filepath.Join(root, "etc/projects"), []byte(projects.String()), 0o644))
	require.NoError(tb, os.WriteFile(filepath.Join(root, "etc/projid"), []byte(projid.String()), 0o644))
	require.NoError(tb, os.MkdirAll(filepath.Join(root, "proc", "1"), 0o755))
	require.NoError(tb, os.WriteFile(filepath.Join(root, "proc", "1", "mountinfo"), []byte(mountinfo), 0o644))
	cfg := testConfig()
	cfg.RootPath = root
	cfg.ProjectQuotas.Enabled = true
	cfg.ProjectQuotas.MaxPerFilesystem = n
	cfg.MetricsBuilderConfig.Metrics.DiskHealthFilesystemProjectInodesLimit.Enabled = inodes
	cfg.MetricsBuilderConfig.Metrics.DiskHealthFilesystemProjectInodesUsage.Enabled = inodes
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, nil, func() time.Time { return clock })
	require.NoError(tb, err)
	s.cfg.Prober.Statfs = fsusagetest.HostStatfs(root).Statfs
	s.projects.read = q.read
	tb.Cleanup(func() { require.NoError(tb, s.shutdown(context.Background())) })
	md, err := s.scrape(context.Background()) // the table's first read, the names files, every statfs
	require.NoError(tb, err)
	require.Len(tb, projectPoints(md, "disk_health.filesystem.project.usage"), n)
	return s, &clock, q
}

// BenchmarkScrapeProjectQuotas1000: a whole scrape of the host table with 1 000 project directories on
// /data, with the default metrics and with the inode ones on too.
func BenchmarkScrapeProjectQuotas1000(b *testing.B) {
	for _, inodes := range []bool{false, true} {
		b.Run(fmt.Sprintf("inodes=%v", inodes), func(b *testing.B) { benchProjects(b, inodes) })
	}
}

func benchProjects(b *testing.B, inodes bool) {
	s, clock, _ := projectScraper(b, 1000, inodes)
	b.ReportAllocs()
	cpu := dhtest.ProcessCPU(b, func() {
		for range b.N {
			*clock = clock.Add(time.Minute)
			if _, err := s.scrape(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The process's CPU, garbage collection included (target ≤ 5 ms with the default metrics).
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/scrape")
}

// TestFSScraperProjectCheckpointWillFail: a job saving about 100 MiB every 20 s (keep 2, rotation after
// the save) into a project directory with a 1 GiB hard quota on a filesystem with 160 GB free, next to a
// log growing 40 MiB per cycle: the directory's own learner foresees the save that passes the quota and
// sends will_fail naming the project, with project_quota as the binding limit, at least one cadence
// before the write that fails, while the filesystem's learner, whose free space is the filesystem's,
// never says will_fail.
func TestFSScraperProjectCheckpointWillFail(t *testing.T) {
	s, clock, q := projectScraper(t, 1, false)
	sink := new(consumertest.LogsSink)
	s.sink = sink
	data := filepath.Join(s.cfg.RootPath, "/data")
	const mib, hard, cadence = 1 << 20, 1 << 30, 20 * time.Second
	used := float64(300 * mib)
	var copies []float64
	var failAt, eventAt time.Duration
	for i := 1; failAt == 0; i++ {
		now := time.Duration(i) * time.Second
		used += 40 * mib / cadence.Seconds()
		if c := now % cadence; c > 0 && c <= 5*time.Second { // a save: five seconds of 20 MiB
			used += 20 * mib
			if c == 5*time.Second {
				copies = append(copies, 100*mib)
				if len(copies) > 2 {
					used -= copies[0]
					copies = copies[1:]
				}
			}
		}
		if used > hard {
			failAt = now
			break
		}
		q.byDir[data] = []projquota.Project{{ID: 1, Used: uint64(used), BlockHard: hard}}
		*clock = t0.Add(now)
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		if eventAt == 0 && sink.LogRecordCount() > 0 {
			eventAt = now
		}
		require.False(t, stateIs(md, "259:2", "will_fail"), "the filesystem has room")
		require.Less(t, i, 2000)
	}
	require.NotZero(t, eventAt, "no will_fail before the quota was passed")
	t.Logf("will_fail %v (%.1f cadences) before the save passes the quota", failAt-eventAt, (failAt-eventAt).Seconds()/cadence.Seconds())
	assert.GreaterOrEqual(t, failAt-eventAt, cadence)
	require.Equal(t, 1, sink.LogRecordCount())
	a := sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().AsRaw()
	assert.Equal(t, int64(1), a["disk_health.filesystem.project.id"])
	assert.Equal(t, "run-1", a["disk_health.filesystem.project.name"])
	assert.Equal(t, "/data/runs/run-1", a["disk_health.filesystem.project.directory"])
	assert.Equal(t, "project_quota", a["disk_health.checkpoint.binding_limit"])
	assert.Equal(t, "259:2", a["disk_health.filesystem.domain"])
}

// TestProjectQuotasScanDeadline: a quotactl scan that hangs costs one statfs_timeout, once: the domain
// says so and is not asked again until the call returns; another domain is read meanwhile.
func TestProjectQuotasScanDeadline(t *testing.T) {
	cfg := testConfig()
	cfg.ProjectQuotas.Enabled = true
	cfg.StatfsTimeout = 20 * time.Millisecond
	p, err := newProjectQuotas(zap.NewNop(), cfg)
	require.NoError(t, err)
	release := make(chan struct{})
	var calls atomic.Int32
	p.read = func(dir, _ string, dst []projquota.Project) ([]projquota.Project, error) {
		calls.Add(1)
		if dir == "/hung" {
			<-release
		}
		return append(dst, projquota.Project{ID: 9, Used: 1 << 20}), nil
	}
	hung, fine := fsusage.Domain{Major: 8, Minor: 1}, fsusage.Domain{Major: 8, Minor: 2}

	start := time.Now()
	_, err = p.scan(hung, "/hung", "")
	require.ErrorContains(t, err, "quotactl did not return within statfs_timeout (20ms)")
	assert.Less(t, time.Since(start), 5*time.Second)
	_, err = p.scan(hung, "/hung", "")
	require.ErrorContains(t, err, "not asked again until the call returns")
	assert.Equal(t, int32(1), calls.Load(), "no second call while the first is out")

	ps, err := p.scan(fine, "/fine", "")
	require.NoError(t, err, "another filesystem is read meanwhile")
	assert.Len(t, ps, 1)

	close(release)
	require.Eventually(t, func() bool { return len(p.stuck[hung]) == 1 }, 5*time.Second, time.Millisecond)
	ps, err = p.scan(hung, "/hung", "")
	require.NoError(t, err, "the call came back: asked again")
	assert.Equal(t, []projquota.Project{{ID: 9, Used: 1 << 20}}, ps)
	assert.Equal(t, int32(3), calls.Load())
	assert.Empty(t, p.stuck)
}

package filesystemscraper

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/metadata"
)

// realTimeScrape is the scrape interval of the real-time checkpoint test: short, so that the test
// takes about a minute, on the wall clock. The source's clock is each scrape's tick, not the moment a
// loaded machine got round to it: at 300 ms a scrape 120 ms late is what 12 s would be at the default
// 30 s, and no collector's ticker is that late.
const realTimeScrape = 300 * time.Millisecond

// realTimeRun is the filesystem source scraping one loop-mounted filesystem on the wall clock, as a
// collector does, with the checkpoint storage of ext (nil: none).
type realTimeRun struct {
	s    *fsScraper
	sink *consumertest.LogsSink
	dom  string
	next time.Time
}

var ckptStorageID = component.MustNewID("file_storage")

func startRealTime(t *testing.T, mnt string, ext extension.Extension) *realTimeRun {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.MountPoints = match.Config{Include: []string{mnt}}
	cfg.CheckpointWriters = false
	host := dhtest.StorageHost{}
	if ext != nil {
		cfg.Storage = &ckptStorageID
		host[ckptStorageID] = ext
	}
	set := scrapertest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type) // as the collector names it, the same after a restart
	set.Logger = zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	r := &realTimeRun{sink: new(consumertest.LogsSink), dom: blockDomain(t, mnt), next: time.Now()}
	s, err := newScraper(set, cfg, r.sink, func() time.Time { return r.next })
	require.NoError(t, err)
	require.NoError(t, s.start(t.Context(), host))
	r.s = s
	return r
}

// scrape waits for the next tick (ticks do not drift: a late one does not move the later ones) and
// scrapes.
func (r *realTimeRun) scrape(t *testing.T) pmetric.Metrics {
	t.Helper()
	r.next = r.next.Add(realTimeScrape)
	time.Sleep(time.Until(r.next))
	md, err := r.s.scrape(t.Context())
	require.NoError(t, err)
	return md
}

// state is the domain's checkpoint state, "" when it has no state series.
func (r *realTimeRun) state(md pmetric.Metrics) string {
	for _, st := range []string{"fits", "tight", "will_fail", "learning"} {
		if stateIs(md, r.dom, st) {
			return st
		}
	}
	return ""
}

// events are the event names the run sent, in order.
func (r *realTimeRun) events() []string {
	var names []string
	for _, ld := range r.sink.AllLogs() {
		pdatawalk.ForEachLogRecord(ld, func(_ pcommon.Resource, lr plog.LogRecord) {
			name, _ := lr.Attributes().Get("event.name")
			names = append(names, name.Str())
		})
	}
	return names
}

// saveJob is a training job in the writer child: a save of size bytes, kept (no rotation), every
// `every` scrapes.
type saveJob struct {
	w           *writerChild
	size, every int
	saves       int
}

// tick makes the save due at scrape i; the answer is the writer's ("ok", "ENOSPC").
func (j *saveJob) tick(t *testing.T, i int) string {
	if i%j.every != 0 {
		return "ok"
	}
	name := fmt.Sprintf("ckpt-%d", j.saves)
	j.saves++
	if answer := j.w.do(t, "w %s %d", name, j.size); answer != "ok" {
		return answer
	}
	return j.w.do(t, "close %s", name)
}

// TestFSScraperCheckpointRealTime (issue 31, "done when" 1): the filesystem source scraping a
// loop-mounted ext4 every 300 ms of wall-clock time while the writer child (its own process, without
// CAP_SYS_RESOURCE) saves 3 MiB checkpoints:
//   - saves every 2, 4 and 6 scrapes are learned (a state is emitted);
//   - saves every 3 scrapes are learned with a file_storage extension configured; the collector restarts
//     (source and extension shut down, new ones on the same directory) and the new source has a state
//     again by the first save after the restart;
//   - another writer then fills the filesystem: the will_fail event is sent before the first write
//     refused (ENOSPC), the headroom at the next save is never above what is free minus the save, and
//     every scrape has a checkpoint state (no series vanishes).
func TestFSScraperCheckpointRealTime(t *testing.T) {
	mnt, _ := loopFS(t, t.TempDir(), 128<<20, "ext4", "e2fsprogs", []string{"/usr/sbin/mke2fs", "-q", "-t", "ext4", "-m", "0"}, "")
	jobDir := filepath.Join(mnt, "job")
	require.NoError(t, os.Mkdir(jobDir, 0o755))
	w := startWriter(t, jobDir)
	const size = 3 << 20

	for _, every := range []int{2, 4, 6} {
		run := startRealTime(t, mnt, nil)
		job := &saveJob{w: w, size: size, every: every}
		learnedAt := -1
		for i := 0; i < 10*every && learnedAt < 0; i++ {
			require.Equal(t, "ok", job.tick(t, i))
			if st := run.state(run.scrape(t)); st != "" {
				learnedAt = job.saves
			}
		}
		require.NoError(t, run.s.shutdown(t.Context()))
		t.Logf("saves every %d scrapes: a state after %d saves", every, learnedAt)
		assert.Positive(t, learnedAt, "saves every %d scrapes are learned", every)
		require.Equal(t, "ok", w.do(t, "closeall"))
		emptyDir(t, jobDir)
		require.NoError(t, syncFS(jobDir))
	}

	stateDir := t.TempDir()
	ext := dhtest.FileStorage(t, stateDir)
	run := startRealTime(t, mnt, ext)
	job := &saveJob{w: w, size: size, every: 3}
	i := 0
	for ; run.state(run.scrape(t)) == "" || job.saves < 5; i++ {
		require.Less(t, i, 60, "saves every 3 scrapes learned")
		require.Equal(t, "ok", job.tick(t, i))
	}
	require.NoError(t, run.s.shutdown(t.Context()))
	require.NoError(t, ext.Shutdown(t.Context()))
	entries, err := os.ReadDir(stateDir)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "the learner was stored in the file_storage directory")

	ext = dhtest.FileStorage(t, stateDir)
	defer func() { require.NoError(t, ext.Shutdown(t.Context())) }()
	run = startRealTime(t, mnt, ext)
	defer func() { require.NoError(t, run.s.shutdown(t.Context())) }()
	before := job.saves
	var state string
	for i++; state == "" || job.saves == before; i++ {
		state = run.state(run.scrape(t))
		require.LessOrEqual(t, job.saves, before+1, "a state by the first save after the restart")
		require.Equal(t, "ok", job.tick(t, i))
	}
	t.Logf("after the restart: a state by save %d (the first after it: %d)", job.saves, before+1)
	require.Equal(t, "fits", state, "the saves fit before the other writer starts")

	// Another writer fills the filesystem, 6 MiB a scrape; the job saves on.
	fill, err := os.Create(filepath.Join(mnt, "fill"))
	require.NoError(t, err)
	defer fill.Close()
	chunk := make([]byte, 6<<20)
	for k := range chunk {
		chunk[k] = byte(k)
	}
	var enospc string
	willFailBefore := false
	for step := 0; enospc == ""; step, i = step+1, i+1 {
		require.Less(t, step, 100, "the filesystem fills")
		if _, err := fill.Write(chunk); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			enospc = "the filling writer"
		}
		if answer := job.tick(t, i); answer != "ok" && enospc == "" {
			require.Equal(t, "ENOSPC", answer)
			enospc = "the job"
		}
		if enospc != "" {
			break
		}
		var st unix.Statfs_t
		require.NoError(t, unix.Statfs(mnt, &st))
		free := int64(st.Bavail) * st.Bsize
		md := run.scrape(t)
		state := run.state(md)
		require.NotEmpty(t, state, "step %d: the checkpoint state is there while the disk fills", step)
		head, _, okHead := checkpointPoint(md, "headroom", run.dom, 0, "disk_health.filesystem.domain", "")
		p90, _, okSize := checkpointPoint(md, "size", run.dom, 0, "disk_health.filesystem.checkpoint.percentile", "p90")
		if state != "learning" && step >= 4 {
			require.True(t, okHead && okSize)
			assert.LessOrEqual(t, head, free-p90, "step %d: the headroom at the next save is at most what is free (%d) minus the save", step, free)
		}
		t.Logf("fill step %2d: free %5.1f MiB, state %s, headroom %6.1f MiB", step, float64(free)/(1<<20), state, float64(head)/(1<<20))
		for _, name := range run.events() {
			willFailBefore = willFailBefore || name == EventCheckpointWillFail
		}
	}
	t.Logf("first ENOSPC by %s; events before it: %v", enospc, run.events())
	assert.True(t, willFailBefore, "the will_fail event came before the first ENOSPC")
	require.NoError(t, fill.Close())
	require.NoError(t, os.Remove(fill.Name()))
	require.Equal(t, "ok", w.do(t, "closeall"))
}

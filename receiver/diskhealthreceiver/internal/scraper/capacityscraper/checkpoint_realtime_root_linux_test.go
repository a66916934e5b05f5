package capacityscraper

import (
	"fmt"
	"math"
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
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
)

// realTimeScrape is the scrape interval of the real-time checkpoint test: short, so that the test
// takes about a minute, on the wall clock. The source's clock is each scrape's tick, not the moment a
// loaded machine got round to it: at 300 ms a scrape 120 ms late is what 12 s would be at the default
// 30 s, and no collector's ticker is that late.
const realTimeScrape = 300 * time.Millisecond

// realTimeRun is the filesystem source scraping one loop-mounted filesystem on the wall clock, as a
// collector does, with the checkpoint storage of ext (nil: none).
type realTimeRun struct {
	s    *capScraper
	sink *consumertest.LogsSink
	dom  string
	next time.Time
}

var ckptStorageID = component.MustNewID("file_storage")

func startRealTime(t *testing.T, mnt string, ext extension.Extension) *realTimeRun {
	t.Helper()
	cfg := testConfig()
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
			names = append(names, lr.EventName())
		})
	}
	return names
}

// saveJob is a training job in the writer child: a save of size bytes every `every` scrapes. With shards
// above 1 a save is that many files, each fsync'd, written over span scrapes, as a sharded trainer saves;
// else one file written at once. With keep above 0 the job keeps that many saves, the oldest deleted
// after the new save is written (after) or before it starts; else it keeps them all. Its log grows by
// log bytes every scrape.
type saveJob struct {
	w            *writerChild
	size, every  int
	shards, span int
	keep         int
	after        bool
	log          int
	saves        int
	kept         []string // the saves on the disk, oldest first
}

// tick does what the job does at scrape i; the answer is the writer's first that is not "ok" ("ENOSPC").
func (j *saveJob) tick(t *testing.T, i int) string {
	if j.log > 0 {
		if answer := j.w.do(t, "w train.log %d", j.log); answer != "ok" {
			return answer
		}
	}
	span := max(j.span, 1)
	phase := i % j.every
	if phase >= span {
		return "ok"
	}
	if phase == 0 {
		if j.keep > 0 && !j.after && len(j.kept) == j.keep {
			if answer := j.remove(t); answer != "ok" {
				return answer
			}
		}
		j.saves++
	}
	name := fmt.Sprintf("ckpt-%d", j.saves-1)
	if j.shards <= 1 && phase == 0 {
		if answer := j.w.do(t, "w %s %d", name, j.size); answer != "ok" {
			return answer
		}
		if answer := j.w.do(t, "close %s", name); answer != "ok" {
			return answer
		}
	}
	// Shard k is written at the scrape k·span/shards of the save's span: every scrape of it has one.
	for k := range j.shards {
		if j.shards > 1 && k*span/j.shards == phase {
			shard := fmt.Sprintf("%s.%d", name, k)
			if answer := j.w.do(t, "ws %s %d", shard, j.size/j.shards); answer != "ok" {
				return answer
			}
			if answer := j.w.do(t, "close %s", shard); answer != "ok" {
				return answer
			}
		}
	}
	if phase < span-1 {
		return "ok"
	}
	j.kept = append(j.kept, name)
	if j.keep > 0 && j.after && len(j.kept) > j.keep {
		return j.remove(t)
	}
	return "ok"
}

// remove deletes the job's oldest save, every shard of it.
func (j *saveJob) remove(t *testing.T) string {
	oldest := j.kept[0]
	j.kept = j.kept[1:]
	if j.shards <= 1 {
		return j.w.do(t, "rm %s", oldest)
	}
	for k := range j.shards {
		if answer := j.w.do(t, "rm %s.%d", oldest, k); answer != "ok" {
			return answer
		}
	}
	return "ok"
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
	run.fillUntilENOSPC(t, mnt, job, i, 6<<20)
	require.Equal(t, "ok", w.do(t, "closeall"))
}

// fillUntilENOSPC is another writer filling the filesystem at mnt by chunk bytes a scrape from scrape i on,
// while the job saves on, until the first write refused: the will_fail event must come before it, the
// headroom at the next save is never above what is free minus the save, and every scrape has a checkpoint
// state (no series vanishes).
func (r *realTimeRun) fillUntilENOSPC(t *testing.T, mnt string, job *saveJob, i, chunk int) {
	t.Helper()
	fill, err := os.Create(filepath.Join(mnt, "fill"))
	require.NoError(t, err)
	defer fill.Close()
	data := make([]byte, chunk)
	for k := range data {
		data[k] = byte(k)
	}
	var enospc string
	willFailBefore := false
	for step := 0; enospc == ""; step, i = step+1, i+1 {
		require.Less(t, step, 100, "the filesystem fills")
		if _, err := fill.Write(data); err != nil {
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
		md := r.scrape(t)
		state := r.state(md)
		require.NotEmpty(t, state, "step %d: the checkpoint state is there while the disk fills", step)
		head, _, okHead := checkpointPoint(md, "headroom", r.dom, 0, "disk_health.filesystem.domain", "")
		p90, _, okSize := checkpointPoint(md, "size", r.dom, 0, "disk_health.filesystem.checkpoint.percentile", "p90")
		if state != "learning" && step >= 4 {
			require.True(t, okHead && okSize)
			assert.LessOrEqual(t, head, free-p90, "step %d: the headroom at the next save is at most what is free (%d) minus the save", step, free)
		}
		t.Logf("fill step %2d: free %5.1f MiB, state %s, headroom %6.1f MiB", step, float64(free)/(1<<20), state, float64(head)/(1<<20))
		for _, name := range r.events() {
			willFailBefore = willFailBefore || name == EventCheckpointWillFail
		}
	}
	t.Logf("first ENOSPC by %s; events before it: %v", enospc, r.events())
	assert.True(t, willFailBefore, "the will_fail event came before the first ENOSPC")
	require.NoError(t, fill.Close())
	require.NoError(t, os.Remove(fill.Name()))
}

// TestFSScraperCheckpointRealTimeShapes (issue 43, "done when" 1): the shapes of the table on a
// loop-mounted ext4 of 256 MiB scraped every 300 ms of wall-clock time, the job the writer child; the
// issue's 1 s scrapes are scrapes here, its 1 GiB is scaled to 256 MiB (sizes and rates by a quarter):
//   - 4 fsync'd shards, 9 % of the filesystem every 11 scrapes, one a scrape, keep 3 deleted after the new save,
//     a log of 0.33 MiB a scrape; then another writer fills the filesystem at 10 MiB a scrape;
//   - 4 fsync'd shards, 14 % every 17 scrapes, one a scrape, keep 2 deleted before the new save, a log of 0.45 MiB
//     a scrape.
//
// For each: the learned save size (p50) within ±10 % of the save's from its first learned value on,
// learned before the 4th save starts, the retention right after 8 saves, and for the first the will_fail
// event before the first ENOSPC. Then noise: a log, unpack-and-delete bursts of 37–62 MiB at irregular
// gaps, one 117 MiB copy: no event and no learned size.
func TestFSScraperCheckpointRealTimeShapes(t *testing.T) {
	const total = 256 << 20
	mnt, _ := loopFS(t, t.TempDir(), total, "ext4", "e2fsprogs", []string{"/usr/sbin/mke2fs", "-q", "-t", "ext4", "-m", "0"}, "")
	jobDir := filepath.Join(mnt, "job")
	require.NoError(t, os.Mkdir(jobDir, 0o755))
	w := startWriter(t, jobDir)
	clean := func() {
		require.Equal(t, "ok", w.do(t, "closeall"))
		emptyDir(t, jobDir)
		require.NoError(t, syncFS(jobDir))
	}

	for _, shape := range []struct {
		name     string
		job      saveJob
		rotation string
		fill     bool
	}{
		{"keep 3 after", saveJob{size: total * 9 / 100, every: 11, shards: 4, span: 4, keep: 3, after: true, log: total * 13 / 10240}, "after_save", true},
		{"keep 2 before", saveJob{size: total * 14 / 100, every: 17, shards: 4, span: 5, keep: 2, log: total * 18 / 10240}, "before_save", false},
	} {
		t.Run(shape.name, func(t *testing.T) {
			defer clean()
			run := startRealTime(t, mnt, nil)
			defer func() { require.NoError(t, run.s.shutdown(t.Context())) }()
			job := shape.job
			job.w = w
			// The collector runs before the job starts: the first save is a rise from a known level.
			for range 5 {
				run.scrape(t)
			}
			want := float64(job.size / job.shards * job.shards)
			learnedAt := 0 // the save started when the size was first learned
			// worst is the learned p50 farthest from the save's size, from the first learned one on.
			var first, worst float64
			worstAt, vanished := -1, -1
			var copies int64
			var rotation string
			i := 0
			for ; job.saves < 8 || i%job.every != 0; i++ {
				require.Equal(t, "ok", job.tick(t, i))
				md := run.scrape(t)
				p50, _, ok := checkpointPoint(md, "size", run.dom, 0, "disk_health.filesystem.checkpoint.percentile", "p50")
				switch {
				case ok && learnedAt == 0:
					learnedAt, first, worst, worstAt = job.saves, float64(p50), float64(p50), i
				case ok && math.Abs(float64(p50)-want) > math.Abs(worst-want):
					worst, worstAt = float64(p50), i
				case !ok && learnedAt > 0 && vanished < 0:
					vanished = i
				}
				if n, rot, ok := checkpointPoint(md, "copies", run.dom, 0, "disk_health.filesystem.checkpoint.rotation", ""); ok {
					copies, rotation = n, rot
				}
			}
			t.Logf("%s: save %.1f MiB, learned at save %d as %.1f MiB (%+.1f %%), worst %.1f MiB (%+.1f %%) at scrape %d, copies %d %s, events %v",
				shape.name, want/(1<<20), learnedAt, first/(1<<20), 100*(first/want-1), worst/(1<<20), 100*(worst/want-1), worstAt, copies, rotation, run.events())
			assert.InDelta(t, want, worst, 0.1*want, "the learned size p50 within ±10 %% of the save's from its first learned value on (worst at scrape %d)", worstAt)
			assert.Negative(t, vanished, "the size series, once learned, is there at every scrape (gone at scrape %d)", vanished)
			assert.Positive(t, learnedAt, "the save is learned")
			assert.LessOrEqual(t, learnedAt, 3, "learned within 3 saves (before the 4th starts)")
			assert.Equal(t, int64(job.keep), copies, "the retention learned")
			assert.Equal(t, shape.rotation, rotation, "the rotation learned")
			if shape.fill {
				// The other writer, 40 MiB/s into the 448 MiB left free, scaled: 10 MiB a scrape
				// into about 112 MiB, full in 11 scrapes at most (3.3 s; sooner with the job's saves on top),
				// no longer than one cadence of this job (11 scrapes). A warning a whole cadence ahead
				// cannot be had; will_fail before the first ENOSPC is what is asserted.
				run.fillUntilENOSPC(t, mnt, &job, i, 10<<20)
			}
		})
	}

	t.Run("noise", func(t *testing.T) {
		defer clean()
		run := startRealTime(t, mnt, nil)
		defer func() { require.NoError(t, run.s.shutdown(t.Context())) }()
		// The noise as the learner's replay (TestLearnerNoiseSteadyByChance) feeds it.
		noise := dhtest.CheckpointNoise(total)
		learned, firstAt, firstSize := 0, -1, int64(0)
		for i, n := range noise {
			require.Equal(t, "ok", w.do(t, "w train.log %d", n.Log))
			for _, k := range n.Write {
				require.Equal(t, "ok", w.do(t, "w burst-%d.%d %d", n.Burst, k, n.FileSize))
				require.Equal(t, "ok", w.do(t, "close burst-%d.%d", n.Burst, k))
			}
			if n.Remove {
				for k := range dhtest.NoiseFiles {
					require.Equal(t, "ok", w.do(t, "rm burst-%d.%d", n.Burst, k))
				}
			}
			if n.Copy > 0 {
				require.Equal(t, "ok", w.do(t, "w copy %d", n.Copy))
			}
			md := run.scrape(t)
			if p50, _, ok := checkpointPoint(md, "size", run.dom, 0, "disk_health.filesystem.checkpoint.percentile", "p50"); ok {
				if learned == 0 {
					firstAt, firstSize = i, p50
				}
				learned++
			}
		}
		t.Logf("noise: %d bursts, a size learned at %d scrapes (first at scrape %d: %.1f MiB), events %v", noise[len(noise)-1].Burst, learned, firstAt, float64(firstSize)/(1<<20), run.events())
		assert.Zero(t, learned, "no save learned from noise")
		assert.Empty(t, run.events(), "no event on noise")
	})
}

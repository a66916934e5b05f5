package checkpoint

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
)

// The shapes of issue 43's table, as a training job writes them on a 1 GiB filesystem scraped every
// second: a save written as several fsync'd shards (steps with short lulls between them), a log growing
// beside it, keep-N rotation before or after the save, and another writer that fills the disk.
const (
	shapeLimit  = 1 << 30
	shapeScrape = time.Second
	shapeStep   = 50 * time.Millisecond
)

// shapeJob is one such job. Sizes are shares of the filesystem, times seconds, rates bytes per second.
type shapeJob struct {
	size, cadence float64
	shards        int
	// The shards together are written in write seconds, each then fsync'd: a lull of about lull seconds
	// (±40 %) with no usage change, on a loaded loop device often a whole scrape.
	write, lull float64
	keep        int
	rotation    Rotation
	log         float64
	// jobLog: the log is the job's own, started with its first save, on a filesystem whose usage did not
	// move at all before (an idle ext4 is exact to the block: every step zero), as on the real loop ext4
	// of TestFSScraperCheckpointRealTimeShapes; else another program's, growing from the first scrape.
	jobLog bool
	// used0 is the usage before the job starts (the dataset, the logs so far).
	used0 float64
	// fillAfter: another writer starts after that many saves, at fillRate, until ENOSPC (0: none).
	fillAfter int
	fillRate  float64
	horizon   time.Duration
	// restartBefore: the learner is stored and restored (a collector restart) at the last scrape before
	// this save starts (0: never).
	restartBefore int
	// chunk: the filesystem allocates a growing file's blocks a chunk at a time past its end (XFS's
	// speculative preallocation, fixed by allocsize=chunk as on the project quota's XFS of
	// TestFSScraperCheckpointSeededProjectQuota): the log's usage steps a chunk every few scrapes, and a
	// save runs up to a chunk past what it wrote, trimmed trim seconds after it is closed (0: exact).
	chunk, trim float64
	// warmup is how long the collector runs before the job's first save (0: 5–7 s).
	warmup float64
}

// shapeRun is what one seeded run of a shapeJob showed.
type shapeRun struct {
	failAt     time.Duration // first ENOSPC (0: none in the horizon)
	willFailAt time.Duration // when the will_fail state began that was still on at ENOSPC (0: none)
	alerts     int
	// blindAlerts are the alerts given before any copy was seen removed (the job taken to keep every
	// copy): an episode that ends once the first rotation shows the retention.
	blindAlerts int
	// fillingAlert: an alert came while no pattern was learned (the disk filling first).
	fillingAlert bool
	lost         int   // patterns lost (relearning events)
	restoreErr   error // from the restart's restore
	learnedAfter int   // saves completed when the state first left learning (0: never)
	firstSize    float64
	sizes        []float64 // every SizeP50 from the first learned one on
	truth        float64   // the mean true save size
	last         Prediction
}

// run plays the job with seed through a fresh Learner until ENOSPC or the horizon.
func (j shapeJob) run(seed uint64) shapeRun {
	rng := rand.New(rand.NewPCG(seed, 43))
	l := NewLearner(Config{})
	var out shapeRun
	used := j.used0 * shapeLimit
	var copies, trueSizes []float64
	// logBytes is what the log wrote, trimAt when the last save's preallocation is trimmed (chunk).
	var logBytes, trimAt float64
	// The save in progress: its bytes still to write, its shard's bytes left, when its next shard starts.
	var left, shardLeft, shardBytes, nextShard float64
	saving, completed := false, 0
	tick, readAt := time.Duration(0), -1
	next := 5 + 2*rng.Float64() // the collector runs before the job starts
	if j.warmup > 0 {
		next = j.warmup
	}
	start := next
	write := func(n float64) bool {
		if used+n > shapeLimit {
			return false
		}
		used += n
		return true
	}
	remove := func() {
		used -= copies[0]
		copies = copies[1:]
	}
	h := shapeStep.Seconds()
	for i := 0; time.Duration(i)*shapeStep < j.horizon; i++ {
		now := float64(i) * h
		at := time.Duration(i) * shapeStep
		ok := true
		if !j.jobLog || now >= start {
			n := j.log * h * (0.5 + rng.Float64())
			ok = write(n)
			logBytes += n
		}
		if j.fillAfter > 0 && completed >= j.fillAfter {
			ok = write(j.fillRate*h) && ok
		}
		if !saving && now >= next {
			if j.rotation == RotationBefore && len(copies) == j.keep {
				remove()
			}
			size := j.size * shapeLimit * (0.97 + 0.06*rng.Float64())
			trueSizes = append(trueSizes, size)
			copies = append(copies, 0)
			saving, left, shardLeft, nextShard = true, size, 0, now
			shardBytes = size / float64(j.shards)
			next += j.cadence * (0.98 + 0.04*rng.Float64())
		}
		if saving {
			if shardLeft <= 0 && now >= nextShard {
				shardLeft = min(shardBytes, left)
			}
			if shardLeft > 0 {
				n := min(shardLeft, j.size*shapeLimit/j.write*h)
				ok = write(n) && ok
				copies[len(copies)-1] += n
				left -= n
				if shardLeft -= n; shardLeft <= 1 {
					shardLeft, nextShard = 0, now+h+j.lull*(0.6+0.8*rng.Float64())
				}
			}
			if left <= 1 {
				saving, trimAt = false, now+j.trim
				completed++
				if j.rotation == RotationAfter && len(copies) > j.keep {
					remove()
				}
			}
		}
		if !ok {
			out.failAt = at
			if out.last.State != WillFail {
				out.willFailAt = 0
			}
			break
		}
		if at%shapeScrape == 0 {
			// The scrape's clock is its tick; its statfs runs up to 150 ms after it.
			tick, readAt = at, i+rng.IntN(4)
		}
		if i != readAt {
			continue
		}
		sample := Sample{Time: simT0.Add(tick), Used: uint64(used), Free: uint64(shapeLimit - used)}
		if j.chunk > 0 {
			// What is allocated past the files' ends: the log's chunk, and the last save's until trimmed.
			past := func(n float64) float64 { return math.Ceil(n/j.chunk)*j.chunk - n }
			extra := past(logBytes)
			if len(copies) > 0 && (saving || now < trimAt) {
				extra += past(copies[len(copies)-1])
			}
			sample.Used, sample.Free = uint64(used+extra), uint64(max(0, shapeLimit-used-extra))
		}
		if j.restartBefore > 0 && completed == j.restartBefore-1 && !saving && now+shapeScrape.Seconds() > next {
			data := l.MarshalRecord(testOwner)
			l = NewLearner(Config{})
			_, out.restoreErr = l.Restore(data, testOwner, sample)
			j.restartBefore = 0
		}
		p := l.Observe(sample)
		if p.Lost {
			out.lost++
		}
		switch {
		case p.State == WillFail && out.last.State != WillFail:
			out.willFailAt = at
		case p.State != WillFail:
			out.willFailAt = 0
		}
		if p.Alert {
			out.alerts++
			if p.Rotation == RotationUnknown {
				out.blindAlerts++
			}
			out.fillingAlert = out.fillingAlert || p.Filling
		}
		if p.SizeP50 > 0 && p.State != Learning && !p.Filling {
			if out.learnedAfter == 0 {
				out.learnedAfter, out.firstSize = completed, float64(p.SizeP50)
			}
			out.sizes = append(out.sizes, float64(p.SizeP50))
		}
		out.last = p
	}
	for _, s := range trueSizes {
		out.truth += s / float64(len(trueSizes))
	}
	return out
}

// lead is how long before ENOSPC the will_fail state began that was still on then (0: none, or no ENOSPC).
func (r shapeRun) lead() time.Duration {
	if r.willFailAt == 0 {
		return 0
	}
	return r.failAt - r.willFailAt
}

// worstErr is the largest relative error of the sizes learned from the first on.
func (r shapeRun) worstErr() float64 {
	worst := 0.0
	for _, s := range r.sizes {
		worst = max(worst, math.Abs(s-r.truth)/r.truth)
	}
	return worst
}

// fillsIn sets used0 so that the log fills the filesystem after about cycles cadences with the copies at
// their peak (the job's own usage does not grow).
func (j shapeJob) fillsIn(cycles float64) shapeJob {
	peak := float64(j.keep) * j.size
	if j.rotation == RotationAfter {
		peak += j.size
	}
	j.used0 = 1 - peak - j.log*j.cadence*cycles/shapeLimit
	j.horizon = time.Duration((cycles + float64(j.keep) + 8) * j.cadence * float64(time.Second))
	return j
}

// shapeCases are the table's shapes and their neighbours: 1–8 shards, a log at 0, 1 and 2 MiB/s,
// keep 2 and 3, rotation before and after the save.
func shapeCases() map[string]shapeJob {
	cases := map[string]shapeJob{
		// The table's first two rows: 4 shards over about 3 and 5 s.
		"table-4shards-keep3-after-log1.3":  {size: 0.085, cadence: 11, shards: 4, write: 2, lull: 0.9, keep: 3, rotation: RotationAfter, log: 1.3 * mib},
		"table-4shards-keep2-before-log1.8": {size: 0.13, cadence: 17, shards: 4, write: 2, lull: 1.4, keep: 2, rotation: RotationBefore, log: 1.8 * mib},
	}
	// XFS on the project quota of TestFSScraperCheckpointSeededProjectQuota (its seed 3: saves of 3.4 MiB
	// every 19 s, 76 scrapes of 250 ms, written over 23 of them, keep 1, a log XFS grows a 64 KiB chunk,
	// under 2 % of a save, every three or four scrapes), scaled to this filesystem's 1 s scrapes: the
	// log's usage steps a chunk every three or four scrapes, and a save runs up to a chunk past what it
	// wrote until a second after it is closed. The background learned from those steps was three
	// quarters of the log's growth and each save was measured larger by the rest over its span, carried
	// from save to save by the sizes of the copies removed (+10 % on that XFS; here up to +18 %). And the
	// trend, started anew when the pattern is learned, was that scrape's chunk alone: will_fail then.
	for _, rot := range []Rotation{RotationAfter, RotationBefore} {
		cases["xfs-chunks-keep1-"+rot.String()] = shapeJob{size: 0.02, cadence: 76, shards: 1, write: 23, keep: 1, rotation: rot,
			log: 0.1 * mib, chunk: 384 << 10, trim: 1, warmup: 40}
	}
	for _, name := range []string{"table-4shards-keep3-after-log1.3", "table-4shards-keep2-before-log1.8"} {
		j := cases[name]
		j.jobLog = true
		cases[name+"-joblog"] = j
	}
	for _, shards := range []int{1, 2, 4, 8} {
		for _, log := range []float64{0, 1, 2} {
			for _, rot := range []Rotation{RotationBefore, RotationAfter} {
				keep := 2 + shards%2 + int(log)%2
				name := fmt.Sprintf("%dshards-keep%d-%s-log%.0f", shards, keep, rot, log)
				cases[name] = shapeJob{size: 0.06 + 0.01*float64(shards), cadence: 10 + 1.5*float64(shards), shards: shards,
					write: 2, lull: 0.8, keep: keep, rotation: rot, log: log * mib}
			}
		}
	}
	for name, j := range cases {
		if j.log > 0 {
			cases[name] = j.fillsIn(8)
		} else {
			// No log: nothing fills the disk; the job runs 12 saves and nothing may be predicted to fail.
			j.used0, j.horizon = 0.3, time.Duration(12*j.cadence*float64(time.Second))
			cases[name] = j
		}
	}
	return cases
}

// TestLearnerShapes (issue 43, "done when" 1): every shape, three seeds each: the pattern is learned
// within 3 saves, the size learned is within ±10 % of the true save size from the first value learned
// on, the retention is right, and the will_fail state comes at least one cadence before the first
// ENOSPC (and none where nothing fills).
func TestLearnerShapes(t *testing.T) {
	cases := shapeCases()
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range cases {
			if !yield(n) {
				return
			}
		}
	})
	var worst float64
	for _, name := range names {
		j := cases[name]
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(3) {
				r := j.run(seed)
				cadence := time.Duration(j.cadence * float64(time.Second))
				t.Logf("seed %d: learned after %d saves, size first %.1f MiB (true %.1f, %+.1f%%), worst %.1f%%, keep %d %s, will_fail %.1f cadences before ENOSPC at %v, %d events",
					seed, r.learnedAfter, r.firstSize/mib, r.truth/mib, 100*(r.firstSize-r.truth)/r.truth, 100*r.worstErr(),
					r.last.Keep, r.last.Rotation, r.lead().Seconds()/j.cadence, r.failAt, r.alerts)
				worst = max(worst, r.worstErr())
				if !assert.Positive(t, r.learnedAfter, "seed %d: learned", seed) {
					continue
				}
				assert.LessOrEqual(t, r.learnedAfter, 3, "seed %d: learned within 3 saves", seed)
				assert.LessOrEqual(t, r.worstErr(), 0.10, "seed %d: size within ±10 %% from the first learned", seed)
				assert.Equal(t, j.keep, r.last.Keep, "seed %d: keep", seed)
				assert.Equal(t, j.rotation, r.last.Rotation, "seed %d: rotation", seed)
				if j.log == 0 {
					assert.Zero(t, r.failAt, "seed %d", seed)
					assert.Zero(t, r.alerts, "seed %d: nothing fills, nothing alerts", seed)
					continue
				}
				if assert.Positive(t, r.failAt, "seed %d: the log fills the disk", seed) && assert.Positive(t, r.willFailAt, "seed %d: will_fail at ENOSPC", seed) {
					assert.GreaterOrEqual(t, r.failAt-r.willFailAt, cadence, "seed %d: will_fail a cadence ahead", seed)
				}
				// One event per episode: the one before ENOSPC, and at most one before it while the job was
				// taken to keep every copy, its episode ended by the first rotation seen.
				assert.Positive(t, r.alerts, "seed %d: an event", seed)
				assert.LessOrEqual(t, r.alerts-r.blindAlerts, 1, "seed %d: one event once the retention is known", seed)
				assert.LessOrEqual(t, r.blindAlerts, 1, "seed %d", seed)
			}
		})
	}
	t.Logf("worst size error over every shape and seed: %.1f%%", 100*worst)
}

// fillShape is the table's third row: saves of 7 % every 10 s, 4 shards over about 2 s, keep 2 after the
// save, a log of 0.2 MiB/s; after save fillAfter another writer fills the 448 MiB left free after the
// seventh at 40 MiB/s.
func fillShape(fillAfter int) shapeJob {
	return shapeJob{size: 0.07, cadence: 10, shards: 4, write: 1, lull: 0.35, keep: 2, rotation: RotationAfter,
		log: 0.2 * mib, used0: 0.4, fillAfter: fillAfter, fillRate: 40 * mib, horizon: 150 * time.Second}
}

// TestLearnerAnotherWriterFills (issue 43, the table's third row): another writer filling the disk after
// 7 saves finds the pattern learned (within 3 saves, its size within ±10 %, keep 2 after the save) and
// the state will_fail, its one event sent before ENOSPC (about 4 s, under a cadence: the other writer
// fills the 448 MiB in 11 s). d38df80 passes this simulation too: on the real filesystem it never
// left learning, as it does not here with lulls of up to 2 s (TestLearnerShapes' second table row).
func TestLearnerAnotherWriterFills(t *testing.T) {
	j := fillShape(7)
	for seed := range uint64(3) {
		r := j.run(seed)
		t.Logf("seed %d: learned after %d saves, size first %.1f MiB (true %.1f), worst %.1f%%, keep %d %s; will_fail %.1f s before ENOSPC at %v, %d events",
			seed, r.learnedAfter, r.firstSize/mib, r.truth/mib, 100*r.worstErr(), r.last.Keep, r.last.Rotation,
			r.lead().Seconds(), r.failAt, r.alerts)
		assert.Positive(t, r.learnedAfter, "seed %d: learned", seed)
		assert.LessOrEqual(t, r.learnedAfter, 3, "seed %d: learned within 3 saves", seed)
		assert.LessOrEqual(t, r.worstErr(), 0.10, "seed %d: size within ±10 %%", seed)
		assert.Equal(t, 2, r.last.Keep, "seed %d", seed)
		assert.Equal(t, RotationAfter, r.last.Rotation, "seed %d", seed)
		if assert.Positive(t, r.failAt, "seed %d: the disk fills", seed) {
			assert.Positive(t, r.willFailAt, "seed %d: will_fail before ENOSPC", seed)
		}
		assert.Equal(t, 1, r.alerts, "seed %d: one event", seed)
		assert.False(t, r.fillingAlert, "seed %d: with the pattern learned", seed)
	}
}

// TestLearnerFillWhileLearning (issue 43 item 3): another writer filling the disk after the first save,
// before any pattern is learned, still turns the state will_fail and sends its event before ENOSPC, the
// prediction saying it has no pattern (Filling). On d38df80 the state stayed learning to ENOSPC.
func TestLearnerFillWhileLearning(t *testing.T) {
	for _, after := range []int{1, 2} {
		j := fillShape(after)
		for seed := range uint64(3) {
			r := j.run(seed)
			t.Logf("fill after save %d, seed %d: will_fail %.1f s before ENOSPC at %v, %d events, state at the end %s (filling %v)",
				after, seed, r.lead().Seconds(), r.failAt, r.alerts, r.last.State, r.last.Filling)
			if !assert.Positive(t, r.failAt, "seed %d: the disk fills", seed) {
				continue
			}
			assert.Positive(t, r.willFailAt, "after %d, seed %d: will_fail before ENOSPC", after, seed)
			assert.Equal(t, 1, r.alerts, "after %d, seed %d: one event", after, seed)
			assert.True(t, r.fillingAlert, "after %d, seed %d: sent with no pattern learned", after, seed)
			assert.True(t, r.last.Filling, "after %d, seed %d", after, seed)
		}
	}
}

// TestLearnerNoiseShape (issue 43, the table's fourth row): a 1 GiB filesystem with no checkpointing job,
// a log, unpack-and-delete bursts of 150–250 MiB at irregular times and one copy of 467 MiB, 390 s:
// learning throughout, no event. (Three bursts that happen to come at a steady cadence, sizes within
// ±50 %, are a pattern like a job's, and the copy past them then predicts will_fail, on d38df80 as
// here: the gaps here are short and long by turns.)
func TestLearnerNoiseShape(t *testing.T) {
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 4343))
		l := NewLearner(Config{})
		used := 250.0 * mib
		var alerts, learned, gaps int
		var staged, left, rate, deleteAt, copyLeft float64
		next := 5 + 10*rng.Float64()
		h := shapeStep.Seconds()
		for i := 0; time.Duration(i)*shapeStep < 390*time.Second; i++ {
			now := float64(i) * h
			used += 0.3 * mib * h * 2 * rng.Float64()
			switch {
			case now >= 200 && now < 201:
				copyLeft = 467 * mib
			case staged == 0 && now >= next && now < 180:
				staged = (150 + 100*rng.Float64()) * mib
				left, rate = staged, (60+60*rng.Float64())*mib
			case left > 0:
				n := min(left, rate*h)
				used, left = used+n, left-n
				if left <= 0 {
					deleteAt = now + 5 + 15*rng.Float64()
				}
			case staged > 0 && now >= deleteAt:
				// Gaps short and long by turns: never a steady cadence.
				gaps++
				used, staged, next = used-staged, 0, now+5+10*rng.Float64()+float64(gaps%2)*(30+20*rng.Float64())
			}
			if copyLeft > 0 {
				n := min(copyLeft, 40*mib*h)
				used, copyLeft = used+n, copyLeft-n
			}
			require.Less(t, used, float64(shapeLimit), "seed %d: the noise itself fills the disk", seed)
			if time.Duration(i)*shapeStep%shapeScrape != 0 {
				continue
			}
			p := l.Observe(Sample{Time: simT0.Add(time.Duration(i) * shapeStep), Used: uint64(used), Free: uint64(shapeLimit - used)})
			if p.Alert {
				alerts++
			}
			if p.State != Learning {
				learned++
			}
		}
		t.Logf("seed %d: %d events, %d scrapes with a state other than learning, %.0f MiB used at the end", seed, alerts, learned, used/mib)
		assert.Zero(t, alerts, "seed %d", seed)
		assert.Zero(t, learned, "seed %d: learning throughout", seed)
	}
}

// TestLearnerRestartBeforeASave: a collector restart (the learner stored and restored) at the scrape
// before a save written in 4 shards keeps the pattern: the save after it is one save (a restored learner
// allows a learned save its lulls from its first burst on), the size stays within ±10 % and no pattern is
// lost.
func TestLearnerRestartBeforeASave(t *testing.T) {
	for _, before := range []int{5, 6, 7} {
		j := shapeCases()["table-4shards-keep3-after-log1.3"]
		j.restartBefore = before
		for seed := range uint64(3) {
			r := j.run(seed)
			require.NoError(t, r.restoreErr)
			assert.Zero(t, r.lost, "restart before save %d, seed %d: no pattern lost", before, seed)
			assert.LessOrEqual(t, r.worstErr(), 0.10, "restart before save %d, seed %d", before, seed)
			assert.Equal(t, 3, r.last.Keep, "restart before save %d, seed %d", before, seed)
		}
	}
}

// TestLearnerNoiseSteadyByChance replays TestFSScraperCheckpointRealTimeShapes' noise write for write (its
// seed, a 256 MiB ext4 scraped every 300 ms, the log's usage in whole 4 KiB blocks): a log, bursts unpacked
// over 3 scrapes into 8 files and deleted 4 scrapes after, at gaps of 15–40 scrapes that this seed draws
// 37 and 38 scrapes apart (a steady cadence), and a 117 MiB copy: no pattern and no event. With sizes
// allowed to spread 1.5× the bursts (51, 46 and 62 MiB) were learned as a staging job's saves from scrape
// 89 on, and the copy then sent will_fail and relearning, on the loop ext4 as here.
func TestLearnerNoiseSteadyByChance(t *testing.T) {
	const total, block = 256 << 20, 4096
	l := NewLearner(Config{})
	var logBytes, files uint64
	learned, events := 0, 0
	for i, n := range dhtest.CheckpointNoise(total) {
		logBytes += uint64(n.Log)
		files += uint64(len(n.Write)*n.FileSize + n.Copy)
		if n.Remove {
			files -= uint64(dhtest.NoiseFiles * n.FileSize)
		}
		used := files + (logBytes+block-1)/block*block
		p := l.Observe(Sample{Time: simT0.Add(time.Duration(i) * 300 * time.Millisecond), Used: used, Free: total - used})
		if p.SizeP50 > 0 && p.State != Learning {
			learned++
		}
		if p.Alert || p.Lost {
			events++
		}
	}
	assert.Zero(t, learned, "scrapes with a pattern learned from noise")
	assert.Zero(t, events, "events on noise")
}

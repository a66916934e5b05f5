package capacityscraper

import (
	"testing"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage/fsusagetest"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
)

const gib = 1 << 30

// keepAfterLimit is the size of the keep-after job's filesystem.
const keepAfterLimit = 2 << 40

// keepAfterLevel is the usage at time at of a 2 TiB filesystem holding 900 GiB of other data and a job
// saving 300 GiB at 1 GiB/s every 2 h with keep-3, rotation after the save (the case): three
// copies fit, the fourth the fourth save makes before rotation does not.
func keepAfterLevel(at time.Duration) uint64 {
	used := uint64(900 * gib)
	var copies []uint64
	for k := 1; time.Duration(k)*2*time.Hour <= at; k++ {
		written := min(300*gib, uint64((at-time.Duration(k)*2*time.Hour).Seconds()*gib))
		copies = append(copies, written)
		if written == 300*gib && len(copies) > 3 {
			copies = copies[1:]
		}
	}
	for _, c := range copies {
		used += c
	}
	return used
}

// keepAfterAt makes /data's filesystem (the bindsRoot mounts of 1 000 000 blocks) a 2 TiB one holding
// the keep-after job's usage at at.
func keepAfterAt(f *fsusagetest.Statfs, at time.Duration) { usedOf2TiB(f, keepAfterLevel(at)) }

// usedOf2TiB makes /data's filesystem a 2 TiB one with used bytes in use.
func usedOf2TiB(f *fsusagetest.Statfs, used uint64) {
	free := (keepAfterLimit - min(used, keepAfterLimit)) / 4096
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for path, st := range f.Answers {
		if st.Blocks == 1_000_000 || st.Blocks == keepAfterLimit/4096 {
			st.Blocks, st.Bfree, st.Bavail = keepAfterLimit/4096, free, free
			f.Answers[path] = st
		}
	}
}

// TestFSScraperCheckpointWillFail: the job's saves land on /data, shown by seven mounts. The learner
// runs once for the domain; after the third save it reports the fourth will not fit, with one
// will_fail event naming the domain, a mount, the size and when; the checkpoint series exist once.
func TestFSScraperCheckpointWillFail(t *testing.T) {
	clock := t0
	sink := new(consumertest.LogsSink)
	s, f := bindsRootWith(t, "keep", &clock, sink, nil)
	var last int
	for at := time.Duration(0); at < 7*time.Hour; at += time.Minute {
		clock = t0.Add(at)
		keepAfterAt(f, at)
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		if at == 7*time.Hour-time.Minute {
			dhtest.AssertGolden(t, "capacity-checkpoint", md, pmetrictest.IgnoreStartTimestamp())
			states, _ := domainPoints(md, "disk_health.filesystem.checkpoint.state")
			assert.Equal(t, map[string]int{"259:5": 3}, states, "one state set, for the domain")
			headroom, ok := domainValue(md, "disk_health.filesystem.checkpoint.headroom", "259:5")
			require.True(t, ok)
			assert.Equal(t, int64(keepAfterLimit-keepAfterLevel(at))-300*gib, headroom)
		}
		if sink.LogRecordCount() > last && last == 0 {
			assert.Equal(t, 6*time.Hour+5*time.Minute, at.Round(5*time.Minute), "after the third save")
		}
		last = sink.LogRecordCount()
	}
	require.Equal(t, 1, sink.LogRecordCount(), "one event when the state turns will_fail")
	lr := sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	assert.Equal(t, plog.SeverityNumberWarn, lr.SeverityNumber())
	attr := lr.Attributes().AsRaw()
	assert.Equal(t, EventCheckpointWillFail, lr.EventName())
	assert.Equal(t, "259:5", attr["disk_health.filesystem.domain"])
	assert.Equal(t, "3c9d1f2e-5a6b-4c7d-8e9f-0a1b2c3d4e5f", attr["disk_health.filesystem.uuid"])
	assert.Equal(t, "/data", attr["system.filesystem.mountpoint"])
	assert.Equal(t, int64(300*gib), attr["disk_health.checkpoint.size"])
	assert.Equal(t, "save_does_not_fit", attr["disk_health.checkpoint.will_fail_reason"])
	assert.Equal(t, "free_blocks", attr["disk_health.checkpoint.binding_limit"])
	assert.InDelta(t, (2 * time.Hour).Seconds(), attr["disk_health.checkpoint.fails_in"], 10*60)
	assert.Contains(t, lr.Body().Str(), "checkpoint save 1 from now")
	assert.Contains(t, lr.Body().Str(), "saves of 300.0 GiB every 2h0m0s")
}

// TestFSScraperCheckpointRelearning (issue 31): the keep-after job learned, then it stops saving. Three
// intervals after its last save the state set stays, on learning (the other checkpoint series stop),
// and one relearning event says why; the original dropped every checkpoint series without a word.
func TestFSScraperCheckpointRelearning(t *testing.T) {
	clock := t0
	sink := new(consumertest.LogsSink)
	s, f := bindsRootWith(t, "keep", &clock, sink, nil)
	const stop = 7 * time.Hour
	var learning int
	for at := time.Duration(0); at < 14*time.Hour; at += 5 * time.Minute {
		clock = t0.Add(at)
		keepAfterAt(f, min(at, stop))
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		if at < 6*time.Hour+30*time.Minute {
			continue
		}
		states, _ := domainPoints(md, "disk_health.filesystem.checkpoint.state")
		require.NotEmpty(t, states, "at %v: the state set is there", at)
		if stateIs(md, "259:5", "learning") {
			learning++
			assert.Equal(t, map[string]int{"259:5": 4}, states, "at %v: the whole set, learning 1", at)
			_, hasHeadroom := domainValue(md, "disk_health.filesystem.checkpoint.headroom", "259:5")
			assert.False(t, hasHeadroom, "at %v: nothing predicted", at)
		}
	}
	assert.Positive(t, learning)
	var relearning []map[string]any
	for _, ld := range sink.AllLogs() {
		lr := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
		if a := lr.Attributes().AsRaw(); lr.EventName() == EventCheckpointRelearning {
			relearning = append(relearning, a)
			assert.Contains(t, lr.Body().Str(), "no save for three intervals")
		}
	}
	require.Len(t, relearning, 1, "said once")
	assert.Equal(t, "stopped_saving", relearning[0]["disk_health.checkpoint.relearn_reason"])
	assert.Equal(t, "259:5", relearning[0]["disk_health.filesystem.domain"])
	assert.Equal(t, "/data", relearning[0]["system.filesystem.mountpoint"])
}

// TestFSScraperCheckpointFillingWhileLearning (issue 43 item 3): another writer fills /data's 2 TiB at
// 50 GiB a scrape before any save pattern is learned. The state set appears on will_fail and one
// will_fail event is sent before the filesystem is full, its reason saying that no pattern is learned
// yet; nothing of a save is emitted (no headroom, size or interval). On d38df80 a domain without a pattern
// had no checkpoint series and sent nothing until ENOSPC.
func TestFSScraperCheckpointFillingWhileLearning(t *testing.T) {
	clock := t0
	sink := new(consumertest.LogsSink)
	s, f := bindsRootWith(t, "keep", &clock, sink, nil)
	used, full := uint64(900*gib), false
	var willFail int
	for at := time.Duration(0); !full; at += time.Minute {
		require.Less(t, at, time.Hour, "the filesystem fills")
		clock = t0.Add(at)
		if at >= 10*time.Minute {
			used = min(used+50*gib, keepAfterLimit)
		}
		usedOf2TiB(f, used)
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		if full = used == keepAfterLimit; full {
			break
		}
		if stateIs(md, "259:5", "will_fail") {
			willFail++
			_, hasHeadroom := domainValue(md, "disk_health.filesystem.checkpoint.headroom", "259:5")
			assert.False(t, hasHeadroom, "at %v: no save is predicted", at)
		}
	}
	assert.Positive(t, willFail, "will_fail before the filesystem is full")
	require.Equal(t, 1, sink.LogRecordCount(), "one event, before the filesystem is full")
	lr := sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	attr := lr.Attributes().AsRaw()
	assert.Equal(t, EventCheckpointWillFail, lr.EventName())
	assert.Equal(t, "filling_without_pattern", attr["disk_health.checkpoint.will_fail_reason"])
	assert.Equal(t, "259:5", attr["disk_health.filesystem.domain"])
	assert.Equal(t, "free_blocks", attr["disk_health.checkpoint.binding_limit"])
	assert.Positive(t, attr["disk_health.checkpoint.fails_in"])
	assert.Contains(t, lr.Body().Str(), "no save pattern learned yet")
	assert.Contains(t, lr.Body().Str(), "filling at ")
}

package filesystemscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/checkpoint"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/metadata"
)

// EventCheckpointWillFail is the event.name of the log record sent when a domain's next checkpoint
// saves turn will_fail.
const EventCheckpointWillFail = "disk_health.checkpoint.will_fail"

// EventSHMWillFail is the event.name of the log record sent when a pod's shared memory has less
// headroom than it grew by since the last scrape: at that rate the next scrape finds the writer dead of
// ENOSPC or the OOM killer.
const EventSHMWillFail = "disk_health.shm.will_fail"

// learners keeps one checkpoint learner per key (a capacity domain, a project directory), for as long as
// the key is seen.
type learners[K comparable] struct {
	byKey map[K]*checkpoint.Learner
	seen  map[K]bool
}

func newLearners[K comparable]() *learners[K] {
	return &learners[K]{byKey: map[K]*checkpoint.Learner{}, seen: map[K]bool{}}
}

// observe feeds the key's sample to its learner (made at the first).
func (ls *learners[K]) observe(k K, s checkpoint.Sample) checkpoint.Prediction {
	ls.seen[k] = true
	l, ok := ls.byKey[k]
	if !ok {
		l = checkpoint.NewLearner(checkpoint.Config{})
		ls.byKey[k] = l
	}
	return l.Observe(s)
}

// keep marks a key present in this scrape even though it gave no sample (its statfs failed).
func (ls *learners[K]) keep(k K) { ls.seen[k] = true }

// sweep forgets the keys not seen since the last sweep: a filesystem mounted again, a project directory
// back in the top N, starts learning afresh.
func (ls *learners[K]) sweep() {
	for k := range ls.byKey {
		if !ls.seen[k] {
			delete(ls.byKey, k)
		}
	}
	clear(ls.seen)
}

var checkpointStates = [...]struct {
	state checkpoint.State
	attr  metadata.AttributeSystemFilesystemCheckpointState
}{
	{checkpoint.Fits, metadata.AttributeSystemFilesystemCheckpointStateFits},
	{checkpoint.Tight, metadata.AttributeSystemFilesystemCheckpointStateTight},
	{checkpoint.WillFail, metadata.AttributeSystemFilesystemCheckpointStateWillFail},
}

var rotations = map[checkpoint.Rotation]metadata.AttributeSystemFilesystemCheckpointRotation{
	checkpoint.RotationUnknown: metadata.AttributeSystemFilesystemCheckpointRotationUnknown,
	checkpoint.RotationBefore:  metadata.AttributeSystemFilesystemCheckpointRotationBeforeSave,
	checkpoint.RotationAfter:   metadata.AttributeSystemFilesystemCheckpointRotationAfterSave,
}

// recordCheckpoint learns from the domain's sample and appends what is known, once a save pattern
// is; the event is buffered when the state turns will_fail.
// Free space is what the binding limit leaves.
func (s *fsScraper) recordCheckpoint(ts pcommon.Timestamp, now time.Time, r *fsusage.Result, res pcommon.Resource, mp, dom string, bind limit) {
	u := &r.Usage
	p := s.learners.observe(r.Domain, checkpoint.Sample{Time: now, Used: u.Used, Free: uint64(max(0, bind.headroom))})
	if p.Saved && s.writers != nil {
		s.writerErr = errors.Join(s.writerErr, s.writers.saved(r.Domain, p.Save))
	}
	if p.State == checkpoint.Learning {
		return
	}
	e, m := s.e, r.Mount
	dev, uuid, typ := m.Source, r.Domain.UUID, m.FSType
	if p.Keep > 0 {
		e.AppendSystemFilesystemCheckpointCopiesDataPoint(ts, int64(p.Keep), dev, dom, uuid, typ, rotations[p.Rotation])
	}
	e.AppendSystemFilesystemCheckpointDurationDataPoint(ts, p.LastDuration.Seconds(), dev, dom, uuid, typ)
	e.AppendSystemFilesystemCheckpointHeadroomDataPoint(ts, p.Headroom, dev, dom, uuid, typ)
	e.AppendSystemFilesystemCheckpointIntervalDataPoint(ts, p.Interval.Seconds(), dev, dom, uuid, typ)
	e.AppendSystemFilesystemCheckpointNextSaveDataPoint(ts, p.NextSave.Seconds(), dev, dom, uuid, typ)
	e.AppendSystemFilesystemCheckpointSizeDataPoint(ts, emit.Int(p.SizeP50), dev, dom, uuid, typ, metadata.AttributeSystemFilesystemCheckpointPercentileP50)
	e.AppendSystemFilesystemCheckpointSizeDataPoint(ts, emit.Int(p.SizeP90), dev, dom, uuid, typ, metadata.AttributeSystemFilesystemCheckpointPercentileP90)
	for _, st := range checkpointStates {
		v := int64(0)
		if st.state == p.State {
			v = 1
		}
		e.AppendSystemFilesystemCheckpointStateDataPoint(ts, v, dev, dom, uuid, typ, st.attr)
	}
	e.AppendSystemFilesystemCheckpointThroughputDataPoint(ts, p.LastThroughput, dev, dom, uuid, typ)
	wr, named := s.writers.writer(r.Domain)
	if named {
		e.AppendSystemFilesystemCheckpointWriterDataPoint(ts, 1, dev, dom, uuid, typ, wr.path, wr.podUID, wr.containerID)
	}
	if p.Alert {
		var by *writer
		if named {
			by = &wr
		}
		s.willFailEvent(res, now, &p, mp, dom, r, bind.name.String(), nil, by)
	}
}

// willFailEvent buffers the log record of a domain (or, with proj set, a project directory on it)
// turning will_fail: what, where, how big, when, the limit that binds and, when one was named, the
// cgroup (pod, container) writing the saves.
func (s *fsScraper) willFailEvent(res pcommon.Resource, at time.Time, p *checkpoint.Prediction, mp, dom string, r *fsusage.Result, bind string, proj *projectRef, by *writer) {
	retention := "no rotation seen yet"
	if p.Keep > 0 {
		retention = fmt.Sprintf("keep %d, rotation %s", p.Keep, p.Rotation)
	}
	where := fmt.Sprintf("filesystem %s (%s, %s)", dom, mp, r.Mount.Source)
	if proj != nil {
		where = fmt.Sprintf("project directory %s (project %d, %s) on %s", proj.dir, proj.id, proj.name, where)
	}
	body := fmt.Sprintf("%s: checkpoint save %d from now, in %s, will not fit: saves of %s every %s (%s), %s short at the next save; binding limit: %s",
		where, p.FailingSave, p.FailsIn.Round(time.Second), bytesText(p.SizeP90), p.Interval.Round(time.Second),
		retention, bytesText(uint64(max(0, -p.Headroom))), bind)
	if by != nil {
		body += "; written by cgroup " + by.path
		if by.podUID != "" {
			body += " (pod " + by.podUID + ")"
		}
	}
	lr := s.events.Record(res, at, s.now(), EventCheckpointWillFail, plog.SeverityNumberWarn, body)
	a := lr.Attributes()
	a.PutStr("system.filesystem.domain", dom)
	a.PutStr("system.filesystem.uuid", r.Domain.UUID)
	a.PutStr("system.filesystem.mountpoint", mp)
	a.PutStr("system.device", r.Mount.Source)
	if proj != nil {
		a.PutInt("system.filesystem.project.id", proj.id)
		a.PutStr("system.filesystem.project.name", proj.name)
		a.PutStr("system.filesystem.project.directory", proj.dir)
	}
	a.PutInt("disk_health.checkpoint.size", emit.Int(p.SizeP90))
	a.PutDouble("disk_health.checkpoint.fails_in", p.FailsIn.Seconds())
	a.PutInt("disk_health.checkpoint.headroom", p.Headroom)
	a.PutStr("disk_health.checkpoint.binding_limit", bind)
	if by != nil {
		a.PutStr("cgroup.path", by.path)
		emit.SetIfNotEmpty(func(v string) { a.PutStr("k8s.pod.uid", v) }, by.podUID)
		emit.SetIfNotEmpty(func(v string) { a.PutStr("container.id", v) }, by.containerID)
	}
}

// bytesText is n in binary units with one decimal, for event bodies.
func bytesText(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

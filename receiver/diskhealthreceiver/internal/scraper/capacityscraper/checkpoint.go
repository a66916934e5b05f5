package capacityscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper"

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/checkpoint"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/store"
)

// EventCheckpointWillFail is the event.name of the log record sent when a domain's next checkpoint
// saves turn will_fail.
const EventCheckpointWillFail = "disk_health.checkpoint.will_fail"

// EventSHMWillFail is the event.name of the log record sent when a pod's shared memory has less
// headroom than it grew by since the last scrape: at that rate the next scrape finds the writer dead of
// ENOSPC or the OOM killer.
const EventSHMWillFail = "disk_health.shm.will_fail"

// EventCheckpointRelearning is the event.name of the log record sent when a domain's (or project
// directory's) learned checkpoint pattern is lost and learning starts again; its
// disk_health.checkpoint.relearn_reason says why.
const EventCheckpointRelearning = "disk_health.checkpoint.relearning"

// learners keeps one checkpoint learner per key (a capacity domain, a project directory), for as long as
// the key is seen, and, with a storage client, across restarts: a learner is restored when its key is
// first seen, stored when it learns a save, loses its pattern or alerts, and at shutdown, and deleted
// with its key. The storage's reads and writes never run in a scrape's time (store.Background).
//
// A key with nothing restored is followed by a checkpoint.Still until its usage first moves, and only
// then by a learner (the one the Still's samples made): most filesystems never move (5 000 static
// mounts held 11 MiB of learners, issue 33), and one that does is learned exactly as from its first sample.
type learners[K comparable] struct {
	byKey map[K]*tracked
	still map[K]*stillKey
	seen  map[K]bool
	// store is the storage (nil: nothing is kept anywhere); name is a key's name there.
	store  *store.Background
	name   func(K) string
	logger *zap.Logger
}

// tracked is a key's learner and what it follows (owner: the filesystem's identity, "" for none).
type tracked struct {
	l     *checkpoint.Learner
	owner string
}

// stillKey is a key whose usage has not moved yet, and what it follows.
type stillKey struct {
	q     checkpoint.Still
	owner string
}

func newLearners[K comparable](logger *zap.Logger, name func(K) string) *learners[K] {
	return &learners[K]{byKey: map[K]*tracked{}, still: map[K]*stillKey{}, seen: map[K]bool{}, name: name, logger: logger}
}

// domainKey is a domain's key in the checkpoint storage: its UUID, which survives a reboot, else its
// major:minor.
func domainKey(d fsusage.Domain) string {
	if d.UUID != "" {
		return "domain/" + d.UUID
	}
	return fmt.Sprintf("domain/%d:%d", d.Major, d.Minor)
}

// domainOwner is what a domain's checkpoint record belongs to, beyond the major:minor of its key: the
// filesystem's UUID, else the mount's source, root, type and mount point (an anonymous 0:N is another
// filesystem's after a reboot, and one tmpfs is told from another only by where it is mounted); ""
// when the mount names no source, so that nothing tells its record from another filesystem's.
func domainOwner(r *fsusage.Result) string {
	if r.Domain.UUID != "" {
		return "uuid " + r.Domain.UUID
	}
	m := r.Mount
	if m.Source == "" || m.FSType == "" {
		return ""
	}
	return strings.Join([]string{"mount", m.Source, m.Root, m.FSType, m.MountPoint}, "\x00")
}

// observe feeds the key's sample to its learner (restored at the first, else made when the usage first
// moves); owner is what the key's filesystem is now.
func (ls *learners[K]) observe(ctx context.Context, k K, owner string, s checkpoint.Sample) checkpoint.Prediction {
	ls.seen[k] = true
	t, ok := ls.byKey[k]
	if !ok {
		st, waiting := ls.still[k]
		if !waiting {
			if l := ls.restore(ctx, k, owner, s); l != nil {
				t = &tracked{l: l}
				ls.byKey[k] = t
			} else {
				st = &stillKey{}
				ls.still[k] = st
			}
		}
		if t == nil {
			st.owner = owner
			if st.q.Observe(s) {
				return checkpoint.Prediction{}
			}
			t = &tracked{l: st.q.Learner(checkpoint.Config{})}
			ls.byKey[k] = t
			delete(ls.still, k)
		}
	}
	t.owner = owner
	p := t.l.Observe(s)
	if p.Saved || p.Lost || p.Alert {
		ls.persist(k, t)
	}
	return p
}

// restore returns the learner of what k's knew before a restart, if anything was stored for owner,
// before its first sample s; nil when nothing was. A record that cannot be believed is said once and
// deleted, so that it cannot come back at the next start; one that is not yet confirmed is said once and
// predicts nothing until a save.
func (ls *learners[K]) restore(ctx context.Context, k K, owner string, s checkpoint.Sample) *checkpoint.Learner {
	if ls.store == nil {
		return nil
	}
	name := ls.name(k)
	if owner == "" {
		// Nothing tells this filesystem's record from another's: none is restored, none kept.
		ls.store.Delete(name)
		return nil
	}
	// The storage says its own problems, once.
	data, err := ls.store.Get(ctx, name)
	if err != nil || data == nil {
		return nil
	}
	l := checkpoint.NewLearner(checkpoint.Config{})
	trust, err := l.Restore(data, owner, s)
	if err != nil {
		ls.logger.Warn("checkpoint record refused and deleted; learned afresh", zap.String("key", name), zap.Error(err))
		ls.store.Delete(name)
		return nil
	}
	if trust != checkpoint.Trusted {
		ls.logger.Info("checkpoint record restored as a hint only: nothing is predicted until a save confirms it",
			zap.String("key", name), zap.Stringer("record", trust))
	}
	return l
}

// persist queues k's learner for the storage (written outside the scrape).
func (ls *learners[K]) persist(k K, t *tracked) {
	if ls.store == nil || t.owner == "" {
		return
	}
	ls.store.Set(ls.name(k), t.l.MarshalRecord(t.owner))
}

// persistAll queues every learner (at shutdown, before the storage's flush), a still key's too: the
// record of the learner its samples made, as it was stored when every key had one, so that a restart
// restores what it did then.
func (ls *learners[K]) persistAll() {
	for k, t := range ls.byKey {
		ls.persist(k, t)
	}
	for k, st := range ls.still {
		ls.persist(k, &tracked{l: st.q.Learner(checkpoint.Config{}), owner: st.owner})
	}
}

// keep marks a key present in this scrape even though it gave no sample (its statfs failed).
func (ls *learners[K]) keep(k K) { ls.seen[k] = true }

// sweep forgets the keys not seen since the last sweep, stored state too (so the storage holds no more
// than what is mounted): a filesystem mounted again, a project directory back in the top N, starts
// learning afresh.
func (ls *learners[K]) sweep() {
	for k := range ls.byKey {
		if !ls.seen[k] {
			delete(ls.byKey, k)
			ls.forget(k)
		}
	}
	for k := range ls.still {
		if !ls.seen[k] {
			delete(ls.still, k)
			ls.forget(k)
		}
	}
	clear(ls.seen)
}

// forget deletes a key gone from the storage.
func (ls *learners[K]) forget(k K) {
	if ls.store != nil {
		ls.store.Delete(ls.name(k))
	}
}

var checkpointStates = [...]struct {
	state checkpoint.State
	attr  metadata.AttributeDiskHealthFilesystemCheckpointState
}{
	{checkpoint.Fits, metadata.AttributeDiskHealthFilesystemCheckpointStateFits},
	{checkpoint.Tight, metadata.AttributeDiskHealthFilesystemCheckpointStateTight},
	{checkpoint.WillFail, metadata.AttributeDiskHealthFilesystemCheckpointStateWillFail},
	{checkpoint.Learning, metadata.AttributeDiskHealthFilesystemCheckpointStateLearning},
}

// stateSeries says whether p's state is emitted: a known pattern's, or learning again after one was
// lost (a domain that never had one has no checkpoint series).
func stateSeries(p *checkpoint.Prediction) bool {
	return p.State != checkpoint.Learning || p.Relearning != checkpoint.ReasonNone
}

// statesOnly says whether p emits its state set alone: learning again, or will_fail from a filesystem
// filling before a save could come while no pattern is learned (there is no size or cadence to say).
func statesOnly(p *checkpoint.Prediction) bool {
	return p.State == checkpoint.Learning || p.Filling
}

var rotations = map[checkpoint.Rotation]metadata.AttributeDiskHealthFilesystemCheckpointRotation{
	checkpoint.RotationUnknown: metadata.AttributeDiskHealthFilesystemCheckpointRotationUnknown,
	checkpoint.RotationBefore:  metadata.AttributeDiskHealthFilesystemCheckpointRotationBeforeSave,
	checkpoint.RotationAfter:   metadata.AttributeDiskHealthFilesystemCheckpointRotationAfterSave,
}

// recordCheckpoint learns from the domain's sample and appends what is known, once a save pattern
// is; the event is buffered when the state turns will_fail.
// Free space is what the binding limit leaves.
func (s *capScraper) recordCheckpoint(ctx context.Context, ts pcommon.Timestamp, now time.Time, r *fsusage.Result, res pcommon.Resource, mp, dom string, bind limit) {
	u := &r.Usage
	p := s.learners.observe(ctx, r.Domain, domainOwner(r), checkpoint.Sample{Time: now, Used: u.Used, Free: uint64(max(0, bind.headroom))})
	if p.Saved && s.writers != nil {
		s.writerErr = errors.Join(s.writerErr, s.writers.saved(r.Domain, p.Save))
	}
	if p.Lost {
		s.relearningEvent(res, now, &p, mp, dom, r, nil)
	}
	if !stateSeries(&p) {
		return
	}
	e, m := s.e, r.Mount
	dev, uuid, typ := m.Source, r.Domain.UUID, m.FSType
	if statesOnly(&p) {
		appendStates(p.State, func(v int64, st metadata.AttributeDiskHealthFilesystemCheckpointState) {
			e.AppendDiskHealthFilesystemCheckpointStateDataPoint(ts, v, dev, dom, uuid, typ, st)
		})
		if p.Alert {
			s.willFailEvent(res, now, &p, mp, dom, r, bind.name.String(), nil, nil)
		}
		return
	}
	if p.Keep > 0 {
		e.AppendDiskHealthFilesystemCheckpointCopiesDataPoint(ts, int64(p.Keep), dev, dom, uuid, typ, rotations[p.Rotation])
	}
	e.AppendDiskHealthFilesystemCheckpointDurationDataPoint(ts, p.LastDuration.Seconds(), dev, dom, uuid, typ)
	e.AppendDiskHealthFilesystemCheckpointHeadroomDataPoint(ts, p.Headroom, dev, dom, uuid, typ)
	e.AppendDiskHealthFilesystemCheckpointIntervalDataPoint(ts, p.Interval.Seconds(), dev, dom, uuid, typ)
	e.AppendDiskHealthFilesystemCheckpointNextSaveDataPoint(ts, p.NextSave.Seconds(), dev, dom, uuid, typ)
	e.AppendDiskHealthFilesystemCheckpointSizeDataPoint(ts, emit.Int(p.SizeP50), dev, dom, uuid, typ, metadata.AttributeDiskHealthFilesystemCheckpointPercentileP50)
	e.AppendDiskHealthFilesystemCheckpointSizeDataPoint(ts, emit.Int(p.SizeP90), dev, dom, uuid, typ, metadata.AttributeDiskHealthFilesystemCheckpointPercentileP90)
	appendStates(p.State, func(v int64, st metadata.AttributeDiskHealthFilesystemCheckpointState) {
		e.AppendDiskHealthFilesystemCheckpointStateDataPoint(ts, v, dev, dom, uuid, typ, st)
	})
	e.AppendDiskHealthFilesystemCheckpointThroughputDataPoint(ts, p.LastThroughput, dev, dom, uuid, typ)
	wr, named := s.writers.writer(r.Domain)
	if named {
		e.AppendDiskHealthFilesystemCheckpointWriterDataPoint(ts, 1, dev, dom, uuid, typ, wr.path, wr.podUID, wr.containerID)
	}
	if p.Alert {
		var by *writer
		if named {
			by = &wr
		}
		s.willFailEvent(res, now, &p, mp, dom, r, bind.name.String(), nil, by)
	}
}

// appendStates appends the state set: 1 for state, 0 for the others; learning only while it is the
// state (relearning), so a domain predicting has the three series it always had.
func appendStates(state checkpoint.State, add func(int64, metadata.AttributeDiskHealthFilesystemCheckpointState)) {
	for _, st := range checkpointStates {
		if st.state == checkpoint.Learning && state != checkpoint.Learning {
			continue
		}
		v := int64(0)
		if st.state == state {
			v = 1
		}
		add(v, st.attr)
	}
}

// relearningEvent buffers the log record of a domain's (with proj set, a project directory's) learned
// checkpoint pattern lost: what was known and why it is learned again.
func (s *capScraper) relearningEvent(res pcommon.Resource, at time.Time, p *checkpoint.Prediction, mp, dom string, r *fsusage.Result, proj *projectRef) {
	why := map[checkpoint.Reason]string{
		checkpoint.ReasonStopped:  "no save for three intervals (the job stopped saving, or its saves no longer show)",
		checkpoint.ReasonChanged:  "the saves changed size or cadence",
		checkpoint.ReasonNotSaves: "the bursts taken for saves were not saves (allocation chunks of a growing file)",
	}[p.Relearning]
	body := fmt.Sprintf("%s: checkpoint save pattern lost, learning again: %s; no prediction until three saves at a regular cadence are seen",
		where(dom, mp, r, proj), why)
	lr := s.events.Record(res, at, s.now(), EventCheckpointRelearning, plog.SeverityNumberInfo, body)
	a := lr.Attributes()
	eventPlace(a, dom, mp, r, proj)
	a.PutStr("disk_health.checkpoint.relearn_reason", p.Relearning.String())
}

// where names a domain (with proj set, a project directory on it) in an event body.
func where(dom, mp string, r *fsusage.Result, proj *projectRef) string {
	w := fmt.Sprintf("filesystem %s (%s, %s)", dom, mp, r.Mount.Source)
	if proj != nil {
		w = fmt.Sprintf("project directory %s (project %d, %s) on %s", proj.dir, proj.id, proj.name, w)
	}
	return w
}

// eventPlace puts the attributes that say where a checkpoint event is.
func eventPlace(a pcommon.Map, dom, mp string, r *fsusage.Result, proj *projectRef) {
	a.PutStr("disk_health.filesystem.domain", dom)
	a.PutStr("disk_health.filesystem.uuid", r.Domain.UUID)
	a.PutStr("system.filesystem.mountpoint", mp)
	a.PutStr("system.device", r.Mount.Source)
	if proj != nil {
		a.PutInt("disk_health.filesystem.project.id", proj.id)
		a.PutStr("disk_health.filesystem.project.name", proj.name)
		a.PutStr("disk_health.filesystem.project.directory", proj.dir)
	}
}

// willFailEvent buffers the log record of a domain (or, with proj set, a project directory on it)
// turning will_fail: what, where, how big, when, the limit that binds and, when one was named, the
// cgroup (pod, container) writing the saves.
func (s *capScraper) willFailEvent(res pcommon.Resource, at time.Time, p *checkpoint.Prediction, mp, dom string, r *fsusage.Result, bind string, proj *projectRef, by *writer) {
	if p.Filling {
		s.fillingEvent(res, at, p, mp, dom, r, bind, proj)
		return
	}
	retention := "no rotation seen yet"
	if p.Keep > 0 {
		retention = fmt.Sprintf("keep %d, rotation %s", p.Keep, p.Rotation)
	}
	body := fmt.Sprintf("%s: checkpoint save %d from now, in %s, will not fit: saves of %s every %s (%s), %s short at the next save; binding limit: %s",
		where(dom, mp, r, proj), p.FailingSave, p.FailsIn.Round(time.Second), bytesText(p.SizeP90), p.Interval.Round(time.Second),
		retention, bytesText(uint64(max(0, -p.Headroom))), bind)
	if by != nil {
		body += "; written by cgroup " + by.path
		if by.podUID != "" {
			body += " (pod " + by.podUID + ")"
		}
	}
	lr := s.events.Record(res, at, s.now(), EventCheckpointWillFail, plog.SeverityNumberWarn, body)
	a := lr.Attributes()
	eventPlace(a, dom, mp, r, proj)
	a.PutStr("disk_health.checkpoint.will_fail_reason", "save_does_not_fit")
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

// fillingEvent buffers the will_fail log record of a domain (or project directory) filling before a save
// could come while no save pattern is learned: its reason says so, and what it tells is the filling
// (rate, when full), not a save.
func (s *capScraper) fillingEvent(res pcommon.Resource, at time.Time, p *checkpoint.Prediction, mp, dom string, r *fsusage.Result, bind string, proj *projectRef) {
	body := fmt.Sprintf("%s: filling at %s/s, full in %s, before a checkpoint save could come; no save pattern learned yet (%d saves seen), so no save is predicted; binding limit: %s",
		where(dom, mp, r, proj), bytesText(uint64(p.Background)), p.FailsIn.Round(time.Second), p.Saves, bind)
	lr := s.events.Record(res, at, s.now(), EventCheckpointWillFail, plog.SeverityNumberWarn, body)
	a := lr.Attributes()
	eventPlace(a, dom, mp, r, proj)
	a.PutStr("disk_health.checkpoint.will_fail_reason", "filling_without_pattern")
	a.PutDouble("disk_health.checkpoint.fails_in", p.FailsIn.Seconds())
	a.PutInt("disk_health.checkpoint.headroom", p.Headroom)
	a.PutStr("disk_health.checkpoint.binding_limit", bind)
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

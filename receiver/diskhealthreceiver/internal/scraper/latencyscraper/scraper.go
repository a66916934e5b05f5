package latencyscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper"

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/noisy"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper/internal/metadata"
	conventions "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/semconv/v1.44.0"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// probe is what the scraper uses of *biolat.Probe; tests put a fake behind it.
type probe interface {
	Hook() string
	Started() time.Time
	Collect() (biolat.Snapshot, error)
	Forget(biolat.Dev) error
	Close() error
}

// opener opens the probe (biolat.Open in production).
type opener func(biolat.Options) (probe, error)

// cgroupProbe is what the scraper uses of *biolat.CgroupProbe.
type cgroupProbe interface {
	Started() time.Time
	Collect(live func() (map[uint64]string, error)) (biolat.CgroupSnapshot, error)
	Close() error
}

// cgroupOpener opens the per-cgroup probe (biolat.OpenCgroups in production).
type cgroupOpener func(biolat.CgroupOptions) (cgroupProbe, error)

// latencyScraper turns the probe's cumulative histograms and error counts into pdata, per whole disk
// that passes iostat's device filter. Where the probe cannot load, start logs one line and every
// scrape reports nothing, without an error.
type latencyScraper struct {
	cfg     *Config
	mb      *metadata.MetricsBuilder
	logger  *zap.Logger
	version string
	filter  *blockdev.Filter
	open    opener

	probe probe

	// The per-cgroup probe (per_cgroup.enabled), the hierarchy whose cgroup ids it reports, and the
	// top-N folder; nil when off or unavailable.
	openCgroups cgroupOpener
	cgProbe     cgroupProbe
	cgDir       string
	folder      *folder
	// verdict is the noisy-neighbour engine (per_cgroup.noisy_neighbor.enabled), nil when off; its
	// events are buffered in events and sent to sink (nil: logged only).
	verdict *noisy.Engine
	events  *emit.Events
	sink    consumer.Logs
	// stalls is, on cgroup v2, each judged cgroup's io.pressure "some" total at the scrape it was last
	// read, for the verdict's stall signal; nil on v1, which has no io.pressure.
	stalls  map[string]stallMark
	scrapes uint64
	// present holds the devices of the last /proc/diskstats read; restarted, the time a departed
	// device's series were forgotten: its new start when it comes back.
	present   map[biolat.Dev]bool
	restarted map[biolat.Dev]time.Time
	// marks is what told each reported device apart at its last scrape: a disk swapped under the
	// same major:minor keeps its probe series, which must then restart.
	marks map[biolat.Dev]devMark

	// tick is /proc/diskstats and the devices' identity, shared with the receiver's other sources.
	tick *tick.Reader
	// uncounted finds the completions no count of the probe shows (the dropped reason uncounted);
	// baselines re-reads /proc/diskstats after the probe's maps for the devices it has no baseline for.
	uncounted *uncounted
	baselines baselineReader

	now func() time.Time
}

func newScraper(set scraper.Settings, cfg *Config, open opener, now func() time.Time) (*latencyScraper, error) {
	f, err := cfg.filter()
	if err != nil {
		return nil, err
	}
	return &latencyScraper{
		cfg:       cfg,
		mb:        metadata.NewMetricsBuilder(metadata.MetricsBuilderConfig{Metrics: cfg.Metrics}, set),
		logger:    set.Logger,
		version:   set.BuildInfo.Version,
		filter:    f,
		open:      open,
		tick:      cfg.Tick.OrOwn(cfg.RootPath, now),
		present:   map[biolat.Dev]bool{},
		restarted: map[biolat.Dev]time.Time{},
		marks:     map[biolat.Dev]devMark{},
		uncounted: newUncounted(),
		events:    emit.NewEvents(metadata.ScopeName, set.BuildInfo.Version),
		now:       now,
	}, nil
}

// start loads and attaches the probe. It never fails the collector: where BPF cannot be used it logs
// exactly one line that names the cause and the fix (the probe's UnavailableError), and the source
// then reports nothing while every other source runs on. The line is INFO because the source is on by
// default: a collector deliberately run without CAP_BPF/CAP_PERFMON, or on a kernel without BTF, is
// configured correctly and should not warn at every start; the line still shows at the collector's
// default level. A rejection of the program by a kernel that should take it is a bug: WARN.
func (s *latencyScraper) start(context.Context, component.Host) error {
	p, err := s.open(biolat.Options{DeviceTime: s.cfg.DeviceTime, MaxDevices: s.cfg.MaxDevices})
	if err == nil {
		s.probe = p
		s.logger.Info("Block latency probe attached.", zap.String("hook", p.Hook()), zap.Bool("device_time", s.cfg.DeviceTime))
		if s.cfg.PerCgroup.Enabled {
			s.startCgroups()
		}
		return nil
	}
	msg := err.Error() + ". The latency source reports nothing; every other source runs on."
	s.cfg.Status.Set(probePart, emit.StateOff, reason(err))
	var ue *biolat.UnavailableError
	if !errors.As(err, &ue) || ue.Cause == biolat.CauseRejected {
		s.logger.Warn(msg, zap.String("cause", biolat.CauseName(err)))
		return nil
	}
	fields := []zap.Field{zap.String("cause", biolat.CauseName(err))}
	if len(ue.Missing) > 0 {
		fields = append(fields, zap.Strings("missing", ue.Missing))
	}
	s.logger.Info(msg, fields...)
	return nil
}

// startCgroups loads the per-cgroup probe. Like start it never fails the collector: without a cgroup
// hierarchy with io accounting, or where the probe cannot load, one line says why and the
// per-device histograms go on alone.
func (s *latencyScraper) startCgroups() {
	h, err := cgroupio.Detect(filepath.Join(s.cfg.RootPath, "sys", "fs", "cgroup"))
	if err != nil {
		s.logger.Info("Per-cgroup latency is off: "+err.Error()+".", zap.String("cause", "no_cgroup_io"))
		s.cfg.Status.Set(perCgroupPart, emit.StateDegraded, emit.ReasonUnsupportedKernel)
		return
	}
	p, err := s.openCgroups(biolat.CgroupOptions{MaxCgroups: s.cfg.PerCgroup.MaxCgroups, MaxDevices: s.cfg.MaxDevices})
	if err != nil {
		s.logger.Warn("Per-cgroup latency is off: "+err.Error()+".", zap.String("cause", biolat.CauseName(err)))
		s.cfg.Status.Set(perCgroupPart, emit.StateDegraded, reason(err))
		return
	}
	s.cgProbe, s.cgDir = p, h.Dir
	s.folder = newFolder(s.cfg.PerCgroup.TopN, pcommon.NewTimestampFromTime(p.Started()))
	if nn := &s.cfg.PerCgroup.NoisyNeighbor; nn.Enabled {
		s.verdict = noisy.New(nn.engine())
		if h.Version == cgroupio.V2 {
			s.stalls = map[string]stallMark{}
		}
	}
	s.logger.Info("Per-cgroup block latency probe attached.", zap.String("hierarchy", h.Version.String()), zap.Int("top_n", s.cfg.PerCgroup.TopN))
}

// The parts of the source's status (disk_health.source.status) its start sets.
const (
	probePart     = "probe"
	perCgroupPart = "per_cgroup"
)

// reason is why the probe is off, for disk_health.source.status.
func reason(err error) emit.Reason { return emit.Reason(biolat.StatusReason(err)) }

func (s *latencyScraper) shutdown(context.Context) error {
	var err, cgErr error
	if s.probe != nil {
		err = s.probe.Close()
		s.probe = nil
	}
	if s.cgProbe != nil {
		cgErr = s.cgProbe.Close()
		s.cgProbe = nil
	}
	return errors.Join(err, cgErr, s.baselines.reader.Close(), s.tick.Close())
}

func (s *latencyScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	if s.probe == nil {
		return pmetric.NewMetrics(), nil
	}
	// The probe is read after the device list's /proc/diskstats (read now or, by another source, up to
	// half an interval earlier; see package tick), so that diskstats never counts a completion the
	// histograms had not yet seen: the dropped reason uncounted rests on it (uncounted.go). A device that
	// appears in between is in the snapshot but not in the list, and is taken for gone: its first counts
	// are forgotten with it, and its series start from that moment, never reported under a wrong start.
	// The time is taken before the probe is read, so an export of time t holds every request done
	// before t (and perhaps a few after): a reader that compares it with /proc/diskstats read before t
	// never finds fewer requests in the histogram than diskstats counted.
	ts := pcommon.NewTimestampFromTime(s.now())
	var md pmetric.Metrics
	var errs scrapererror.ScrapeErrors
	var collectErr error
	if err := s.tick.Use(ctx, func(sn *tick.Snapshot) error {
		snap, err := s.probe.Collect()
		if err != nil {
			collectErr = err
			return nil
		}
		md = s.emit(sn, &snap, ts, &errs)
		return nil
	}); err != nil {
		// An unreadable /proc/diskstats is the input owner's problem to report (tick.Reader.Owns).
		return pmetric.NewMetrics(), s.tick.Own(err)
	}
	if collectErr != nil {
		return pmetric.NewMetrics(), collectErr
	}
	if err := s.events.Send(ctx, s.logger, s.sink); err != nil {
		errs.Add(err)
	}
	return md, errs.Combine()
}

// emit matches the probe's snapshot with the devices of a /proc/diskstats snapshot and builds the pdata.
func (s *latencyScraper) emit(sn *tick.Snapshot, snap *biolat.Snapshot, ts pcommon.Timestamp, errs *scrapererror.ScrapeErrors) pmetric.Metrics {
	stats := sn.Stats
	// Bad lines and unreadable identities are the input owner's to report (tick.Reader.Owns).
	if perr := s.tick.Own(sn.ParseErr); perr != nil {
		errs.AddPartial(emit.CountErrors(perr), perr)
	}
	current := make(map[biolat.Dev]bool, len(stats))
	for i := range stats {
		current[biolat.Dev{Major: stats[i].MajorNumber, Minor: stats[i].MinorNumber}] = true
	}
	if err := s.tick.Own(sn.Identities()); err != nil {
		errs.AddPartial(emit.CountErrors(err), err)
	}
	if err := s.forgetDeparted(snap, current); err != nil {
		errs.AddPartial(1, err)
	}

	ids := make(map[biolat.Dev]pointIdentity, len(stats))
	marks := make(map[biolat.Dev]devMark, len(stats))
	for i := range stats {
		st := &stats[i]
		id, ok := sn.Identity(st.DeviceName)
		if !ok || !s.filter.Match(id) {
			continue
		}
		dev := biolat.Dev{Major: st.MajorNumber, Minor: st.MinorNumber}
		old, known := s.marks[dev]
		ios := completions(st)
		if known && ios < old.ios && id.DiskSeq == 0 {
			// Counters that went back are, before Linux 5.15, the only sign of a device re-created
			// under the same name and major:minor (iostat does the same).
			if err := sn.Reread(st.DeviceName); err != nil {
				errs.AddPartial(emit.CountErrors(err), err)
			}
			if id, ok = sn.Identity(st.DeviceName); !ok {
				continue
			}
		}
		pi := pointIdentity{device: st.DeviceName}
		if id.Class == blockdev.ClassDisk {
			pi.hwID = blockdev.DiskID(id)
		}
		m := devMark{name: st.DeviceName, seq: id.DiskSeq, hwID: pi.hwID, ios: ios}
		marks[dev] = m
		if known && (old.name != m.name || old.seq != m.seq || old.hwID != m.hwID) {
			// Another disk under the same number: what the probe counted so far is partly the old
			// disk's. Its series start again from the next scrape, none of it reported under the new
			// disk's identity.
			if err := s.probe.Forget(dev); err != nil {
				errs.AddPartial(1, err)
			}
			s.restarted[dev] = s.now()
			continue
		}
		ids[dev] = pi
	}
	s.marks = marks
	uncounted, err := s.countUncounted(sn, snap, ids)
	if err != nil {
		errs.AddPartial(1, err)
	}
	s.cfg.Signs.Publish(boardSource, kernelErrors(snap, ids))
	var cg []cgPoint
	var nn []noisyPoint
	if s.cgProbe != nil {
		cs, err := s.cgProbe.Collect(func() (map[uint64]string, error) { return cgroupio.IDs(s.cgDir) })
		if err != nil {
			errs.AddPartial(1, err)
		} else {
			keep := func(d biolat.Dev) bool { _, ok := ids[d]; return ok }
			cg = s.folder.fold(&cs, keep, pcommon.NewTimestampFromTime(s.cgProbe.Started()), ts)
			if s.verdict != nil {
				nn = s.judge(ids, ts, errs)
			}
		}
	}
	return s.build(snap, ids, uncounted, cg, nn, ts)
}

// devMark is what tells one device from the next one under the same major:minor.
type devMark struct {
	name, hwID string
	seq, ios   uint64
}

// forgetDeparted drops the series of every device that left /proc/diskstats since the last scrape
// (or that the snapshot has but the list no longer does), and gives it a new start time: if its
// number comes back, its series count from zero again, like a re-created device in iostat.
func (s *latencyScraper) forgetDeparted(snap *biolat.Snapshot, current map[biolat.Dev]bool) error {
	gone := map[biolat.Dev]bool{}
	for d := range s.present {
		if !current[d] {
			gone[d] = true
		}
	}
	for i := range snap.Series {
		if d := snap.Series[i].Dev; !current[d] {
			gone[d] = true
		}
	}
	for i := range snap.Errors {
		if d := snap.Errors[i].Dev; !current[d] {
			gone[d] = true
		}
	}
	var errs []error
	for d := range gone {
		if err := s.probe.Forget(d); err != nil {
			errs = append(errs, err)
			continue
		}
		s.restarted[d] = s.now()
	}
	s.present = current
	return errors.Join(errs...)
}

// completions is a /proc/diskstats line's completed requests of every group, the requests the
// histograms count.
func completions(st *diskstats.Stat) uint64 {
	return st.ReadIOs + st.WriteIOs + st.DiscardIOs + st.FlushRequestsCompleted
}

// countUncounted is the dropped reason uncounted at this scrape (uncounted.go), over the reported
// devices that have histograms: their completions from sn, read before snap, and, for those without a
// baseline, from /proc/diskstats read again now, after snap.
func (s *latencyScraper) countUncounted(sn *tick.Snapshot, snap *biolat.Snapshot, ids map[biolat.Dev]pointIdentity) (uint64, error) {
	devs := map[biolat.Dev]deviceCompletions{}
	for i := range snap.Series {
		se := &snap.Series[i]
		if _, ok := ids[se.Dev]; ok && se.Kind == biolat.Total {
			c := devs[se.Dev]
			c.H += se.Histogram.Count
			devs[se.Dev] = c
		}
	}
	need := false
	for i := range sn.Stats {
		st := &sn.Stats[i]
		dev := biolat.Dev{Major: st.MajorNumber, Minor: st.MinorNumber}
		if c, ok := devs[dev]; ok {
			c.D = completions(st)
			devs[dev] = c
			need = need || s.uncounted.needsBaseline(dev, c)
		}
	}
	var err error
	if need {
		err = s.baselines.read(sn.Path, devs)
	}
	return s.uncounted.update(devs, snap.Drops.NotRun+snap.Drops.HistogramsFull), err
}

// baselineReader reads /proc/diskstats apart from the shared snapshot, for baselines only.
type baselineReader struct {
	reader diskstats.FileReader
	parser diskstats.Parser
	stats  []diskstats.Stat
}

// read sets D0 and Fresh of every device in devs that /proc/diskstats lists. Its bad lines are the
// shared snapshot's owner's to report; a device on one has no baseline until a later scrape.
func (b *baselineReader) read(path string, devs map[biolat.Dev]deviceCompletions) error {
	data, err := b.reader.Read(path)
	if err != nil {
		return err
	}
	b.stats, _ = b.parser.Parse(data, b.stats[:0])
	for i := range b.stats {
		st := &b.stats[i]
		dev := biolat.Dev{Major: st.MajorNumber, Minor: st.MinorNumber}
		if c, ok := devs[dev]; ok {
			c.D0, c.Fresh = completions(st), true
			devs[dev] = c
		}
	}
	return nil
}

// startOf is a device's start time: the probe's attach, or when its series were last forgotten.
func (s *latencyScraper) startOf(d biolat.Dev) pcommon.Timestamp {
	if t, ok := s.restarted[d]; ok {
		return pcommon.NewTimestampFromTime(t)
	}
	return pcommon.NewTimestampFromTime(s.probe.Started())
}

// build maps a snapshot to pdata: the error counter through the generated builder, the histograms
// by hand into the same scope. Devices not in ids (filtered out, or gone) are left out.
func (s *latencyScraper) build(snap *biolat.Snapshot, ids map[biolat.Dev]pointIdentity, uncounted uint64, cg []cgPoint, nn []noisyPoint, ts pcommon.Timestamp) pmetric.Metrics {
	mb := s.mb
	for i := range snap.Errors {
		e := &snap.Errors[i]
		id, ok := ids[e.Dev]
		if !ok {
			continue
		}
		var opts []metadata.MetricAttributeOption
		if id.hwID != "" {
			opts = append(opts, metadata.WithHwIDMetricAttribute(id.hwID))
		}
		mb.Reset(metadata.WithStartTime(s.startOf(e.Dev)))
		// Discards and flushes are their own metrics: disk.io.direction is read or write.
		switch e.Direction {
		case biolat.Discard:
			mb.RecordDiskHealthDiskDiscardKernelErrorsDataPoint(ts, int64(e.Count), id.device, e.Status, opts...)
		case biolat.Flush:
			mb.RecordDiskHealthDiskFlushKernelErrorsDataPoint(ts, int64(e.Count), id.device, e.Status, opts...)
		default:
			mb.RecordDiskHealthDiskKernelErrorsDataPoint(ts, int64(e.Count), id.device,
				metadata.MapAttributeDiskIoDirection[e.Direction.String()], e.Status, opts...)
		}
	}
	mb.Reset(metadata.WithStartTime(pcommon.NewTimestampFromTime(s.probe.Started())))
	for _, d := range []struct {
		n      uint64
		reason metadata.AttributeLatencyDropReason
	}{
		{snap.Drops.NoStartTime, metadata.AttributeLatencyDropReasonNoStartTime},
		{snap.Drops.HistogramsFull, metadata.AttributeLatencyDropReasonHistogramsFull},
		{snap.Drops.ErrorsFull, metadata.AttributeLatencyDropReasonErrorsFull},
		{snap.Drops.NoIssueTime, metadata.AttributeLatencyDropReasonNoIssueTime},
		{snap.Drops.NotRun, metadata.AttributeLatencyDropReasonNotRun},
		{uncounted, metadata.AttributeLatencyDropReasonUncounted},
	} {
		mb.RecordDiskHealthLatencyDroppedDataPoint(ts, emit.Int(d.n), d.reason)
	}
	recordCgroups(mb, cg, ids, ts)
	recordNoisy(mb, nn, ids, ts)
	md := mb.Emit()
	ms := emit.ScopeMetrics(md, conventions.SchemaURL, metadata.ScopeName, s.version)
	appendHistograms(ms, snap.Series, ids, s.startOf, ts, s.cfg.DeviceTime)
	appendCgroupHistograms(ms, cg, ids, ts)
	if ms.Len() == 0 {
		return pmetric.NewMetrics()
	}
	return md
}

// boardSource names this source's counters on the signs board.
const boardSource = "latency"

// kernelErrors is every whole disk's count of requests the kernel completed with an error, the
// input of the SMART verdict's kernel_io_errors_rising rule: the kernel sees a failing disk's errors
// long before the disk's SMART admits anything. A disk without errors posts 0: the rule's baseline
// is the first value it sees, so a disk whose first errors all came between two SMART reads would
// otherwise start at that count and never be called rising.
func kernelErrors(snap *biolat.Snapshot, ids map[biolat.Dev]pointIdentity) map[string][]signs.Counter {
	totals := map[string]uint64{}
	names := map[string]string{}
	for _, pi := range ids {
		if pi.hwID != "" {
			totals[pi.hwID] += 0
			names[pi.hwID] = pi.device
		}
	}
	for _, e := range snap.Errors {
		pi, ok := ids[e.Dev]
		if !ok || pi.hwID == "" {
			continue
		}
		totals[pi.hwID] += e.Count
		names[pi.hwID] = pi.device
	}
	out := make(map[string][]signs.Counter, len(totals))
	for id, n := range totals {
		out[id] = []signs.Counter{{Kind: signs.KernelIOErrors, Subject: "kernel-seen I/O errors of " + names[id], Value: n}}
	}
	return out
}

// recordCgroups records the per-cgroup occupancy share (per cgroup and device, over every direction)
// and bytes (read and write) of the folded points.
func recordCgroups(mb *metadata.MetricsBuilder, points []cgPoint, ids map[biolat.Dev]pointIdentity, ts pcommon.Timestamp) {
	type cgDev struct {
		path string
		dev  biolat.Dev
	}
	busy := map[cgDev]float64{}
	total := map[biolat.Dev]float64{}
	var order []cgDev
	for i := range points {
		p := &points[i]
		if _, ok := ids[p.dev]; !ok {
			continue
		}
		k := cgDev{p.path, p.dev}
		if _, seen := busy[k]; !seen {
			order = append(order, k)
		}
		busy[k] += p.busy
		total[p.dev] += p.busy
	}
	for _, k := range order {
		if total[k.dev] > 0 {
			id := ids[k.dev]
			mb.RecordDiskHealthContainerDiskOccupancyShareDataPoint(ts, busy[k]/total[k.dev], k.path, id.device, cgroupOptions(k.path, id)...)
		}
	}
	for i := range points {
		p := &points[i]
		id, ok := ids[p.dev]
		if !ok || (p.direction != biolat.Read && p.direction != biolat.Write) {
			continue
		}
		mb.Reset(metadata.WithStartTime(p.start))
		mb.RecordDiskHealthContainerDiskOperationIoDataPoint(ts, emit.Int(p.bytes), p.path, id.device,
			metadata.MapAttributeDiskIoDirection[p.direction.String()], cgroupOptions(p.path, id)...)
	}
}

// cgroupOptions are a cgroup's point identity beside cgroup.path and system.device: the disk's
// hw.id, and the pod and container its path names.
func cgroupOptions(path string, id pointIdentity) []metadata.MetricAttributeOption {
	o := emit.CgroupOptions(path, metadata.WithK8sPodUIDMetricAttribute, metadata.WithContainerIDMetricAttribute)
	if id.hwID != "" {
		o = append(o, metadata.WithHwIDMetricAttribute(id.hwID))
	}
	return o
}

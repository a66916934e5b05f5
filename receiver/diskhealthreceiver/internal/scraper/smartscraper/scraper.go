package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/store"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
)

// smartScraper reads every disk's SMART data (device.Reader), evaluates its health and emits one
// resource per disk. Health state changes and new bad signs go to the logs pipeline as events.
type smartScraper struct {
	logger *zap.Logger
	mb     *metadata.MetricsBuilder
	stale  *metadata.MetricsBuilder // last values of disks that could not be read, marked stale
	rb     *metadata.ResourceBuilder
	events *emit.Events
	sink   consumer.Logs // nil: events are logged only
	reader *device.Reader
	signs  *signs.Board // other sources' error counters per disk (nil: none)
	disks  map[string]*diskTrack
	// discoveryErr is the last discovery problem logged, so a lasting one is logged once.
	discoveryErr string

	now func() time.Time
	// storage, when set, names the extension that keeps the error-log high-water marks (marks) across
	// restarts; id is this scraper's, the owner of the marks.
	storage *component.ID
	id      component.ID
	// marks is the storage, read and written in the background: a full, locked or hung state
	// directory costs the marks' persistence (one WARN, store.Background), never a scrape's deadline
	// or the collector's start.
	marks *store.Background

	// started is the start time of the cumulative points built by hand from counters that have no
	// start of their own (the cloud histograms).
	started time.Time
	version string

	// drivedb is the drive database the reader names ATA attributes from, reported each read.
	drivedb driveDBInUse

	// cloudLimits and cloudNear are smart.cloud_limits and smart.cloud_near.
	cloudLimits []CloudLimit
	cloudNear   float64

	// status is where the disks this source cannot read are said (disk_health.source.status).
	status *emit.Status
	// readStates emits disk_health.physical_disk.smart.read.status by disk (Disk.Key), logStates
	// disk_health.physical_disk.smart.log.read.status by disk and log.
	readStates *emit.States[string, device.Status]
	logStates  *emit.States[[2]string, device.Status]
}

// newScraper takes the reader configuration apart from cfg, so tests can plug in device doubles.
func newScraper(set scraper.Settings, cfg *Config, dc device.Config, sink consumer.Logs, now func() time.Time) *smartScraper {
	return &smartScraper{
		logger: set.Logger,
		mb:     metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		stale:  metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		rb:     metadata.NewResourceBuilder(cfg.MetricsBuilderConfig.ResourceAttributes),
		events: emit.NewEvents(metadata.ScopeName, set.BuildInfo.Version),
		sink:   sink,
		reader: device.NewReader(dc),
		signs:  cfg.Signs,
		status: cfg.Status,
		disks:  map[string]*diskTrack{},

		readStates: emit.NewStates[string, device.Status](),
		logStates:  emit.NewStates[[2]string, device.Status](),
		now:        now,

		started: now(),
		version: set.BuildInfo.Version,

		cloudLimits: cfg.CloudLimits,
		cloudNear:   cfg.CloudNear,
		// The factory says where the database came from (loadDriveDB); a reader given none names
		// attributes from smart.go's table.
		drivedb: driveDBInUse{db: dc.DriveDB, source: metadata.AttributeDiskHealthDriveDatabaseSourceBuiltIn},
	}
}

// start hands the error-log high-water marks the storage that keeps them across restarts, when one
// is configured.
func (s *smartScraper) start(_ context.Context, host component.Host) error {
	var err error
	s.marks, err = store.Start(host, section+".storage", s.storage, s.id, "nvme_error_log", s.logger, "NVMe error-log high-water marks")
	return err
}

// shutdown waits for reads still in flight (a hung ioctl) until the collector's shutdown deadline.
func (s *smartScraper) shutdown(ctx context.Context) error {
	err := s.reader.Close(ctx)
	if s.marks != nil {
		err = errors.Join(err, s.marks.Close(ctx))
		s.marks = nil
	}
	return err
}

func (s *smartScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	results, derr := s.reader.Collect(ctx)
	if msg := errString(derr); msg != s.discoveryErr {
		s.discoveryErr = msg
		if derr != nil {
			s.logger.Warn("SMART disk discovery was incomplete", zap.Error(derr))
		}
	}
	seen := make(map[string]bool, len(results))
	hists := pmetric.NewMetrics()
	for i := range results {
		res := &results[i]
		key := res.Disk.Key()
		seen[key] = true
		tr := s.disks[key]
		if tr == nil {
			tr = &diskTrack{}
			s.disks[key] = tr
		}
		s.logStatus(res, tr)
		ts := pcommon.NewTimestampFromTime(res.Time)
		res1 := s.resource(res.Disk, res.Snapshot, tr.last)

		if snap := res.Snapshot; snap != nil {
			var verdict *health.Verdict
			if in, ok := healthInput(snap); ok && res.Status == device.StatusOK {
				in.Signs = s.signs.Counters(res.Disk.ID)
				v, h := health.Evaluate(tr.history, in)
				tr.history, verdict = h, &v
				tr.last, tr.lastOK, tr.staleSent = res, res.Time, false
				s.appendEvents(res, res1, v)
			}
			rec := &recorder{mb: s.mb, ts: ts, id: res.Disk.ID, name: res.Disk.Name, namespaces: res.Disk.Namespaces}
			recordValues(rec, snap, verdict)
			if snap.NVMe != nil && res.Status == device.StatusOK {
				s.nvmeExtras(ctx, rec, tr, res, res1)
				s.appendDeviceHistograms(hists, res1, res, tr.nvme)
			}
		} else if tr.last != nil && !tr.staleSent {
			// The values of the last good read are not re-served as current: they go out once more
			// flagged "no recorded value", which backends take as the end of the series.
			recordValues(&recorder{mb: s.stale, ts: ts, id: res.Disk.ID, name: res.Disk.Name, namespaces: tr.last.Disk.Namespaces}, tr.last.Snapshot, &health.Verdict{State: tr.history.State()})
			s.stale.EmitForResource(metadata.WithResource(res1))
			tr.staleSent = true
		}
		emitStatus(s.readStates, key, res.Status, func(st device.Status, v int64) {
			s.mb.RecordDiskHealthPhysicalDiskSmartReadStatusDataPoint(ts, v, res.Disk.ID, res.Disk.Name, physicalDisk, readStatusAttr(st))
		})
		if !tr.lastOK.IsZero() {
			s.mb.RecordDiskHealthPhysicalDiskSmartReadTimeDataPoint(ts, tr.lastOK.Unix(), res.Disk.ID, res.Disk.Name, physicalDisk)
		}
		s.mb.EmitForResource(metadata.WithResource(res1))
	}
	for k := range s.disks {
		if !seen[k] {
			delete(s.disks, k)
		}
	}
	s.readStates.EndScrape()
	s.logStates.EndScrape()
	s.recordStatus(results)

	// The receiver's own point, on a resource of its own: Emit's, after every disk's.
	s.drivedb.record(s.mb, pcommon.NewTimestampFromTime(s.now()))
	md := s.mb.Emit()
	stale := s.stale.Emit()
	markStale(stale)
	stale.ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
	hists.ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())

	return md, s.events.Send(ctx, s.logger, s.sink)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

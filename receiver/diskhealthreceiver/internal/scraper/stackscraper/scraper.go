package stackscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/dm"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/nvmesubsys"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
)

// boardSource is this source's name on the signs board.
const boardSource = "stack"

// stackScraper reads the md arrays, the dm targets and the error counters, evaluates every logical
// disk's health, and posts each physical disk's error counters on the signs board.
type stackScraper struct {
	logger    *zap.Logger
	mb        *metadata.MetricsBuilder
	r         readers
	ids       *diskIDs
	threshold float64
	events    *emit.Events
	sink      consumer.Logs // nil: events are logged only
	board     *signs.Board

	// history is each logical disk's health between scrapes, by hw.id.
	history map[string]health.History
	// series keeps the cumulative counters' start times and the 32-bit ones' extension across wraps.
	series *series
	// nvme keeps each NVMe namespace's best live paths; nvmeOmitted the subsystems last left past the cap.
	nvme        *nvmesubsys.Tracker
	nvmeOmitted int
	// fsStates is each mounted filesystem's last error state, by fsStateKey.
	fsStates map[string]fsErrorState
	// status is each part's last read status, so a lasting one (permission_denied) is logged once.
	status map[metadata.AttributeStackPart]metadata.AttributeStackReadStatus
	// readStates emits disk_health.stack.read.status; memberStates disk_health.logical_disk.md.member.state
	// (by array hw.id and member).
	readStates   *emit.States[metadata.AttributeStackPart, metadata.AttributeStackReadStatus]
	memberStates *emit.States[[2]string, metadata.AttributeDiskHealthMdMemberState]
	// source is where the parts this source cannot read are said (disk_health.source.status).
	source *emit.Status

	now func() time.Time
}

func newScraper(set scraper.Settings, cfg *Config, r readers, sink consumer.Logs, now func() time.Time) *stackScraper {
	started := now()
	return &stackScraper{
		logger: set.Logger, mb: metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set, metadata.WithStartTime(pcommon.NewTimestampFromTime(started))), r: r,
		series: newSeries(started),
		ids:    newDiskIDs(r.sysRoot, r.sys), threshold: cfg.ThinPoolThreshold,
		events: emit.NewEvents(metadata.ScopeName, set.BuildInfo.Version), sink: sink, board: cfg.Signs,
		nvme:    nvmesubsys.NewTracker(),
		history: map[string]health.History{}, status: map[metadata.AttributeStackPart]metadata.AttributeStackReadStatus{},
		readStates:   emit.NewStates[metadata.AttributeStackPart, metadata.AttributeStackReadStatus](),
		memberStates: emit.NewStates[[2]string, metadata.AttributeDiskHealthMdMemberState](),
		source:       cfg.Status, now: now,
	}
}

func (s *stackScraper) shutdown(context.Context) error {
	if s.r.dm != nil {
		return s.r.dm.Close()
	}
	return nil
}

// scrape is one tick: each part records what it could read; a part's failure never stops another.
func (s *stackScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	now := s.now()
	ts := pcommon.NewTimestampFromTime(now)
	sc := &scrape{ts: ts, at: now, seen: map[string]bool{}, board: map[string][]signs.Counter{}}
	if s.r.md != nil {
		s.readPart(sc, metadata.AttributeStackPartMd, s.scrapeMD(ctx, sc))
	}
	if s.r.dm != nil {
		s.readPart(sc, metadata.AttributeStackPartDeviceMapper, s.scrapeDM(ctx, sc))
	}
	if s.r.nvme != nil {
		s.readPart(sc, metadata.AttributeStackPartNvme, s.scrapeNVMe(ctx, sc))
	}
	if s.r.errors {
		s.readPart(sc, metadata.AttributeStackPartErrors, s.scrapeErrors(ctx, sc))
	}
	for id := range s.history {
		if !sc.seen[id] {
			delete(s.history, id)
		}
	}
	s.ids.prune()
	s.series.endScrape(now)
	s.readStates.EndScrape()
	s.memberStates.EndScrape()
	s.board.Publish(boardSource, sc.board)

	md := s.mb.Emit()
	if err := s.events.Send(ctx, s.logger, s.sink); err != nil {
		sc.errs.Add(err)
	}
	return md, sc.errs.Combine()
}

// scrape is what one tick collects besides the metrics.
type scrape struct {
	ts    pcommon.Timestamp
	at    time.Time
	errs  scrapererror.ScrapeErrors
	seen  map[string]bool            // logical disks (hw.id) read in this tick
	board map[string][]signs.Counter // physical disk hw.id → counters for the signs board
}

func (sc *scrape) post(diskID string, c signs.Counter) {
	if diskID != "" {
		sc.board[diskID] = append(sc.board[diskID], c)
	}
}

// partial adds a per-item problem (one array, one device) that did not stop the part.
func (sc *scrape) partial(err error) {
	if err != nil {
		sc.errs.AddPartial(emit.CountErrors(err), err)
	}
}

// readStatus classifies a part's read error.
func readStatus(err error) metadata.AttributeStackReadStatus {
	switch {
	case err == nil:
		return metadata.AttributeStackReadStatusOk
	case errors.Is(err, dm.ErrPermission), errors.Is(err, fs.ErrPermission):
		return metadata.AttributeStackReadStatusPermissionDenied
	case errors.Is(err, dm.ErrUnsupported), errors.Is(err, errAbsent):
		return metadata.AttributeStackReadStatusUnsupported
	case errors.Is(err, bounded.ErrTimeout), errors.Is(err, bounded.ErrInFlight), errors.Is(err, context.DeadlineExceeded):
		return metadata.AttributeStackReadStatusTimeout
	default:
		return metadata.AttributeStackReadStatusError
	}
}

// errAbsent is a part the host does not have (no md driver in the kernel), read as unsupported.
var errAbsent = errors.New("not on this host")

// readPart records a part's read status and logs it when it changes. A refused or unsupported part is
// a status, not a scrape error: the same answer every tick says nothing new. A part the host does not
// have (unsupported) says so at the first scrape and at a change only, not every tick.
func (s *stackScraper) readPart(sc *scrape, part metadata.AttributeStackPart, err error) {
	st := readStatus(err)
	record := func(v metadata.AttributeStackReadStatus, n int64) {
		s.mb.RecordDiskHealthStackReadStatusDataPoint(sc.ts, n, part, v)
	}
	if st == metadata.AttributeStackReadStatusUnsupported {
		s.readStates.EmitOnChange(part, record, st)
	} else {
		s.readStates.Emit(part, record, st)
	}
	prev, seen := s.status[part]
	s.status[part] = st
	s.source.Set(part.String(), sourceState(st), sourceReason(st, err))
	if !seen || prev != st {
		fields := []zap.Field{zap.String("part", part.String()), zap.String("status", st.String())}
		switch st {
		case metadata.AttributeStackReadStatusOk:
			if seen {
				s.logger.Info("Storage stack read works again", fields...)
			}
		case metadata.AttributeStackReadStatusPermissionDenied:
			s.logger.Warn("Storage stack read refused: device-mapper status needs CAP_SYS_ADMIN (run as root or add the capability); md arrays and error counters are read without it", append(fields, zap.Error(err))...)
		case metadata.AttributeStackReadStatusUnsupported:
			s.logger.Info("Storage stack part not available on this host", append(fields, zap.Error(err))...)
		default:
			s.logger.Warn("Storage stack read failed", append(fields, zap.Error(err))...)
		}
	}
	if st == metadata.AttributeStackReadStatusError || st == metadata.AttributeStackReadStatusTimeout {
		sc.partial(err)
	}
}

// sourceState is what a part's read status makes of the source: a part this host does not have is
// no problem of the source.
func sourceState(st metadata.AttributeStackReadStatus) emit.SourceState {
	if st == metadata.AttributeStackReadStatusOk || st == metadata.AttributeStackReadStatusUnsupported {
		return emit.StateOK
	}
	return emit.StateDegraded
}

// sourceReason classifies a part's read error: device-mapper's ioctls need CAP_SYS_ADMIN, refused with
// it held they are a seccomp filter's.
func sourceReason(st metadata.AttributeStackReadStatus, err error) emit.Reason {
	if st != metadata.AttributeStackReadStatusPermissionDenied {
		return emit.ReasonError
	}
	return emit.Refused(err, hasCapability(emit.CapSysAdmin))
}

// hasCapability is emit.HasCapability; tests replace it.
var hasCapability = emit.HasCapability

// hwStates are the states hw.status takes for a logical disk: the semantic conventions allow ok, degraded
// and failed (predicted_failure is a physical disk's; see logicalState).
var hwStates = []struct {
	attr  metadata.AttributeHwState
	state health.State
}{
	{metadata.AttributeHwStateOk, health.OK}, {metadata.AttributeHwStateDegraded, health.Degraded},
	{metadata.AttributeHwStateFailed, health.Failed},
}

// logicalState is the hw.state of a logical disk's verdict: a predicted failure, which the semantic
// conventions allow a physical disk only, is reported as degraded (no logical-disk rule predicts one today).
func logicalState(st health.State) health.State {
	if st == health.PredictedFailure {
		return health.Degraded
	}
	return st
}

// judge evaluates a logical disk, records its hw.status and buffers its events.
func (s *stackScraper) judge(sc *scrape, id, level, label string, d health.LogicalDisk) {
	sc.seen[id] = true
	v, h := health.EvaluateLogical(s.history[id], d)
	s.history[id] = h
	state := logicalState(v.State)
	for _, st := range hwStates {
		s.mb.RecordHwStatusDataPoint(sc.ts, boolInt(st.state == state), id, d.Name, metadata.AttributeHwTypeLogicalDisk, st.attr)
	}
	if len(v.Events) == 0 {
		return
	}
	res := pcommon.NewResource()
	a := res.Attributes()
	a.PutStr("hw.id", id)
	a.PutStr("hw.name", d.Name)
	a.PutStr("hw.type", "logical_disk")
	emit.SetIfNotEmpty(func(v string) { a.PutStr("hw.logical_disk.raid_level", v) }, level)
	for _, e := range v.Events {
		s.events.Append(res, sc.at, s.now(), label, e)
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func clampInt(v uint64) int64 { return int64(min(v, 1<<63-1)) }

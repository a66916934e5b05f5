package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// Event names of the health log records.
const (
	eventStateChange = "disk_health.state_change"
	eventNewSign     = "disk_health.new_sign"
)

// smartScraper reads every disk's SMART data (device.Reader), evaluates its health and emits one
// resource per disk. Health state changes and new bad signs go to the logs pipeline as events.
type smartScraper struct {
	logger *zap.Logger
	mb     *metadata.MetricsBuilder
	stale  *metadata.MetricsBuilder // last values of disks that could not be read, marked stale
	rb     *metadata.ResourceBuilder
	lb     *metadata.LogsBuilder
	logs   consumer.Logs
	reader *device.Reader
	disks  map[string]*diskTrack
	// discoveryErr is the last discovery problem logged, so a lasting one is logged once.
	discoveryErr string
}

// diskTrack is what the scraper remembers of one disk between reads.
type diskTrack struct {
	history health.History
	// last is the last read that produced values; lastOK the time of the last successful read.
	last   *device.Result
	lastOK time.Time
	// staleSent: last's points were already marked stale after a failed read.
	staleSent bool
	status    device.Status
	seen      bool
}

func newSMARTScraper(set receiver.Settings, cfg *Config, logs consumer.Logs) (*smartScraper, error) {
	standby, err := device.ParseStandby(cfg.SMART.Standby)
	if err != nil {
		return nil, err
	}
	match, err := cfg.SMART.match()
	if err != nil {
		return nil, err
	}
	return newSMARTScraperWith(set, cfg, logs, device.Config{
		Root:    rootOf(cfg),
		Timeout: cfg.SMART.Timeout,
		Standby: standby,
		Match:   match,
	}), nil
}

// newSMARTScraperWith takes the reader configuration, so tests can plug in device doubles.
func newSMARTScraperWith(set receiver.Settings, cfg *Config, logs consumer.Logs, dc device.Config) *smartScraper {
	return &smartScraper{
		logger: set.Logger,
		mb:     metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		stale:  metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		rb:     metadata.NewResourceBuilder(cfg.MetricsBuilderConfig.ResourceAttributes),
		lb:     metadata.NewLogsBuilder(set),
		logs:   logs,
		reader: device.NewReader(dc),
		disks:  map[string]*diskTrack{},
	}
}

// shutdown waits for reads still in flight (a hung ioctl) until the collector's shutdown deadline.
func (s *smartScraper) shutdown(ctx context.Context) error {
	return s.reader.Close(ctx)
}

func (s *smartScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	results, derr := s.reader.Read(ctx)
	if msg := errString(derr); msg != s.discoveryErr {
		s.discoveryErr = msg
		if derr != nil {
			s.logger.Warn("SMART disk discovery was incomplete", zap.Error(derr))
		}
	}
	seen := make(map[string]bool, len(results))
	var events []string
	for i := range results {
		res := &results[i]
		key := res.Disk.Name + "\x00" + res.Disk.ID
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
			if res.Status == device.StatusOK && snap.HasHealthData() {
				v, h := health.Evaluate(tr.history, snap.Health())
				tr.history, verdict = h, &v
				tr.last, tr.lastOK, tr.staleSent = res, res.Time, false
				events = s.appendEvents(events, res, res1, v)
			}
			recordValues(s.mb, ts, snap, verdict)
		} else if tr.last != nil && !tr.staleSent {
			// The values of the last good read are not re-served as current: they go out once more
			// flagged "no recorded value", which backends take as the end of the series.
			recordValues(s.stale, ts, tr.last.Snapshot, &health.Verdict{State: tr.history.State()})
			s.stale.EmitForResource(metadata.WithResource(res1))
			tr.staleSent = true
		}
		for _, st := range device.Statuses {
			s.mb.RecordHwPhysicalDiskSmartReadStatusDataPoint(ts, boolInt(st == res.Status), readStatusAttr(st))
		}
		if !tr.lastOK.IsZero() {
			s.mb.RecordHwPhysicalDiskSmartReadTimeDataPoint(ts, tr.lastOK.Unix())
		}
		s.mb.EmitForResource(metadata.WithResource(res1))
	}
	for k := range s.disks {
		if !seen[k] {
			delete(s.disks, k)
		}
	}

	md := s.mb.Emit()
	stale := s.stale.Emit()
	markStale(stale)
	stale.ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())

	var err error
	if len(events) > 0 {
		err = s.sendEvents(ctx, events)
	}
	return md, err
}

// logStatus logs a disk's read outcome when it changes, so a disk without permission says so once, not
// every interval.
func (s *smartScraper) logStatus(res *device.Result, tr *diskTrack) {
	if tr.seen && tr.status == res.Status {
		return
	}
	tr.seen, tr.status = true, res.Status
	fields := []zap.Field{zap.String("disk", res.Disk.Name), zap.String("hw.id", res.Disk.ID), zap.String("status", res.Status.String())}
	switch res.Status {
	case device.StatusOK:
		s.logger.Debug("SMART read", fields...)
	case device.StatusPermissionDenied:
		s.logger.Warn("SMART read refused: run as root or grant CAP_SYS_RAWIO (ATA) and CAP_SYS_ADMIN (NVMe)", append(fields, zap.Error(res.Err))...)
	case device.StatusStandby, device.StatusUnsupported:
		s.logger.Info("SMART not read", append(fields, zap.Error(res.Err))...)
	default:
		s.logger.Warn("SMART read failed", append(fields, zap.Error(res.Err))...)
	}
	if res.Snapshot != nil {
		for _, p := range res.Snapshot.Problems {
			s.logger.Debug("SMART read incomplete", zap.String("disk", res.Disk.Name), zap.Error(p))
		}
	}
}

func (s *smartScraper) appendEvents(out []string, res *device.Result, resource pcommon.Resource, v health.Verdict) []string {
	for _, e := range v.Events {
		lr := plog.NewLogRecord()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(res.Time))
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(time.Now()))
		sev, text := plog.SeverityNumberWarn, "WARN"
		if e.New < e.Old && e.Kind == health.StateChanged {
			sev, text = plog.SeverityNumberInfo, "INFO"
		}
		if e.New == health.Failed {
			sev, text = plog.SeverityNumberError, "ERROR"
		}
		lr.SetSeverityNumber(sev)
		lr.SetSeverityText(text)
		lr.Body().SetStr(diskLabel(res) + ": " + e.Text)
		a := lr.Attributes()
		name := eventStateChange
		if e.Kind == health.NewSign {
			name = eventNewSign
			a.PutStr("disk_health.rule", string(e.Rule))
		}
		a.PutStr("event.name", name)
		a.PutStr("hw.state", e.New.String())
		a.PutStr("disk_health.previous_state", e.Old.String())
		out = append(out, lr.Body().Str())
		s.lb.AppendLogRecord(lr)
		s.lb.EmitForResource(metadata.WithLogsResource(resource))
	}
	return out
}

func (s *smartScraper) sendEvents(ctx context.Context, events []string) error {
	ld := s.lb.Emit()
	for _, e := range events {
		s.logger.Info("disk health event", zap.String("event", e))
	}
	if s.logs == nil {
		return nil
	}
	if err := s.logs.ConsumeLogs(ctx, ld); err != nil {
		return fmt.Errorf("sending %d disk health events: %w", len(events), err)
	}
	return nil
}

// diskLabel names a disk for people: "sda (ST4000DM004-2CV104, serial ZFN0TEST)".
func diskLabel(res *device.Result) string {
	model, serial, _ := identityStrings(res.Disk, res.Snapshot)
	var parts []string
	if model != "" {
		parts = append(parts, model)
	}
	if serial != "" {
		parts = append(parts, "serial "+serial)
	}
	if len(parts) == 0 {
		return res.Disk.Name
	}
	return res.Disk.Name + " (" + strings.Join(parts, ", ") + ")"
}

// identityStrings prefers what the drive itself reports (sysfs truncates ATA models to 16 characters).
func identityStrings(d device.Disk, snap *device.Snapshot) (model, serial, firmware string) {
	model, serial, firmware = d.Identity.Model, d.Identity.Serial, d.Identity.Firmware
	if snap == nil {
		return
	}
	switch {
	case snap.ATA != nil && snap.ATA.Identity != nil:
		id := snap.ATA.Identity
		model, serial, firmware = id.Model, id.Serial, id.Firmware
	case snap.NVMe != nil && snap.NVMe.Controller != nil:
		c := snap.NVMe.Controller
		model, serial, firmware = c.Model, c.Serial, c.Firmware
	}
	return
}

func (s *smartScraper) resource(d device.Disk, snap *device.Snapshot, last *device.Result) pcommon.Resource {
	if snap == nil && last != nil {
		snap = last.Snapshot
	}
	rb := s.rb
	rb.SetHwID(d.ID)
	rb.SetHwName(d.Name)
	rb.SetHwTypePhysicalDisk()
	switch d.Protocol {
	case device.ProtocolATA:
		rb.SetDiskProtocolAta()
	case device.ProtocolNVMe:
		rb.SetDiskProtocolNvme()
	case device.ProtocolSCSI:
		rb.SetDiskProtocolScsi()
	default:
		rb.SetDiskProtocolNone()
	}
	model, serial, firmware := identityStrings(d, snap)
	setIfNotEmpty(rb.SetHwModel, model)
	setIfNotEmpty(rb.SetHwSerialNumber, serial)
	setIfNotEmpty(rb.SetHwFirmwareVersion, firmware)
	setIfNotEmpty(rb.SetDiskWwn, d.Identity.WWN)
	rot := d.Identity.Rotational
	if d.Protocol == device.ProtocolNVMe {
		rot = 0
	}
	if snap != nil && snap.ATA != nil && snap.ATA.Identity != nil {
		switch r := snap.ATA.Identity.RotationRate; {
		case r == 1:
			rot = 0
			rb.SetDiskRotationRate(0) // smartctl's rotation_rate for a solid state device
		case r > 1:
			rot = 1
			rb.SetDiskRotationRate(int64(r))
		}
	}
	switch rot {
	case 0:
		rb.SetHwPhysicalDiskTypeSSD()
	case 1:
		rb.SetHwPhysicalDiskTypeHDD()
	}
	return rb.Emit()
}

// recordValues records everything a snapshot holds; verdict, when set, adds hw.status.
func recordValues(mb *metadata.MetricsBuilder, ts pcommon.Timestamp, snap *device.Snapshot, verdict *health.Verdict) {
	if verdict != nil {
		for _, st := range []health.State{health.OK, health.Degraded, health.PredictedFailure, health.Failed} {
			mb.RecordHwStatusDataPoint(ts, boolInt(verdict.State == st), hwStateAttr(st))
		}
	}
	temp := &tempRecorder{mb: mb, ts: ts}
	if a := snap.ATA; a != nil {
		if a.Identity != nil && a.Identity.Capacity() > 0 {
			mb.RecordHwPhysicalDiskSizeDataPoint(ts, clampInt(a.Identity.Capacity()))
		}
		recordATA(mb, ts, a, temp)
	}
	if n := snap.NVMe; n != nil {
		recordNVMe(mb, ts, n, temp)
	}
	if sc := snap.SCSI; sc != nil {
		if sc.Capacity != nil {
			mb.RecordHwPhysicalDiskSizeDataPoint(ts, clampInt(sc.Capacity.Bytes()))
		}
		if t := sc.Temperature; t != nil {
			if t.HasCurrent {
				temp.current(float64(t.Current))
			}
			if t.HasReference && t.Reference > 0 {
				temp.limit(float64(t.Reference), metadata.AttributeHwLimitTypeHighDegraded)
			}
		}
		for _, c := range sc.ErrorCounters {
			if !c.TotalUncorrected.Valid {
				continue
			}
			if et, ok := scsiErrorType[c.Page]; ok {
				mb.RecordHwErrorsDataPoint(ts, clampInt(c.TotalUncorrected.Value), et)
			}
		}
	}
	// hwmon only fills in what SMART could not say (it reads the same sensor and limits).
	if h := snap.Hwmon; h != nil {
		temp.current(h.Current)
		if h.HasMax {
			temp.limit(h.Max, metadata.AttributeHwLimitTypeHighDegraded)
		}
		if h.HasCrit {
			temp.limit(h.Crit, metadata.AttributeHwLimitTypeHighCritical)
		}
	}
}

// tempRecorder records a disk's temperature and each limit once, from the first source that has it.
type tempRecorder struct {
	mb      *metadata.MetricsBuilder
	ts      pcommon.Timestamp
	hasTemp bool
	limits  [2]bool // high.degraded, high.critical
}

func (r *tempRecorder) current(c float64) {
	if !r.hasTemp {
		r.mb.RecordHwTemperatureDataPoint(r.ts, c)
		r.hasTemp = true
	}
}

func (r *tempRecorder) limit(c float64, t metadata.AttributeHwLimitType) {
	i := 0
	if t == metadata.AttributeHwLimitTypeHighCritical {
		i = 1
	}
	if !r.limits[i] {
		r.mb.RecordHwTemperatureLimitDataPoint(r.ts, c, t)
		r.limits[i] = true
	}
}

var scsiErrorType = map[uint8]metadata.AttributeErrorType{
	0x02: metadata.AttributeErrorTypeUncorrectedWrite,
	0x03: metadata.AttributeErrorTypeUncorrectedRead,
	0x05: metadata.AttributeErrorTypeUncorrectedVerify,
}

// ataErrorAttrs are the attributes counted as hw.errors (their decoded raw value).
var ataErrorAttrs = map[uint8]metadata.AttributeErrorType{
	187: metadata.AttributeErrorTypeReportedUncorrectable,
	188: metadata.AttributeErrorTypeCommandTimeout,
	199: metadata.AttributeErrorTypeCrc,
}

func recordATA(mb *metadata.MetricsBuilder, ts pcommon.Timestamp, a *device.ATAData, temp *tempRecorder) {
	for i := range a.Attributes {
		at := &a.Attributes[i]
		name, id := at.Name, int64(at.ID)
		mb.RecordHwPhysicalDiskSmartDataPoint(ts, at.Raw.Value, name, id)
		mb.RecordHwPhysicalDiskSmartNormalizedDataPoint(ts, int64(at.Value), name, id)
		mb.RecordHwPhysicalDiskSmartWorstDataPoint(ts, int64(at.Worst), name, id)
		if at.HasThreshold {
			mb.RecordHwPhysicalDiskSmartThresholdDataPoint(ts, int64(at.Threshold), name, id)
		}
		if et, ok := ataErrorAttrs[at.ID]; ok {
			mb.RecordHwErrorsDataPoint(ts, at.Raw.Value, et)
		}
	}
	if d, ok := a.Attributes.PowerOn(); ok {
		mb.RecordHwPhysicalDiskPowerOnTimeDataPoint(ts, int64(d/time.Second))
	} else if h, ok := a.Stats.Get(ata.StatPowerOnHours); ok {
		mb.RecordHwPhysicalDiskPowerOnTimeDataPoint(ts, clampInt(h)*3600)
	}
	if n, ok := a.Attributes.PowerCycles(); ok {
		mb.RecordHwPhysicalDiskPowerCyclesDataPoint(ts, n)
	} else if n, ok := a.Stats.Get(ata.StatLifetimePowerOnResets); ok {
		mb.RecordHwPhysicalDiskPowerCyclesDataPoint(ts, clampInt(n))
	}
	if t, ok := a.Attributes.Temperature(); ok {
		temp.current(float64(t))
	} else if t, ok := a.Stats.Temperature(ata.StatCurrentTemperature); ok {
		temp.current(float64(t))
	}
	if t, ok := a.Stats.Temperature(ata.StatMaxOperatingTemp); ok {
		temp.limit(float64(t), metadata.AttributeHwLimitTypeHighDegraded)
	}
	if a.ErrorLog != nil {
		mb.RecordHwErrorsDataPoint(ts, int64(a.ErrorLog.ErrorCount), metadata.AttributeErrorTypeErrorLogEntry)
	}
	if pu, ok := a.Stats.Get(ata.StatPercentageUsed); ok {
		mb.RecordHwPhysicalDiskEnduranceUtilizationDataPoint(ts, remaining(pu), metadata.AttributeHwPhysicalDiskStateRemaining)
	}
	if a.Identity != nil {
		size := uint64(max(a.Identity.LogicalSectorSize, 512))
		if n, ok := a.Stats.Get(ata.StatLogicalSectorsRead); ok {
			mb.RecordHwPhysicalDiskIoDataPoint(ts, clampInt(sat(n, size)), metadata.AttributeDiskIoDirectionRead)
		}
		if n, ok := a.Stats.Get(ata.StatLogicalSectorsWritten); ok {
			mb.RecordHwPhysicalDiskIoDataPoint(ts, clampInt(sat(n, size)), metadata.AttributeDiskIoDirectionWrite)
		}
	}
}

// nvmeWarnings maps the critical warning bits to their attribute values.
var nvmeWarnings = []struct {
	bit  nvme.CriticalWarning
	attr metadata.AttributeNvmeCriticalWarning
}{
	{nvme.WarnSpareBelowThreshold, metadata.AttributeNvmeCriticalWarningSpareBelowThreshold},
	{nvme.WarnTemperature, metadata.AttributeNvmeCriticalWarningTemperature},
	{nvme.WarnReliability, metadata.AttributeNvmeCriticalWarningReliabilityDegraded},
	{nvme.WarnReadOnly, metadata.AttributeNvmeCriticalWarningReadOnly},
	{nvme.WarnVolatileBackup, metadata.AttributeNvmeCriticalWarningVolatileBackupFailed},
	{nvme.WarnPMRReadOnly, metadata.AttributeNvmeCriticalWarningPmrUnreliable},
}

func recordNVMe(mb *metadata.MetricsBuilder, ts pcommon.Timestamp, n *device.NVMeData, temp *tempRecorder) {
	if c := n.Controller; c != nil {
		size := u128(c.TotalCapacity)
		if size == 0 {
			for _, ns := range n.Namespaces {
				if ns != nil {
					size = min(size+clampInt(ns.SizeBytes()), math.MaxInt64)
				}
			}
		}
		if size > 0 {
			mb.RecordHwPhysicalDiskSizeDataPoint(ts, size)
		}
		if w, ok := c.WarningTemp.Celsius(); ok {
			temp.limit(float64(w), metadata.AttributeHwLimitTypeHighDegraded)
		}
		if cc, ok := c.CriticalTemp.Celsius(); ok {
			temp.limit(float64(cc), metadata.AttributeHwLimitTypeHighCritical)
		}
	}
	l := n.Log
	if l == nil {
		return
	}
	for _, w := range nvmeWarnings {
		mb.RecordHwPhysicalDiskNvmeCriticalWarningDataPoint(ts, boolInt(l.CriticalWarning.Has(w.bit)), w.attr)
	}
	if t, ok := l.Temperature.Celsius(); ok {
		temp.current(float64(t))
	}
	mb.RecordHwPhysicalDiskSpareAvailableDataPoint(ts, float64(l.AvailableSpare)/100)
	mb.RecordHwPhysicalDiskSpareThresholdDataPoint(ts, float64(l.SpareThreshold)/100)
	mb.RecordHwPhysicalDiskEnduranceUtilizationDataPoint(ts, remaining(uint64(l.PercentageUsed)), metadata.AttributeHwPhysicalDiskStateRemaining)
	mb.RecordHwPhysicalDiskPowerOnTimeDataPoint(ts, min(u128(l.PowerOnHours), math.MaxInt64/3600)*3600)
	mb.RecordHwPhysicalDiskPowerCyclesDataPoint(ts, u128(l.PowerCycles))
	mb.RecordHwPhysicalDiskUnsafeShutdownsDataPoint(ts, u128(l.UnsafeShutdowns))
	mb.RecordHwPhysicalDiskIoDataPoint(ts, u128(l.BytesRead()), metadata.AttributeDiskIoDirectionRead)
	mb.RecordHwPhysicalDiskIoDataPoint(ts, u128(l.BytesWritten()), metadata.AttributeDiskIoDirectionWrite)
	mb.RecordHwErrorsDataPoint(ts, u128(l.MediaErrors), metadata.AttributeErrorTypeMedia)
	mb.RecordHwErrorsDataPoint(ts, u128(l.ErrorLogEntries), metadata.AttributeErrorTypeErrorLogEntry)
}

// markStale turns every data point into "no recorded value" (a staleness marker).
func markStale(md pmetric.Metrics) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				var dps pmetric.NumberDataPointSlice
				switch m := ms.At(k); m.Type() {
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				default:
					continue
				}
				for l := range dps.Len() {
					dp := dps.At(l)
					dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
					if dp.ValueType() == pmetric.NumberDataPointValueTypeDouble {
						dp.SetDoubleValue(0)
					} else {
						dp.SetIntValue(0)
					}
				}
			}
		}
	}
}

// remaining is the endurance left for a percentage-used value, 0-1.
func remaining(pu uint64) float64 { return math.Max(0, 1-float64(pu)/100) }

func u128(v nvme.Uint128) int64 {
	u, _ := v.Uint64()
	return clampInt(u)
}

func clampInt(v uint64) int64 { return int64(min(v, math.MaxInt64)) }

// sat multiplies, saturating at the largest uint64.
func sat(a, b uint64) uint64 {
	if b != 0 && a > math.MaxUint64/b {
		return math.MaxUint64
	}
	return a * b
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func hwStateAttr(s health.State) metadata.AttributeHwState {
	switch s {
	case health.Degraded:
		return metadata.AttributeHwStateDegraded
	case health.PredictedFailure:
		return metadata.AttributeHwStatePredictedFailure
	case health.Failed:
		return metadata.AttributeHwStateFailed
	}
	return metadata.AttributeHwStateOk
}

func readStatusAttr(s device.Status) metadata.AttributeSmartReadStatus {
	switch s {
	case device.StatusStandby:
		return metadata.AttributeSmartReadStatusStandbySkipped
	case device.StatusPermissionDenied:
		return metadata.AttributeSmartReadStatusPermissionDenied
	case device.StatusUnsupported:
		return metadata.AttributeSmartReadStatusUnsupported
	case device.StatusTimeout:
		return metadata.AttributeSmartReadStatusTimeout
	case device.StatusError:
		return metadata.AttributeSmartReadStatusError
	}
	return metadata.AttributeSmartReadStatusOk
}

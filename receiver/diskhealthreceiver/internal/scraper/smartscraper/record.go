package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"math"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// recorder records one disk's points at one time, each carrying the disk's identity (hw.id, hw.name, and
// hw.type where the semantic conventions give the metric one) as they require for hardware metrics: a backend that drops resource
// attributes (Datadog's OTLP ingest by default) still keeps every disk's series apart.
type recorder struct {
	mb       *metadata.MetricsBuilder
	ts       pcommon.Timestamp
	id, name string
	// namespaces are an NVMe controller's namespaces (device.Disk's), parallel to NVMeData.Namespaces.
	namespaces []device.Namespace
}

const physicalDisk = metadata.AttributeHwTypePhysicalDisk

// recordValues records everything a snapshot holds; verdict, when set, adds hw.status.
func recordValues(r *recorder, snap *device.Snapshot, verdict *health.Verdict) {
	if verdict != nil {
		for _, st := range []health.State{health.OK, health.Degraded, health.PredictedFailure, health.Failed} {
			r.mb.RecordHwStatusDataPoint(r.ts, boolInt(verdict.State == st), r.id, r.name, physicalDisk, hwStateAttr(st))
		}
	}
	temp := &tempRecorder{recorder: r}
	if a := snap.ATA; a != nil {
		if a.Identity != nil && a.Identity.Capacity() > 0 {
			r.mb.RecordHwPhysicalDiskSizeDataPoint(r.ts, clampInt(a.Identity.Capacity()), r.id, r.name)
		}
		recordATA(r, a, temp)
	}
	if n := snap.NVMe; n != nil {
		recordNVMe(r, n, temp)
	}
	if sc := snap.SCSI; sc != nil {
		if sc.Capacity != nil {
			r.mb.RecordHwPhysicalDiskSizeDataPoint(r.ts, clampInt(sc.Capacity.Bytes()), r.id, r.name)
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
				r.mb.RecordHwErrorsDataPoint(r.ts, clampInt(c.TotalUncorrected.Value), r.id, r.name, physicalDisk, et)
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

// tempRecorder records a disk's temperature and each limit once, from the first source that has it, as
// the semantic conventions model a temperature: on a sensor component of its own (hw.id
// "<disk hw.id>/temperature/composite", hw.sensor_location composite) whose hw.parent is the disk. Every
// source reads the same sensor, the drive's overall (NVMe: composite) temperature, so its identity does
// not change with the source that answered.
type tempRecorder struct {
	*recorder
	hasTemp bool
	limits  [2]bool // high.degraded, high.critical
}

// sensorLocation is hw.sensor_location of the one temperature sensor a disk reports.
const sensorLocation = "composite"

// sensorID is the temperature sensor's hw.id, derived from its disk's.
func (r *tempRecorder) sensorID() string { return r.id + "/temperature/" + sensorLocation }

// sensorName is the temperature sensor's hw.name: its disk's name and its location.
func (r *tempRecorder) sensorName() string { return r.name + " " + sensorLocation }

func (r *tempRecorder) current(c float64) {
	if !r.hasTemp {
		r.mb.RecordHwTemperatureDataPoint(r.ts, c, r.sensorID(), r.sensorName(), r.id, metadata.AttributeHwSensorLocationComposite)
		r.hasTemp = true
	}
}

func (r *tempRecorder) limit(c float64, t metadata.AttributeHwLimitType) {
	i := 0
	if t == metadata.AttributeHwLimitTypeHighCritical {
		i = 1
	}
	if !r.limits[i] {
		r.mb.RecordHwTemperatureLimitDataPoint(r.ts, c, r.sensorID(), r.sensorName(), r.id, metadata.AttributeHwSensorLocationComposite, t)
		r.limits[i] = true
	}
}

var scsiErrorType = map[uint8]metadata.AttributeErrorType{
	0x02: metadata.AttributeErrorTypeUncorrectedWrite,
	0x03: metadata.AttributeErrorTypeUncorrectedRead,
	0x05: metadata.AttributeErrorTypeUncorrectedVerify,
}

// ataErrorMeanings are the attribute meanings counted as hw.errors (the
// decoded raw value of the first attribute carrying each): 187, 188 and 199
// by default, but chosen by what the drive database names them on that
// drive, so a family whose 199 counts host writes reports no CRC errors from
// it, and one that keeps its CRC count in 210 does.
var ataErrorMeanings = [...]struct {
	m  ata.Meaning
	et metadata.AttributeErrorType
}{
	{ata.MeaningReportedUncorrectable, metadata.AttributeErrorTypeReportedUncorrectable},
	{ata.MeaningCommandTimeouts, metadata.AttributeErrorTypeCommandTimeout},
	{ata.MeaningCRCErrors, metadata.AttributeErrorTypeCrc},
}

func recordATA(r *recorder, a *device.ATAData, temp *tempRecorder) {
	for i := range a.Attributes {
		at := &a.Attributes[i]
		name, id := at.Name, int64(at.ID)
		r.mb.RecordHwPhysicalDiskSmartDataPoint(r.ts, at.Raw.Value, r.id, r.name, name, id)
		r.mb.RecordDiskHealthPhysicalDiskSmartNormalizedDataPoint(r.ts, int64(at.Value), r.id, r.name, physicalDisk, name, id)
		r.mb.RecordDiskHealthPhysicalDiskSmartWorstDataPoint(r.ts, int64(at.Worst), r.id, r.name, physicalDisk, name, id)
		if at.HasThreshold {
			r.mb.RecordDiskHealthPhysicalDiskSmartThresholdDataPoint(r.ts, int64(at.Threshold), r.id, r.name, physicalDisk, name, id)
		}
	}
	for _, em := range ataErrorMeanings {
		if at, ok := a.Attributes.First(em.m); ok {
			r.mb.RecordHwErrorsDataPoint(r.ts, at.Raw.Value, r.id, r.name, physicalDisk, em.et)
		}
	}
	if d, ok := a.Attributes.PowerOn(); ok {
		r.mb.RecordDiskHealthPhysicalDiskPowerOnTimeDataPoint(r.ts, int64(d/time.Second), r.id, r.name, physicalDisk)
	} else if h, ok := a.Stats.Get(ata.StatPowerOnHours); ok {
		r.mb.RecordDiskHealthPhysicalDiskPowerOnTimeDataPoint(r.ts, clampInt(h)*3600, r.id, r.name, physicalDisk)
	}
	if n, ok := a.Attributes.PowerCycles(); ok {
		r.mb.RecordDiskHealthPhysicalDiskPowerCyclesDataPoint(r.ts, n, r.id, r.name, physicalDisk)
	} else if n, ok := a.Stats.Get(ata.StatLifetimePowerOnResets); ok {
		r.mb.RecordDiskHealthPhysicalDiskPowerCyclesDataPoint(r.ts, clampInt(n), r.id, r.name, physicalDisk)
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
		r.mb.RecordHwErrorsDataPoint(r.ts, int64(a.ErrorLog.ErrorCount), r.id, r.name, physicalDisk, metadata.AttributeErrorTypeErrorLogEntry)
	}
	if pu, ok := a.Stats.Get(ata.StatPercentageUsed); ok {
		r.mb.RecordHwPhysicalDiskEnduranceUtilizationDataPoint(r.ts, remaining(pu), r.id, r.name, metadata.AttributeHwPhysicalDiskStateRemaining)
	} else if left, _, ok := a.Attributes.LifeLeft(); ok {
		// No device statistic: the attribute the drive database names as
		// life left (a Phison SSD's 231, a Crucial's 202), normalized 0-100.
		r.mb.RecordHwPhysicalDiskEnduranceUtilizationDataPoint(r.ts, float64(left)/100, r.id, r.name, metadata.AttributeHwPhysicalDiskStateRemaining)
	}
	if a.Identity != nil {
		size := uint64(max(a.Identity.LogicalSectorSize, 512))
		if n, ok := a.Stats.Get(ata.StatLogicalSectorsRead); ok {
			r.mb.RecordDiskHealthPhysicalDiskIoDataPoint(r.ts, clampInt(sat(n, size)), r.id, r.name, physicalDisk, metadata.AttributeDiskIoDirectionRead)
		}
		if n, ok := a.Stats.Get(ata.StatLogicalSectorsWritten); ok {
			r.mb.RecordDiskHealthPhysicalDiskIoDataPoint(r.ts, clampInt(sat(n, size)), r.id, r.name, physicalDisk, metadata.AttributeDiskIoDirectionWrite)
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

func recordNVMe(r *recorder, n *device.NVMeData, temp *tempRecorder) {
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
			r.mb.RecordHwPhysicalDiskSizeDataPoint(r.ts, size, r.id, r.name)
		}
		if w, ok := c.WarningTemp.Celsius(); ok {
			temp.limit(float64(w), metadata.AttributeHwLimitTypeHighDegraded)
		}
		if cc, ok := c.CriticalTemp.Celsius(); ok {
			temp.limit(float64(cc), metadata.AttributeHwLimitTypeHighCritical)
		}
	}
	recordNamespaces(r, n)
	l := n.Log
	if l == nil {
		return
	}
	for _, w := range nvmeWarnings {
		r.mb.RecordDiskHealthPhysicalDiskNvmeCriticalWarningDataPoint(r.ts, boolInt(l.CriticalWarning.Has(w.bit)), r.id, r.name, physicalDisk, w.attr)
	}
	if t, ok := l.Temperature.Celsius(); ok {
		temp.current(float64(t))
	}
	r.mb.RecordDiskHealthPhysicalDiskSpareAvailableDataPoint(r.ts, float64(l.AvailableSpare)/100, r.id, r.name, physicalDisk)
	r.mb.RecordDiskHealthPhysicalDiskSpareThresholdDataPoint(r.ts, float64(l.SpareThreshold)/100, r.id, r.name, physicalDisk)
	r.mb.RecordHwPhysicalDiskEnduranceUtilizationDataPoint(r.ts, remaining(uint64(l.PercentageUsed)), r.id, r.name, metadata.AttributeHwPhysicalDiskStateRemaining)
	r.mb.RecordDiskHealthPhysicalDiskPowerOnTimeDataPoint(r.ts, min(u128(l.PowerOnHours), math.MaxInt64/3600)*3600, r.id, r.name, physicalDisk)
	r.mb.RecordDiskHealthPhysicalDiskPowerCyclesDataPoint(r.ts, u128(l.PowerCycles), r.id, r.name, physicalDisk)
	r.mb.RecordDiskHealthPhysicalDiskUnsafeShutdownsDataPoint(r.ts, u128(l.UnsafeShutdowns), r.id, r.name, physicalDisk)
	r.mb.RecordDiskHealthPhysicalDiskIoDataPoint(r.ts, u128(l.BytesRead()), r.id, r.name, physicalDisk, metadata.AttributeDiskIoDirectionRead)
	r.mb.RecordDiskHealthPhysicalDiskIoDataPoint(r.ts, u128(l.BytesWritten()), r.id, r.name, physicalDisk, metadata.AttributeDiskIoDirectionWrite)
	r.mb.RecordHwErrorsDataPoint(r.ts, u128(l.MediaErrors), r.id, r.name, physicalDisk, metadata.AttributeErrorTypeMedia)
	r.mb.RecordHwErrorsDataPoint(r.ts, u128(l.ErrorLogEntries), r.id, r.name, physicalDisk, metadata.AttributeErrorTypeErrorLogEntry)
	if o := n.OCP; o != nil {
		recordOCP(r, o)
	}
	if a := n.Amazon; a != nil {
		recordAmazon(r, a)
	}
	if t := n.Telemetry; t != nil {
		r.mb.RecordDiskHealthPhysicalDiskNvmeTelemetryAvailableDataPoint(r.ts, boolInt(t.Available), r.id, r.name, physicalDisk)
	}
}

// recordNamespaces records each namespace's size under the namespace's own hw.id (its block device's,
// as the I/O source has it), and for a thin provisioned one its capacity and what it has allocated. A
// namespace without thin provisioning gets no capacity (NCAP is NSZE) and no usage (NUSE is NCAP).
func recordNamespaces(r *recorder, n *device.NVMeData) {
	for i, ns := range n.Namespaces {
		if ns == nil || ns.LBASize == 0 || i >= len(r.namespaces) {
			continue // unreadable or inactive
		}
		d := &r.namespaces[i]
		id, nsid := d.ID, int64(d.NSID)
		if id == "" {
			id = r.id
		}
		r.mb.RecordDiskHealthNvmeNamespaceSizeDataPoint(r.ts, clampInt(ns.SizeBytes()), id, d.Name, physicalDisk, r.id, nsid)
		if !ns.ThinProvisioned() {
			continue
		}
		r.mb.RecordDiskHealthNvmeNamespaceCapacityDataPoint(r.ts, clampInt(ns.CapacityBytes()), id, d.Name, physicalDisk, r.id, nsid)
		if i >= len(n.UsageStale) || !n.UsageStale[i] {
			r.mb.RecordDiskHealthNvmeNamespaceUsageDataPoint(r.ts, clampInt(ns.UtilizationBytes()), id, d.Name, physicalDisk, r.id, nsid)
		}
	}
}

func recordOCP(r *recorder, o *nvme.OCPSMARTLog) {
	r.mb.RecordDiskHealthPhysicalDiskMediaIoDataPoint(r.ts, u128(o.PhysicalMediaRead), r.id, r.name, physicalDisk, metadata.AttributeDiskIoDirectionRead)
	r.mb.RecordDiskHealthPhysicalDiskMediaIoDataPoint(r.ts, u128(o.PhysicalMediaWritten), r.id, r.name, physicalDisk, metadata.AttributeDiskIoDirectionWrite)
	r.mb.RecordDiskHealthPhysicalDiskBadBlocksDataPoint(r.ts, clampInt(o.BadUserNANDBlocks.Raw), r.id, r.name, physicalDisk, metadata.AttributeDiskHealthPhysicalDiskBlockAreaUser)
	r.mb.RecordDiskHealthPhysicalDiskBadBlocksDataPoint(r.ts, clampInt(o.BadSystemNANDBlocks.Raw), r.id, r.name, physicalDisk, metadata.AttributeDiskHealthPhysicalDiskBlockAreaSystem)
	if o.HasCapacitor() {
		r.mb.RecordDiskHealthPhysicalDiskCapacitorHealthDataPoint(r.ts, float64(o.CapacitorHealth)/100, r.id, r.name, physicalDisk)
	}
	r.mb.RecordDiskHealthPhysicalDiskThrottlingEventsDataPoint(r.ts, int64(o.ThermalThrottleEvents), r.id, r.name, physicalDisk)
	errs := []struct {
		v  uint64
		et metadata.AttributeDiskHealthPhysicalDiskOcpErrorType
	}{
		{o.XORRecoveries, metadata.AttributeDiskHealthPhysicalDiskOcpErrorTypeXorRecovery},
		{o.UncorrectableReads, metadata.AttributeDiskHealthPhysicalDiskOcpErrorTypeUncorrectableRead},
		{o.SoftECCErrors, metadata.AttributeDiskHealthPhysicalDiskOcpErrorTypeSoftEcc},
		{uint64(o.EndToEndDetected), metadata.AttributeDiskHealthPhysicalDiskOcpErrorTypeEndToEndDetected},
		{uint64(o.EndToEndCorrected), metadata.AttributeDiskHealthPhysicalDiskOcpErrorTypeEndToEndCorrected},
		{o.PCIeCorrectableErrors, metadata.AttributeDiskHealthPhysicalDiskOcpErrorTypePcieCorrectable},
	}
	if o.Version >= nvme.OCPSMARTVersionDie {
		errs = append(errs, []struct {
			v  uint64
			et metadata.AttributeDiskHealthPhysicalDiskOcpErrorType
		}{
			{uint64(o.CommandTimeouts), metadata.AttributeDiskHealthPhysicalDiskOcpErrorTypeCommandTimeout},
			{o.SysAreaProgramFails.Raw, metadata.AttributeDiskHealthPhysicalDiskOcpErrorTypeSystemAreaProgramFail},
			{o.SysAreaUncorrReads.Raw, metadata.AttributeDiskHealthPhysicalDiskOcpErrorTypeSystemAreaUncorrectableRead},
			{o.SysAreaEraseFails.Raw, metadata.AttributeDiskHealthPhysicalDiskOcpErrorTypeSystemAreaEraseFail},
		}...)
		r.mb.RecordDiskHealthPhysicalDiskMediaDiesOfflineDataPoint(r.ts, int64(o.MediaDiesOffline), r.id, r.name, physicalDisk)
	}
	for _, e := range errs {
		r.mb.RecordDiskHealthPhysicalDiskOcpErrorsDataPoint(r.ts, clampInt(e.v), r.id, r.name, physicalDisk, e.et)
	}
}

func recordAmazon(r *recorder, a *nvme.AmazonStats) {
	for _, d := range []struct {
		dir        metadata.AttributeDiskIoDirection
		ops, bytes uint64
		time       time.Duration
	}{
		{metadata.AttributeDiskIoDirectionRead, a.ReadOps, a.ReadBytes, a.ReadTime},
		{metadata.AttributeDiskIoDirectionWrite, a.WriteOps, a.WriteBytes, a.WriteTime},
	} {
		r.mb.RecordDiskHealthPhysicalDiskCloudOperationsDataPoint(r.ts, clampInt(d.ops), r.id, r.name, physicalDisk, d.dir)
		r.mb.RecordDiskHealthPhysicalDiskCloudIoDataPoint(r.ts, clampInt(d.bytes), r.id, r.name, physicalDisk, d.dir)
		r.mb.RecordDiskHealthPhysicalDiskCloudOperationTimeDataPoint(r.ts, d.time.Seconds(), r.id, r.name, physicalDisk, d.dir)
	}
	limits := []struct {
		v time.Duration
		l metadata.AttributeDiskHealthPhysicalDiskCloudLimit
	}{
		{a.InstanceIOPSExceeded, metadata.AttributeDiskHealthPhysicalDiskCloudLimitInstanceIops},
		{a.InstanceThroughputExceeded, metadata.AttributeDiskHealthPhysicalDiskCloudLimitInstanceThroughput},
	}
	// An instance store has no volume limits: their fields are not kept.
	if a.Kind == nvme.AmazonEBS {
		limits = append(limits, []struct {
			v time.Duration
			l metadata.AttributeDiskHealthPhysicalDiskCloudLimit
		}{
			{a.VolumeIOPSExceeded, metadata.AttributeDiskHealthPhysicalDiskCloudLimitVolumeIops},
			{a.VolumeThroughputExceeded, metadata.AttributeDiskHealthPhysicalDiskCloudLimitVolumeThroughput},
		}...)
	}
	for _, l := range limits {
		r.mb.RecordDiskHealthPhysicalDiskCloudLimitExceededTimeDataPoint(r.ts, l.v.Seconds(), r.id, r.name, physicalDisk, l.l)
	}
	r.mb.RecordDiskHealthPhysicalDiskCloudQueueLengthDataPoint(r.ts, clampInt(a.QueueLength), r.id, r.name, physicalDisk)
}

// nvmeLogAttr maps device.LogRead names onto nvme.log values.
var nvmeLogAttr = map[string]metadata.AttributeNvmeLog{
	device.LogErrorInformation: metadata.AttributeNvmeLogErrorInformation,
	device.LogTelemetry:        metadata.AttributeNvmeLogTelemetryController,
	device.LogOCPSMART:         metadata.AttributeNvmeLogOcpSmart,
	device.LogOCPLatency:       metadata.AttributeNvmeLogOcpLatency,
	device.LogAmazon:           metadata.AttributeNvmeLogAmazon,
}

// recordLogStatus records the outcome of each optional log read this time, by disk (Disk.Key) and log.
func recordLogStatus(r *recorder, n *device.NVMeData, states *emit.States[[2]string, device.Status], disk string) {
	for _, o := range n.Optional {
		log, ok := nvmeLogAttr[o.Log]
		if !ok {
			continue
		}
		emitStatus(states, [2]string{disk, o.Log}, o.Status, func(st device.Status, v int64) {
			r.mb.RecordDiskHealthPhysicalDiskSmartLogReadStatusDataPoint(r.ts, v, r.id, r.name, physicalDisk, log, readStatusAttr(st))
		})
	}
}

// emitStatus emits a read status as its current value (and the one left, at 0, once); a disk without
// SMART, or a log the drive does not have (unsupported), is said at its first read and when that
// changes, not every scrape.
func emitStatus[K comparable](states *emit.States[K, device.Status], key K, st device.Status, record func(device.Status, int64)) {
	if st == device.StatusUnsupported {
		states.EmitOnChange(key, record, st)
		return
	}
	states.Emit(key, record, st)
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
	case device.StatusStandbySkipped:
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

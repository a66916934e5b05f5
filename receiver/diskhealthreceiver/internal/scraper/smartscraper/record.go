package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"math"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device" // recordValues records everything a snapshot holds; verdict, when set, adds hw.status.
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

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
	}
	for _, em := range ataErrorMeanings {
		if at, ok := a.Attributes.First(em.m); ok {
			mb.RecordHwErrorsDataPoint(ts, at.Raw.Value, em.et)
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
	} else if left, _, ok := a.Attributes.LifeLeft(); ok {
		// No device statistic: the attribute the drive database names as
		// life left (a Phison SSD's 231, a Crucial's 202), normalized 0-100.
		mb.RecordHwPhysicalDiskEnduranceUtilizationDataPoint(ts, float64(left)/100, metadata.AttributeHwPhysicalDiskStateRemaining)
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

package device

import (
	"fmt"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/scsi"
)

// Status is the outcome of one disk's read.
type Status uint8

// Read outcomes. Values are the smart.read.status attribute.
const (
	StatusOK Status = iota
	// StatusStandbySkipped: the disk was asleep and, per the standby setting, got
	// no SMART command.
	StatusStandbySkipped
	StatusPermissionDenied
	StatusUnsupported
	// StatusTimeout: the read did not finish by its deadline, or the
	// previous read is still in flight.
	StatusTimeout
	StatusError
)

// Statuses lists every Status, for documentation and tests.
var Statuses = []Status{StatusOK, StatusStandbySkipped, StatusPermissionDenied, StatusUnsupported, StatusTimeout, StatusError}

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusStandbySkipped:
		return "standby_skipped"
	case StatusPermissionDenied:
		return "permission_denied"
	case StatusUnsupported:
		return "unsupported"
	case StatusTimeout:
		return "timeout"
	case StatusError:
		return "error"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Result is one disk's read.
type Result struct {
	Disk   Disk
	Status Status
	// Err says why the status is not ok.
	Err error
	// Time is when the read ended (or was skipped).
	Time time.Time
	// Power is the ATA power mode CHECK POWER MODE reported (HasPower).
	Power    ata.PowerMode
	HasPower bool
	// Snapshot is what was read, nil when nothing was. A read that failed
	// for lack of privilege can still carry the unprivileged fallbacks
	// (NVMe hwmon temperature); a read without SMART support still carries
	// the identity.
	Snapshot *Snapshot
}

// Snapshot is the decoded data of one read of one disk. Only the section of
// the disk's protocol is set; within it, nil fields were not readable (the
// reasons are in Problems).
type Snapshot struct {
	ATA   *ATAData
	NVMe  *NVMeData
	SCSI  *SCSIData
	Hwmon *HwmonTemp
	// Problems are the parts of the read that failed without failing it
	// (an optional log the drive does not keep, say).
	Problems []error
}

// ATAData is what an ATA drive gave.
type ATAData struct {
	Identity   *ata.Identity
	Status     ata.SMARTStatus
	Attributes ata.Attributes
	ErrorLog   *ata.ErrorLogSummary
	SelfTests  *ata.SelfTestLog
	Stats      *ata.DeviceStatistics
}

// NVMeData is what an NVMe controller gave.
type NVMeData struct {
	Controller *nvme.Controller
	Namespaces []*nvme.Namespace // parallel to Disk.Namespaces, nil where unreadable
	// UsageStale is parallel to Namespaces (nil when none is): true where a thin provisioned namespace's
	// Identify Namespace, sent again on every read for its NUSE, failed this time. Its Namespaces entry is
	// then the last one read, whose usage is no longer now.
	UsageStale []bool
	Log        *nvme.SMARTLog

	// The optional logs the controller's plan (nvme.PlanLogs) asked for;
	// nil when not planned or not readable, with the outcome in Optional.
	Errors    []nvme.ErrorEntry // newest first
	Telemetry *nvme.TelemetryHeader
	OCP       *nvme.OCPSMARTLog
	Latency   *nvme.OCPLatencyLog
	Amazon    *nvme.AmazonStats
	// Optional is the outcome of each optional log read this time, in
	// reading order. A failed one costs only its own values.
	Optional []LogRead
}

// Optional NVMe logs, as LogRead names them.
const (
	LogErrorInformation = "error_information"
	LogTelemetry        = "telemetry_controller"
	LogOCPSMART         = "ocp_smart"
	LogOCPLatency       = "ocp_latency"
	LogAmazon           = "amazon"
)

// LogRead is the outcome of one optional log read.
type LogRead struct {
	Log    string
	Status Status
	Err    error
}

// SCSIData is what a SCSI disk gave.
type SCSIData struct {
	Inquiry       *scsi.Inquiry
	Capacity      *scsi.Capacity
	Temperature   *scsi.Temperature
	IE            *scsi.InformationalExceptions
	ErrorCounters []scsi.ErrorCounters
	StartStop     *scsi.StartStop
	SelfTests     []scsi.SelfTestResult
}

// HwmonTemp is a temperature from the kernel's hwmon sensor for the disk,
// readable without privileges.
type HwmonTemp struct {
	Current   float64 // °C
	Max, Crit float64 // °C, when HasMax/HasCrit
	HasMax    bool
	HasCrit   bool
}

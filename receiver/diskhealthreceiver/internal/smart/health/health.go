// Package health turns decoded SMART data into a disk health verdict. It is
// pure: Evaluate takes the previous History and a Snapshot of one read and
// returns the verdict (state, the reasons for it, events to log) and the
// History to pass next time. No clock, no I/O, no globals.
//
// States follow the OpenTelemetry hw.state values for physical disks. The
// worst firing rule decides the state; every firing rule is listed as a
// reason. The rules are the table in rules.go; Rules() returns it for
// documentation.
//
// ATA rules read meanings, not attribute IDs. What an attribute holds is what
// the drive database (package ata: smartmontools' drivedb.h, read at run time)
// names it on that drive: the Backblaze rule reads
// the attributes named as reallocated, reported-uncorrectable, command-timeout,
// pending and offline-uncorrectable counts, the reallocated-rising rule the
// reallocated count, the CRC rule the interface CRC count (210 or 218 on some
// families; an OCZ Vector's 199 counts host writes and is not read), and the
// endurance rule, for an SSD without the device statistic, the one named as
// life left. On a Phison-based
// SSD 197 is Not_In_Use, so a non-zero 197 fires nothing, and 231 is
// SSD_Life_Left, from which endurance is read; on a drive the database does
// not know, the default names (197 Current_Pending_Sector) apply. The names
// carrying each meaning are the table in ata/meaning.go.
package health // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"

import (
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/scsi"
)

// State is a disk's health, ordered from best to worst.
type State uint8

// Health states. Unknown is the state of a disk never evaluated.
const (
	Unknown State = iota
	OK
	Degraded
	PredictedFailure
	Failed
)

var stateNames = [...]string{"unknown", "ok", "degraded", "predicted_failure", "failed"}

// String returns the hw.state attribute value.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// Snapshot is what one read of one drive produced, decoded. Exactly the
// protocol sections that were read are set; a part that could not be read
// is left nil/zero and its rules stay silent.
type Snapshot struct {
	ATA  *ATA
	NVMe *NVMe
	SCSI *SCSI
	// Signs are the counters other sources posted for this disk on the
	// signs board (kernel I/O errors, filesystem errors); the rising rules
	// weigh them against the baseline this History keeps.
	Signs []signs.Counter
}

// ATA is the SATA part of a snapshot.
type ATA struct {
	// Status is the SMART RETURN STATUS verdict (Unknown when not read).
	Status     ata.SMARTStatus
	Attributes ata.Attributes
	// SelfTests is the SMART self-test log, nil when not read.
	SelfTests *ata.SelfTestLog
	// Stats is the device statistics log, nil when not read.
	Stats *ata.DeviceStatistics
}

// NVMe is the NVMe part of a snapshot.
type NVMe struct {
	Log nvme.SMARTLog
	// WarningTemp and CriticalTemp are WCTEMP/CCTEMP from Identify
	// Controller (0 = not reported).
	WarningTemp  nvme.Kelvin
	CriticalTemp nvme.Kelvin
	// OCP is the OCP SMART / Health Information Extended log, nil when the
	// drive has none or it was not read.
	OCP *nvme.OCPSMARTLog
}

// SCSI is the SAS/SCSI part of a snapshot. Nil fields were not read.
type SCSI struct {
	IE            *scsi.InformationalExceptions
	Temperature   *scsi.Temperature
	ErrorCounters []scsi.ErrorCounters
	SelfTests     []scsi.SelfTestResult
}

// Reason is one firing rule.
type Reason struct {
	Rule  RuleID
	State State
	// Subject names what the rule fired on, e.g. "Current_Pending_Sector
	// (197)"; one rule may fire for several subjects.
	Subject string
	// Text says what is wrong in plain words.
	Text string

	// level measures how bad the sign is (a count, or 1 for yes/no signs);
	// a rise makes the sign "new" again.
	level nvme.Uint128
	// from is the value seen at the previous evaluation, for "rose from"
	// wording (hasFrom false on first sight).
	from    nvme.Uint128
	hasFrom bool
}

func (r Reason) key() string { return string(r.Rule) + "|" + r.Subject }

// EventKind says why an event was emitted.
type EventKind uint8

const (
	// StateChanged means the disk's health state differs from the previous
	// evaluation's.
	StateChanged EventKind = iota + 1
	// NewSign means a rule started firing, or the count it watches rose.
	NewSign
)

func (k EventKind) String() string {
	if k == StateChanged {
		return "state_changed"
	}
	return "new_sign"
}

// Event is something worth a log record.
type Event struct {
	Kind EventKind
	// Old and New are the disk's health before and after this evaluation.
	Old, New State
	// Rule is the rule behind a NewSign event ("" for StateChanged).
	Rule RuleID
	Text string
}

// Verdict is the outcome of one evaluation.
type Verdict struct {
	State   State
	Reasons []Reason
	Events  []Event
}

// History is what Evaluate remembers between reads of one drive. The zero
// value is a drive never seen.
type History struct {
	state State
	// signs holds the level of every sign that fired last time.
	signs map[string]nvme.Uint128
	// counters holds, per watched counter, the value first seen (the
	// baseline "rising" rules compare with) and the last value seen.
	counters map[string]counter
}

type counter struct{ baseline, last nvme.Uint128 }

// State is the state of the last evaluation.
func (h History) State() State { return h.state }

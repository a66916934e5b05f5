package health

import (
	"fmt"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/scsi"
)

// RuleID names a health rule; it is stable and may appear in telemetry.
type RuleID string

// RuleInfo documents one rule.
type RuleInfo struct {
	ID    RuleID
	State State
	// Protocols the rule applies to.
	Protocols string
	// Condition says when it fires.
	Condition string
}

type rule struct {
	RuleInfo
	eval func(*evaluator, *Snapshot)
}

// Rules returns the rule table, worst state first, for documentation.
func Rules() []RuleInfo {
	out := make([]RuleInfo, len(rules))
	for i, r := range rules {
		out[i] = r.RuleInfo
	}
	return out
}

// Rule IDs.
const (
	RuleSMARTStatusFailed       RuleID = "smart_status_failed"
	RulePreFailAtThreshold      RuleID = "prefail_attribute_at_threshold"
	RuleNVMeReliability         RuleID = "nvme_reliability_degraded"
	RuleNVMeReadOnly            RuleID = "nvme_read_only"
	RuleNVMeVolatileBackup      RuleID = "nvme_volatile_backup_failed"
	RuleNVMePMRUnreliable       RuleID = "nvme_pmr_unreliable"
	RuleBackblazeCounter        RuleID = "backblaze_counter_nonzero"
	RuleReallocatedRising       RuleID = "reallocated_sectors_rising"
	RuleMediaErrorsRising       RuleID = "nvme_media_errors_rising"
	RuleSpareBelowThreshold     RuleID = "spare_below_threshold"
	RuleEnduranceExhausted      RuleID = "endurance_exhausted"
	RuleSCSIUncorrectedRising   RuleID = "scsi_uncorrected_errors_rising"
	RuleOverTemperature         RuleID = "over_temperature"
	RuleCRCErrorsRising         RuleID = "crc_errors_rising"
	RuleSelfTestFailed          RuleID = "self_test_failed"
	RuleUsageAtThreshold        RuleID = "usage_attribute_at_threshold"
	RulePreFailFailedInPast     RuleID = "prefail_attribute_failed_in_past"
	RuleSCSIInformationalExcept RuleID = "scsi_informational_exception"
	RuleKernelIOErrorsRising    RuleID = "kernel_io_errors_rising"
	RuleFilesystemErrorsRising  RuleID = "filesystem_errors_rising"
	RuleOCPBadBlocksRising      RuleID = "ocp_bad_blocks_rising"
	RuleOCPEndToEndRising       RuleID = "ocp_end_to_end_errors_rising"
	RuleOCPCapacitorLow         RuleID = "ocp_capacitor_health_low"
	RuleOCPDiesOffline          RuleID = "ocp_media_dies_offline"
)

// capacitorLow is the capacitor health (percent) below which the power-loss
// protection is in doubt. The OCP specification leaves the threshold to the
// vendor; half the original charge is the receiver's choice.
const capacitorLow = 50

// backblazeFive are the meanings of the ATA attributes Backblaze found most
// predictive of failure (5, 187, 188, 197, 198 on the drives they run): any
// raw value above zero is "a reason to investigate" (Backblaze, "What SMART
// Stats Tell Us About Hard Drives", 2016). The rule reads meanings, not IDs:
// an attribute counts when the drive database names it so for this drive,
// so a Phison SSD's 197 (Not_In_Use) never fires it.
var backblazeFive = [...]ata.Meaning{
	ata.MeaningReallocatedSectors, ata.MeaningReportedUncorrectable, ata.MeaningCommandTimeouts,
	ata.MeaningPendingSectors, ata.MeaningOfflineUncorrectable,
}

// rules is the health rule table. Each entry documents itself; the order
// is the order reasons are listed in within one state.
var rules = []rule{
	// ---- failed: the drive says it has failed, or is about to ----
	{RuleInfo{RuleSMARTStatusFailed, Failed, "ATA, SCSI",
		"The drive's own verdict is FAILED: ATA SMART RETURN STATUS reports a threshold exceeded (LBA mid/high F4h/2Ch), or the SCSI informational exceptions page reports ASC 5Dh (failure prediction threshold exceeded)."},
		func(e *evaluator, s *Snapshot) {
			if s.ATA != nil && s.ATA.Status == ata.SMARTStatusFailed {
				e.fire(Reason{Subject: "SMART status", Text: "the drive's SMART self-assessment says FAILED (threshold exceeded)"})
			}
			if s.SCSI != nil && s.SCSI.IE != nil && s.SCSI.IE.FailurePredicted() {
				e.fire(Reason{Subject: "informational exceptions", Text: fmt.Sprintf("the drive reports failure prediction threshold exceeded (ASC/ASCQ %02X/%02X)", s.SCSI.IE.ASC, s.SCSI.IE.ASCQ)})
			}
		}},
	{RuleInfo{RulePreFailAtThreshold, Failed, "ATA",
		"A pre-fail attribute's normalized value is at or below its threshold now (threshold 1-253; 0 means always passing, FEh/FFh are not thresholds)."},
		func(e *evaluator, s *Snapshot) {
			if s.ATA == nil {
				return
			}
			for i := range s.ATA.Attributes {
				a := &s.ATA.Attributes[i]
				if a.PreFail() && a.FailingNow() {
					e.fire(Reason{Subject: a.Label(), Text: fmt.Sprintf("pre-fail attribute %s is at %d, at or below its failure threshold %d", a.Label(), a.Value, a.Threshold)})
				}
			}
		}},
	{RuleInfo{RuleNVMeReliability, Failed, "NVMe", "Critical warning bit 2: NVM subsystem reliability degraded (media or internal errors)."},
		nvmeBit(nvme.WarnReliability, "the controller reports its reliability is degraded by media or internal errors (critical warning bit 2)")},
	{RuleInfo{RuleNVMeReadOnly, Failed, "NVMe", "Critical warning bit 3: media placed in read-only mode."},
		nvmeBit(nvme.WarnReadOnly, "the controller has put the media in read-only mode (critical warning bit 3)")},
	{RuleInfo{RuleNVMeVolatileBackup, Failed, "NVMe", "Critical warning bit 4: volatile memory backup device failed."},
		nvmeBit(nvme.WarnVolatileBackup, "the volatile memory backup device has failed (critical warning bit 4)")},
	{RuleInfo{RuleNVMePMRUnreliable, Failed, "NVMe", "Critical warning bit 5: persistent memory region read-only or unreliable."},
		nvmeBit(nvme.WarnPMRReadOnly, "the persistent memory region is read-only or unreliable (critical warning bit 5)")},

	// ---- predicted_failure: strong statistical signs ----
	{RuleInfo{RuleBackblazeCounter, PredictedFailure, "ATA",
		"One of Backblaze's five attributes has a decoded raw value above 0: reallocated sectors (5), reported uncorrectable (187), command timeouts (188; Seagate: word 0 only), pending sectors (197), offline uncorrectable (198). Attributes are chosen by the meaning the drive database gives them on that drive, not by ID: an ID the drive's family names otherwise (a Phison SSD's 197 Not_In_Use) is not read."},
		func(e *evaluator, s *Snapshot) {
			if s.ATA == nil {
				return
			}
			for _, m := range backblazeFive {
				for _, a := range s.ATA.Attributes.WithMeaning(m) {
					if a.Raw.Value <= 0 {
						continue
					}
					e.fireCount(Reason{Subject: a.Label(), Text: fmt.Sprintf("%s is %d", a.Label(), a.Raw.Value)}, "ata/"+a.Label(), count(a.Raw.Value))
				}
			}
		}},
	{RuleInfo{RuleReallocatedRising, PredictedFailure, "ATA",
		"The reallocated sector count (attribute 5, decoded) is higher than when monitoring of the drive began. The attribute is the one the drive database names as reallocated sectors or blocks on that drive (Reallocated_Sector_Ct, Reallocate_NAND_Blk_Cnt), not ID 5: a family whose 5 is a runtime bad-block or retired-block count is not read."},
		func(e *evaluator, s *Snapshot) {
			if s.ATA == nil {
				return
			}
			for _, a := range s.ATA.Attributes.WithMeaning(ata.MeaningReallocatedSectors) {
				e.rising(a.Label(), "ata/"+a.Label(), count(a.Raw.Value), "")
			}
		}},
	{RuleInfo{RuleMediaErrorsRising, PredictedFailure, "NVMe",
		"Media and data integrity errors are higher than when monitoring of the drive began."},
		func(e *evaluator, s *Snapshot) {
			if s.NVMe != nil {
				e.rising("media and data integrity errors", "nvme/media_errors", s.NVMe.Log.MediaErrors, "")
			}
		}},
	{RuleInfo{RuleSpareBelowThreshold, PredictedFailure, "NVMe",
		"Available spare is below the spare threshold (critical warning bit 0, or spare < threshold with a threshold above 0; controllers reporting 0/0 do not fire)."},
		func(e *evaluator, s *Snapshot) {
			if s.NVMe == nil {
				return
			}
			l := &s.NVMe.Log
			switch {
			case l.SpareThreshold > 0 && l.AvailableSpare < l.SpareThreshold:
				e.fire(Reason{Subject: "available spare", Text: fmt.Sprintf("available spare %d%% is below the threshold %d%%", l.AvailableSpare, l.SpareThreshold)})
			case l.CriticalWarning.Has(nvme.WarnSpareBelowThreshold):
				e.fire(Reason{Subject: "available spare", Text: "the controller reports available spare below its threshold (critical warning bit 0)"})
			}
		}},
	{RuleInfo{RuleEnduranceExhausted, PredictedFailure, "NVMe, ATA",
		"The drive's percentage-used endurance estimate is 100 or more (NVMe SMART log; ATA device statistics page 7), or, for an ATA SSD without that statistic, the attribute its drive database names as life left (SSD_Life_Left, Percent_Lifetime_Remain, ...; normalized value) is at 0."},
		func(e *evaluator, s *Snapshot) {
			if s.NVMe != nil && s.NVMe.Log.PercentageUsed >= 100 {
				e.fire(Reason{Subject: "percentage used", Text: fmt.Sprintf("percentage used is %d%%: the rated write endurance is used up", s.NVMe.Log.PercentageUsed)})
			}
			if s.ATA != nil {
				if pu, ok := s.ATA.Stats.Get(ata.StatPercentageUsed); ok {
					if pu >= 100 {
						e.fire(Reason{Subject: "percentage used", Text: fmt.Sprintf("percentage used is %d%%: the rated write endurance is used up", pu)})
					}
				} else if left, a, ok := s.ATA.Attributes.LifeLeft(); ok && left == 0 {
					e.fire(Reason{Subject: a.Label(), Text: fmt.Sprintf("%s is at 0%%: the rated write endurance is used up", a.Label())})
				}
			}
		}},
	{RuleInfo{RuleSCSIUncorrectedRising, PredictedFailure, "SCSI",
		"Total uncorrected read, write or verify errors are higher than when monitoring of the drive began."},
		func(e *evaluator, s *Snapshot) {
			if s.SCSI == nil {
				return
			}
			for _, c := range s.SCSI.ErrorCounters {
				if !c.TotalUncorrected.Valid {
					continue
				}
				name := map[uint8]string{scsi.PageReadErrors: "read", scsi.PageWriteErrors: "write", scsi.PageVerifyErrors: "verify"}[c.Page]
				e.rising("uncorrected "+name+" errors", "scsi/uncorrected_"+name, nvme.Uint128{Lo: c.TotalUncorrected.Value}, "")
			}
		}},

	// ---- degraded: working, but needs attention ----
	{RuleInfo{RuleOverTemperature, Degraded, "NVMe, ATA, SCSI",
		"Temperature at or above the drive's own limit: NVMe composite >= WCTEMP (or >= CCTEMP) or critical warning bit 1; ATA current temperature >= the device statistics' specified maximum operating temperature; SCSI current >= reference temperature."},
		func(e *evaluator, s *Snapshot) {
			if n := s.NVMe; n != nil {
				t, ok := n.Log.Temperature.Celsius()
				crit, hasCrit := n.CriticalTemp.Celsius()
				warn, hasWarn := n.WarningTemp.Celsius()
				switch {
				case ok && hasCrit && t >= crit:
					e.fire(Reason{Subject: "composite temperature", Text: fmt.Sprintf("composite temperature %d °C is at or above the critical limit %d °C", t, crit)})
				case ok && hasWarn && t >= warn:
					e.fire(Reason{Subject: "composite temperature", Text: fmt.Sprintf("composite temperature %d °C is at or above the warning limit %d °C", t, warn)})
				case n.Log.CriticalWarning.Has(nvme.WarnTemperature):
					e.fire(Reason{Subject: "composite temperature", Text: "the controller reports a temperature beyond its thresholds (critical warning bit 1)"})
				}
			}
			if a := s.ATA; a != nil {
				limit, hasLimit := a.Stats.Temperature(ata.StatMaxOperatingTemp)
				t, ok := a.Attributes.Temperature()
				if !ok {
					t, ok = a.Stats.Temperature(ata.StatCurrentTemperature)
				}
				if ok && hasLimit && t >= limit {
					e.fire(Reason{Subject: "drive temperature", Text: fmt.Sprintf("temperature %d °C is at or above the drive's maximum operating temperature %d °C", t, limit)})
				}
			}
			if sc := s.SCSI; sc != nil && sc.Temperature != nil {
				t := sc.Temperature
				if t.HasCurrent && t.HasReference && t.Reference > 0 && t.Current >= t.Reference {
					e.fire(Reason{Subject: "drive temperature", Text: fmt.Sprintf("temperature %d °C is at or above the drive's reference (trip) temperature %d °C", t.Current, t.Reference)})
				}
			}
		}},
	{RuleInfo{RuleCRCErrorsRising, Degraded, "ATA",
		"UDMA CRC errors (attribute 199) are higher than when monitoring of the drive began: usually a cable, backplane or connector fault, not the disk. The attribute is the one the drive database names as an interface CRC count on that drive (UDMA_CRC_Error_Count, SATA_CRC_Error_Count, CRC_Error_Count, ...), not ID 199: a family whose 199 counts host writes is not read, one that keeps the count in 210 or 218 is."},
		func(e *evaluator, s *Snapshot) {
			if s.ATA == nil {
				return
			}
			for _, a := range s.ATA.Attributes.WithMeaning(ata.MeaningCRCErrors) {
				e.rising(a.Label(), "ata/"+a.Label(), count(a.Raw.Value), ": interface CRC errors, usually a cable, backplane or connector fault")
			}
		}},
	{RuleInfo{RuleOCPBadBlocksRising, Degraded, "NVMe (OCP)",
		"Bad user or system NAND blocks (OCP C0h raw counts) are higher than when monitoring of the drive began: the drive is retiring blocks."},
		func(e *evaluator, s *Snapshot) {
			if o := ocp(s); o != nil {
				e.rising("bad user NAND blocks", "ocp/bad_user_blocks", nvme.Uint128{Lo: o.BadUserNANDBlocks.Raw}, "")
				e.rising("bad system NAND blocks", "ocp/bad_system_blocks", nvme.Uint128{Lo: o.BadSystemNANDBlocks.Raw}, "")
			}
		}},
	{RuleInfo{RuleOCPEndToEndRising, Degraded, "NVMe (OCP)",
		"End-to-end detected errors (OCP C0h: data corrupted inside the drive's data path, caught by its protection information) are higher than when monitoring began."},
		func(e *evaluator, s *Snapshot) {
			if o := ocp(s); o != nil {
				e.rising("end-to-end detected errors", "ocp/e2e_detected", nvme.Uint128{Lo: uint64(o.EndToEndDetected)}, "")
			}
		}},
	{RuleInfo{RuleOCPCapacitorLow, Degraded, "NVMe (OCP)",
		"The power-loss protection capacitor's health (OCP C0h) is below 50%: data in flight may be lost on a power cut. A drive without a capacitor (FFFFh) does not fire."},
		func(e *evaluator, s *Snapshot) {
			if o := ocp(s); o != nil && o.HasCapacitor() && o.CapacitorHealth < capacitorLow {
				e.fire(Reason{Subject: "capacitor health", Text: fmt.Sprintf("power-loss protection capacitor health is %d%%, below %d%%", o.CapacitorHealth, capacitorLow)})
			}
		}},
	{RuleInfo{RuleOCPDiesOffline, Degraded, "NVMe (OCP)",
		"NAND dies are offline (OCP C0h version 5 and later); the text says how many more the drive tolerates."},
		func(e *evaluator, s *Snapshot) {
			if o := ocp(s); o != nil && o.MediaDiesOffline > 0 {
				e.fireLevel(Reason{Subject: "media dies", Text: fmt.Sprintf("%d of %d NAND dies are offline (the drive tolerates %d)", o.MediaDiesOffline, o.TotalMediaDies, o.DieFailureTolerance)},
					nvme.Uint128{Lo: uint64(o.MediaDiesOffline)})
			}
		}},
	{RuleInfo{RuleSelfTestFailed, Degraded, "ATA, SCSI",
		"The self-test log holds a failed test that no later extended test has superseded by passing."},
		func(e *evaluator, s *Snapshot) {
			if s.ATA != nil && s.ATA.SelfTests != nil {
				if t, ok := s.ATA.SelfTests.UnresolvedFailure(); ok {
					e.fireLevel(Reason{Subject: "self-test log", Text: fmt.Sprintf("a self-test %s at %d power-on hours (first failing LBA %d)", t.Status, t.LifetimeHours, t.FailingLBA)}, nvme.Uint128{Lo: uint64(t.LifetimeHours) + 1})
				}
			}
			if s.SCSI != nil {
				if t, ok := scsi.UnresolvedSelfTestFailure(s.SCSI.SelfTests); ok {
					e.fireLevel(Reason{Subject: "self-test log", Text: fmt.Sprintf("a self-test failed (result %d) at %d power-on hours, sense %s %02X/%02X", t.Result, t.PowerOnHours, scsi.SenseKey(t.SenseKey), t.ASC, t.ASCQ)}, nvme.Uint128{Lo: uint64(t.PowerOnHours) + 1})
				}
			}
		}},
	{RuleInfo{RuleKernelIOErrorsRising, Degraded, "any (signs board)",
		"An error count of the disk's filesystem and block I/O rose since monitoring began: requests the block layer completed with an error (the latency source's probe), corrected read errors of an md member on the disk (the stack source), both posted on the signs board (package signs). Pass-through commands (SG_IO, NVMe admin and I/O passthrough: REQ_OP_DRV_IN/OUT) are never counted, so SCSI ioerr_cnt and iotmo_cnt, which count every command, are not weighed: an ATA command sent with CK_COND (SMART RETURN STATUS, CHECK POWER MODE, by this receiver or smartctl) completes with CHECK CONDITION and raises ioerr_cnt on a healthy disk."},
		func(e *evaluator, s *Snapshot) { boardRising(e, s, signs.KernelIOErrors) }},
	{RuleInfo{RuleFilesystemErrorsRising, Degraded, "any (signs board)",
		"An error count a filesystem keeps for a device on the disk rose since monitoring began: ext4 errors_count of a partition, btrfs error_stats of a device (posted by the stack source on the signs board)."},
		func(e *evaluator, s *Snapshot) { boardRising(e, s, signs.FilesystemErrors) }},
	{RuleInfo{RuleUsageAtThreshold, Degraded, "ATA",
		"An old-age (not pre-fail) attribute's normalized value is at or below its threshold now."},
		func(e *evaluator, s *Snapshot) {
			if s.ATA == nil {
				return
			}
			for i := range s.ATA.Attributes {
				a := &s.ATA.Attributes[i]
				if !a.PreFail() && a.FailingNow() {
					e.fire(Reason{Subject: a.Label(), Text: fmt.Sprintf("old-age attribute %s is at %d, at or below its threshold %d", a.Label(), a.Value, a.Threshold)})
				}
			}
		}},
	{RuleInfo{RulePreFailFailedInPast, Degraded, "ATA",
		"A pre-fail attribute's worst value reached its threshold in the past though the current value is above it again."},
		func(e *evaluator, s *Snapshot) {
			if s.ATA == nil {
				return
			}
			for i := range s.ATA.Attributes {
				a := &s.ATA.Attributes[i]
				if a.PreFail() && a.FailedInPast() {
					e.fire(Reason{Subject: a.Label(), Text: fmt.Sprintf("pre-fail attribute %s once fell to %d, at or below its threshold %d (now %d)", a.Label(), a.Worst, a.Threshold, a.Value)})
				}
			}
		}},
	{RuleInfo{RuleSCSIInformationalExcept, Degraded, "SCSI",
		"The informational exceptions page reports an exception other than failure prediction (e.g. ASC 0Bh: warning, specified temperature exceeded)."},
		func(e *evaluator, s *Snapshot) {
			if s.SCSI == nil || s.SCSI.IE == nil {
				return
			}
			ie := s.SCSI.IE
			if ie.ASC != 0 && !ie.FailurePredicted() {
				e.fire(Reason{Subject: "informational exceptions", Text: fmt.Sprintf("the drive reports informational exception ASC/ASCQ %02X/%02X", ie.ASC, ie.ASCQ)})
			}
		}},
}

func nvmeBit(bit nvme.CriticalWarning, text string) func(*evaluator, *Snapshot) {
	return func(e *evaluator, s *Snapshot) {
		if s.NVMe != nil && s.NVMe.Log.CriticalWarning.Has(bit) {
			e.fire(Reason{Subject: "critical warning " + bit.String(), Text: text})
		}
	}
}

// ocp is the snapshot's OCP log, nil when there is none.
func ocp(s *Snapshot) *nvme.OCPSMARTLog {
	if s.NVMe == nil {
		return nil
	}
	return s.NVMe.OCP
}

// boardRising applies the rising rule to the board's counters of one kind.
func boardRising(e *evaluator, s *Snapshot, kind signs.Kind) {
	for _, c := range s.Signs {
		if c.Kind == kind {
			e.rising(c.Subject, "board/"+string(kind)+"/"+c.Subject, nvme.Uint128{Lo: c.Value}, "")
		}
	}
}

func count(v int64) nvme.Uint128 { return nvme.Uint128{Lo: uint64(max(v, 0))} }

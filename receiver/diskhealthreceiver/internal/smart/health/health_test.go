package health

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/scsi"
)

// qemuATA decodes one QEMU ATA disk of the fixtures, optionally under
// another model's drive database preset.
func qemuATA(t *testing.T, disk, model string) *ATA {
	id, err := ata.ParseIdentify(fixture.Read(t, "qemu", "k6.12", disk+".ata_identify.bin"))
	require.NoError(t, err)
	data, err := ata.ParseSMARTData(fixture.Read(t, "qemu", "k6.12", disk+".smart_read_data.bin"))
	require.NoError(t, err)
	th, err := ata.ParseThresholds(fixture.Read(t, "qemu", "k6.12", disk+".smart_read_thresholds.bin"))
	require.NoError(t, err)
	tests, err := ata.ParseSelfTestLog(fixture.Read(t, "qemu", "k6.12", disk+".smart_read_log06.bin"))
	require.NoError(t, err)
	if model == "" {
		model = id.Model
	}
	return &ATA{Status: ata.SMARTStatusPassed, Attributes: testkit.ParsedDriveDBH(t, ata.ParseDriveDB).LookupDrive(model, "", 0).Decode(data, th), SelfTests: tests}
}

func qemuNVMe(t *testing.T, dir, ctrl string) *NVMe {
	log, err := nvme.ParseSMARTLog(fixture.Read(t, "qemu", dir, ctrl+".log02_smart_log.bin"))
	require.NoError(t, err)
	id, err := nvme.ParseIdentifyController(fixture.Read(t, "qemu", dir, ctrl+".identify_ctrl.bin"))
	require.NoError(t, err)
	return &NVMe{Log: *log, WarningTemp: id.WarningTemp, CriticalTemp: id.CriticalTemp}
}

func ruleIDs(rs []Reason) []RuleID {
	var out []RuleID
	for _, r := range rs {
		out = append(out, r.Rule)
	}
	return out
}

// No rule fires on the healthy emulated drives: QEMU's ATA disks (read
// plainly and as a Seagate), QEMU's NVMe controller with spare 0 %/0 % and
// the Linux target with a 0 K temperature and no temperature limits.
func TestHealthyFixtures(t *testing.T) {
	for name, snap := range map[string]Snapshot{
		"qemu ata plain":      {ATA: qemuATA(t, "sdb", "")},
		"qemu ata seagate":    {ATA: qemuATA(t, "sda", "")},
		"qemu ata as samsung": {ATA: qemuATA(t, "sda", "Samsung SSD 870 EVO 1TB")},
		"qemu nvme":           {NVMe: qemuNVMe(t, "k6.12", "nvme0")},
		"nvmet":               {NVMe: qemuNVMe(t, "k6.12-nvmet", "nvme1")},
	} {
		t.Run(name, func(t *testing.T) {
			v, h := Evaluate(History{}, snap)
			assert.Equal(t, OK, v.State)
			assert.Empty(t, v.Reasons)
			assert.Empty(t, v.Events, "a healthy first sight is not news")
			v, _ = Evaluate(h, snap)
			assert.Equal(t, OK, v.State)
			assert.Empty(t, v.Events)
		})
	}
}

func TestCriticalWarningFixture(t *testing.T) {
	v, h := Evaluate(History{}, Snapshot{NVMe: qemuNVMe(t, "k6.12-critwarn4", "nvme0")})
	assert.Equal(t, Failed, v.State)
	assert.Equal(t, Failed, h.State())
	assert.Equal(t, []RuleID{RuleNVMeReliability}, ruleIDs(v.Reasons))
	require.Len(t, v.Events, 2)
	assert.Equal(t, Event{Kind: StateChanged, Old: Unknown, New: Failed,
		Text: "health changed from unknown to failed: the controller reports its reliability is degraded by media or internal errors (critical warning bit 2)"}, v.Events[0])
	assert.Equal(t, NewSign, v.Events[1].Kind)
	assert.Equal(t, RuleNVMeReliability, v.Events[1].Rule)

	// Same reading again: same verdict, nothing new to say.
	v, _ = Evaluate(h, Snapshot{NVMe: qemuNVMe(t, "k6.12-critwarn4", "nvme0")})
	assert.Equal(t, Failed, v.State)
	assert.Empty(t, v.Events)
}

// attrs builds decoded attributes through the real decoder.
func attrs(tb testing.TB, model string, th map[uint8]uint8, raw ...ata.RawAttribute) ata.Attributes {
	return testkit.ParsedDriveDBH(tb, ata.ParseDriveDB).LookupDrive(model, "", 0).Decode(&ata.SMARTData{Attributes: raw}, thresholds(th))
}

func thresholds(th map[uint8]uint8) *ata.Thresholds {
	b := make([]byte, ata.PageSize)
	i := 0
	for id, v := range th {
		b[2+12*i], b[3+12*i] = id, v
		i++
	}
	var sum byte
	for _, c := range b {
		sum += c
	}
	b[511] = -sum
	t, err := ata.ParseThresholds(b)
	if err != nil {
		panic(err)
	}
	return t
}

func raw(id uint8, flags uint16, value, worst uint8, v uint64) ata.RawAttribute {
	a := ata.RawAttribute{ID: id, Flags: flags, Value: value, Worst: worst}
	for i := range a.RawBytes {
		a.RawBytes[i] = byte(v >> (8 * i))
	}
	return a
}

func statsPage(num uint8, off int, v uint64) []byte {
	b := make([]byte, ata.PageSize)
	b[0], b[2] = 1, num
	for i := range 8 {
		b[off+i] = byte(v >> (8 * i))
	}
	b[off+7] |= 0xC0 // supported, valid
	return b
}

func devstat(t *testing.T, pages ...[]byte) *ata.DeviceStatistics {
	ds, err := ata.ParseDeviceStatistics(slices.Concat(pages...))
	require.NoError(t, err)
	return ds
}

func selfTestLog(t *testing.T, entries ...[2]uint8) *ata.SelfTestLog {
	b := make([]byte, ata.PageSize)
	for i, e := range entries {
		b[2+24*i], b[3+24*i], b[4+24*i] = e[0], e[1]<<4, byte(10*(i+1))
	}
	b[508] = byte(len(entries))
	var sum byte
	for _, c := range b {
		sum += c
	}
	b[511] = -sum
	l, err := ata.ParseSelfTestLog(b)
	require.NoError(t, err)
	return l
}

// Every rule fires on its condition, with the state the table gives it, and
// nothing else fires.
func TestEachRuleFires(t *testing.T) {
	const pre, old = ata.FlagPreFail | ata.FlagOnline, ata.FlagOnline
	hot := func(k nvme.Kelvin, warn nvme.CriticalWarning) *NVMe {
		return &NVMe{Log: nvme.SMARTLog{Temperature: k, CriticalWarning: warn}, WarningTemp: 343, CriticalTemp: 353}
	}
	// rising rules need a first reading to compare with.
	type step struct {
		first, then Snapshot
	}
	single := func(s Snapshot) step { return step{then: s} }
	cases := []struct {
		name  string
		step  step
		want  []RuleID
		state State
		text  string
	}{
		{"ata smart status failed", single(Snapshot{ATA: &ATA{Status: ata.SMARTStatusFailed}}), []RuleID{RuleSMARTStatusFailed}, Failed, "SMART self-assessment says FAILED"},
		{"scsi failure prediction", single(Snapshot{SCSI: &SCSI{IE: &scsi.InformationalExceptions{ASC: 0x5D, ASCQ: 0x10}}}), []RuleID{RuleSMARTStatusFailed}, Failed, "5D/10"},
		{"prefail at threshold", single(Snapshot{ATA: &ATA{Attributes: attrs(t, "", map[uint8]uint8{1: 51}, raw(1, pre, 50, 50, 0))}}), []RuleID{RulePreFailAtThreshold}, Failed, "Raw_Read_Error_Rate (1) is at 50, at or below its failure threshold 51"},
		{"nvme reliability", single(Snapshot{NVMe: &NVMe{Log: nvme.SMARTLog{CriticalWarning: nvme.WarnReliability}}}), []RuleID{RuleNVMeReliability}, Failed, "bit 2"},
		{"nvme read only", single(Snapshot{NVMe: &NVMe{Log: nvme.SMARTLog{CriticalWarning: nvme.WarnReadOnly}}}), []RuleID{RuleNVMeReadOnly}, Failed, "read-only"},
		{"nvme volatile backup", single(Snapshot{NVMe: &NVMe{Log: nvme.SMARTLog{CriticalWarning: nvme.WarnVolatileBackup}}}), []RuleID{RuleNVMeVolatileBackup}, Failed, "backup"},
		{"nvme pmr", single(Snapshot{NVMe: &NVMe{Log: nvme.SMARTLog{CriticalWarning: nvme.WarnPMRReadOnly}}}), []RuleID{RuleNVMePMRUnreliable}, Failed, "persistent memory"},
		{"pending sectors", single(Snapshot{ATA: &ATA{Attributes: attrs(t, "", nil, raw(197, old, 100, 100, 3))}}), []RuleID{RuleBackblazeCounter}, PredictedFailure, "Current_Pending_Sector (197) is 3"},
		{"reported uncorrectable", single(Snapshot{ATA: &ATA{Attributes: attrs(t, "", nil, raw(187, old, 100, 100, 1))}}), []RuleID{RuleBackblazeCounter}, PredictedFailure, "Reported_Uncorrect (187) is 1"},
		{"offline uncorrectable", single(Snapshot{ATA: &ATA{Attributes: attrs(t, "", nil, raw(198, old, 100, 100, 2))}}), []RuleID{RuleBackblazeCounter}, PredictedFailure, "Offline_Uncorrectable (198) is 2"},
		{"seagate 188 timeout in word 0", single(Snapshot{ATA: &ATA{Attributes: attrs(t, "ST4000DM004-2CV104", nil, raw(188, old, 100, 100, 0x000100010001))}}), []RuleID{RuleBackblazeCounter}, PredictedFailure, "Command_Timeout (188) is 1"},
		{"reallocated rising", step{
			first: Snapshot{ATA: &ATA{Attributes: attrs(t, "", nil, raw(5, pre, 100, 100, 8))}},
			then:  Snapshot{ATA: &ATA{Attributes: attrs(t, "", nil, raw(5, pre, 100, 100, 9))}},
		}, []RuleID{RuleBackblazeCounter, RuleReallocatedRising}, PredictedFailure, "Reallocated_Sector_Ct (5) rose from 8 to 9 since monitoring began"},
		{"nvme media errors rising", step{
			first: Snapshot{NVMe: &NVMe{Log: nvme.SMARTLog{MediaErrors: nvme.Uint128{Lo: ^uint64(0)}}}},
			then:  Snapshot{NVMe: &NVMe{Log: nvme.SMARTLog{MediaErrors: nvme.Uint128{Hi: 1}}}},
		}, []RuleID{RuleMediaErrorsRising}, PredictedFailure, "rose from 18446744073709551615 to 18446744073709551616"},
		{"nvme spare below threshold", single(Snapshot{NVMe: &NVMe{Log: nvme.SMARTLog{AvailableSpare: 5, SpareThreshold: 10}}}), []RuleID{RuleSpareBelowThreshold}, PredictedFailure, "available spare 5% is below the threshold 10%"},
		{"nvme spare warning bit", single(Snapshot{NVMe: &NVMe{Log: nvme.SMARTLog{CriticalWarning: nvme.WarnSpareBelowThreshold}}}), []RuleID{RuleSpareBelowThreshold}, PredictedFailure, "bit 0"},
		{"nvme endurance", single(Snapshot{NVMe: &NVMe{Log: nvme.SMARTLog{PercentageUsed: 100}}}), []RuleID{RuleEnduranceExhausted}, PredictedFailure, "percentage used is 100%"},
		{"ata endurance", single(Snapshot{ATA: &ATA{Stats: devstat(t, statsPage(7, 8, 112))}}), []RuleID{RuleEnduranceExhausted}, PredictedFailure, "percentage used is 112%"},
		{"scsi uncorrected rising", step{
			first: Snapshot{SCSI: &SCSI{ErrorCounters: []scsi.ErrorCounters{{Page: scsi.PageReadErrors, TotalUncorrected: scsi.Counter{Value: 4, Valid: true}}}}},
			then:  Snapshot{SCSI: &SCSI{ErrorCounters: []scsi.ErrorCounters{{Page: scsi.PageReadErrors, TotalUncorrected: scsi.Counter{Value: 6, Valid: true}}}}},
		}, []RuleID{RuleSCSIUncorrectedRising}, PredictedFailure, "uncorrected read errors rose from 4 to 6"},
		{"nvme warning temperature", single(Snapshot{NVMe: hot(343, 0)}), []RuleID{RuleOverTemperature}, Degraded, "composite temperature 70 °C is at or above the warning limit 70 °C"},
		{"nvme critical temperature", single(Snapshot{NVMe: hot(360, nvme.WarnTemperature)}), []RuleID{RuleOverTemperature}, Degraded, "87 °C is at or above the critical limit 80 °C"},
		{"nvme temperature bit", single(Snapshot{NVMe: hot(300, nvme.WarnTemperature)}), []RuleID{RuleOverTemperature}, Degraded, "bit 1"},
		{"ata over temperature", single(Snapshot{ATA: &ATA{
			Attributes: attrs(t, "", nil, raw(194, old, 40, 40, 61)),
			Stats:      devstat(t, statsPage(5, 0x58, 60)),
		}}), []RuleID{RuleOverTemperature}, Degraded, "temperature 61 °C is at or above the drive's maximum operating temperature 60 °C"},
		{"ata over temperature from devstat", single(Snapshot{ATA: &ATA{Stats: devstat(t, statsPage(5, 0x58, 60), statsPage(5, 0x08, 65))}}), []RuleID{RuleOverTemperature}, Degraded, "65 °C"},
		{"scsi over temperature", single(Snapshot{SCSI: &SCSI{Temperature: &scsi.Temperature{Current: 66, HasCurrent: true, Reference: 65, HasReference: true}}}), []RuleID{RuleOverTemperature}, Degraded, "reference (trip) temperature 65"},
		{"crc rising", step{
			first: Snapshot{ATA: &ATA{Attributes: attrs(t, "", nil, raw(199, old, 200, 200, 10))}},
			then:  Snapshot{ATA: &ATA{Attributes: attrs(t, "", nil, raw(199, old, 200, 200, 12))}},
		}, []RuleID{RuleCRCErrorsRising}, Degraded, "UDMA_CRC_Error_Count (199) rose from 10 to 12 since monitoring began: interface CRC errors, usually a cable"},
		{"ata self-test failed", single(Snapshot{ATA: &ATA{SelfTests: selfTestLog(t, [2]uint8{1, 0}, [2]uint8{1, 7})}}), []RuleID{RuleSelfTestFailed}, Degraded, "failed (read element) at 20 power-on hours"},
		{"scsi self-test failed", single(Snapshot{SCSI: &SCSI{SelfTests: []scsi.SelfTestResult{{Number: 1, Code: 1, Result: 5, PowerOnHours: 77, SenseKey: 3, ASC: 0x11}}}}), []RuleID{RuleSelfTestFailed}, Degraded, "MEDIUM ERROR 11/00"},
		{"usage attribute at threshold", single(Snapshot{ATA: &ATA{Attributes: attrs(t, "", map[uint8]uint8{190: 45}, raw(190, old, 45, 45, 55))}}), []RuleID{RuleUsageAtThreshold}, Degraded, "old-age attribute Airflow_Temperature_Cel (190) is at 45"},
		{"prefail failed in past", single(Snapshot{ATA: &ATA{Attributes: attrs(t, "", map[uint8]uint8{3: 21}, raw(3, pre, 90, 20, 0))}}), []RuleID{RulePreFailFailedInPast}, Degraded, "once fell to 20"},
		{"kernel io errors rising", step{
			first: Snapshot{Signs: []signs.Counter{{Kind: signs.KernelIOErrors, Subject: "kernel-seen I/O errors of sda", Value: 2}}},
			then:  Snapshot{Signs: []signs.Counter{{Kind: signs.KernelIOErrors, Subject: "kernel-seen I/O errors of sda", Value: 5}}},
		}, []RuleID{RuleKernelIOErrorsRising}, Degraded, "kernel-seen I/O errors of sda rose from 2 to 5 since monitoring began"},
		{"filesystem errors rising", step{
			first: Snapshot{Signs: []signs.Counter{{Kind: signs.FilesystemErrors, Subject: "ext4 errors on sda1 (/data)", Value: 0}}},
			then:  Snapshot{Signs: []signs.Counter{{Kind: signs.FilesystemErrors, Subject: "ext4 errors on sda1 (/data)", Value: 1}}},
		}, []RuleID{RuleFilesystemErrorsRising}, Degraded, "ext4 errors on sda1 (/data) rose from 0 to 1"},
		{"ocp bad blocks rising", step{
			first: Snapshot{NVMe: &NVMe{OCP: &nvme.OCPSMARTLog{BadUserNANDBlocks: nvme.NormalizedCount{Raw: 4}, CapacitorHealth: 0xFFFF}}},
			then:  Snapshot{NVMe: &NVMe{OCP: &nvme.OCPSMARTLog{BadUserNANDBlocks: nvme.NormalizedCount{Raw: 6}, CapacitorHealth: 0xFFFF}}},
		}, []RuleID{RuleOCPBadBlocksRising}, Degraded, "bad user NAND blocks rose from 4 to 6"},
		{"ocp end-to-end rising", step{
			first: Snapshot{NVMe: &NVMe{OCP: &nvme.OCPSMARTLog{EndToEndDetected: 1, CapacitorHealth: 100}}},
			then:  Snapshot{NVMe: &NVMe{OCP: &nvme.OCPSMARTLog{EndToEndDetected: 3, CapacitorHealth: 100}}},
		}, []RuleID{RuleOCPEndToEndRising}, Degraded, "end-to-end detected errors rose from 1 to 3"},
		{"ocp capacitor low", single(Snapshot{NVMe: &NVMe{OCP: &nvme.OCPSMARTLog{CapacitorHealth: 49}}}), []RuleID{RuleOCPCapacitorLow}, Degraded, "capacitor health is 49%, below 50%"},
		{"ocp dies offline", single(Snapshot{NVMe: &NVMe{OCP: &nvme.OCPSMARTLog{MediaDiesOffline: 1, TotalMediaDies: 64, DieFailureTolerance: 2, CapacitorHealth: 0xFFFF}}}),
			[]RuleID{RuleOCPDiesOffline}, Degraded, "1 of 64 NAND dies are offline (the drive tolerates 2)"},
		{"scsi warning", single(Snapshot{SCSI: &SCSI{IE: &scsi.InformationalExceptions{ASC: 0x0B, ASCQ: 0x01}}}), []RuleID{RuleSCSIInformationalExcept}, Degraded, "0B/01"},
	}
	fired := map[RuleID]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := History{}
			if !reflect.ValueOf(tc.step.first).IsZero() {
				_, h = Evaluate(History{}, tc.step.first)
			}
			v, _ := Evaluate(h, tc.step.then)
			assert.Equal(t, tc.want, ruleIDs(v.Reasons))
			assert.Equal(t, tc.state, v.State)
			var texts []string
			for _, r := range v.Reasons {
				texts = append(texts, r.Text)
				fired[r.Rule] = true
				info := rules[ruleOrder[r.Rule]]
				assert.Equal(t, info.State, r.State)
			}
			assert.Contains(t, strings.Join(texts, "\n"), tc.text)
		})
	}
	for _, r := range Rules() {
		assert.True(t, fired[r.ID], "rule %s never fired in this table", r.ID)
	}
}

// Packed vendor raw values and emulator quirks must not raise alarms.
func TestNoFalseAlarms(t *testing.T) {
	const old = ata.FlagOnline
	for name, snap := range map[string]Snapshot{
		// Seagate 188 "2 5 0": slow commands counted, no timeout; as a
		// plain 48-bit number 8590262272.
		"seagate 188 packed": {ATA: &ATA{Attributes: attrs(t, "ST4000DM004-2CV104", nil, raw(188, old, 100, 100, 0x000200050000))}},
		// Seagate 1/7/195: huge operation counts below zero errors.
		"seagate 1/7/195 packed": {ATA: &ATA{Attributes: attrs(t, "ST8000VN004-2M2101", map[uint8]uint8{1: 44, 7: 45},
			raw(1, ata.FlagPreFail, 83, 64, 197586811), raw(7, ata.FlagPreFail, 81, 60, 140128547), raw(195, old, 83, 64, 197586811))}},
		// Temperature attributes with min/max bytes are not counts.
		"temperature min/max": {ATA: &ATA{Attributes: attrs(t, "", nil, raw(194, old, 34, 46, 0x001300000022), raw(190, old, 66, 54, 0x221b0022))}},
		// QEMU and fabrics targets: spare 0 %, threshold 0 %.
		"nvme spare 0/0": {NVMe: &NVMe{Log: nvme.SMARTLog{Temperature: 323}, WarningTemp: 343, CriticalTemp: 373}},
		// 0 K is "no temperature", and WCTEMP 0 is "no limit".
		"nvme no temperature": {NVMe: &NVMe{Log: nvme.SMARTLog{PercentageUsed: 99}}},
		// An OCP drive without a capacitor reports FFFFh; one with 50% is at the limit, not below.
		"ocp no capacitor":    {NVMe: &NVMe{OCP: &nvme.OCPSMARTLog{CapacitorHealth: 0xFFFF}}},
		"ocp capacitor at 50": {NVMe: &NVMe{OCP: &nvme.OCPSMARTLog{CapacitorHealth: 50, BadUserNANDBlocks: nvme.NormalizedCount{Raw: 30}}}},
		// Error-log entries count rejected admin commands: not a health rule.
		"nvme error log entries": {NVMe: &NVMe{Log: nvme.SMARTLog{ErrorLogEntries: nvme.Uint128{Lo: 8}}}},
		// Thresholds 0 and FEh never fail.
		"thresholds 0 and FEh": {ATA: &ATA{Attributes: attrs(t, "", map[uint8]uint8{3: 0, 4: 0xFE}, raw(3, ata.FlagPreFail, 1, 1, 0), raw(4, ata.FlagPreFail, 1, 1, 0))}},
		// An aborted self-test is not a failed one; an extended pass clears an old failure.
		"self-test superseded": {ATA: &ATA{SelfTests: selfTestLog(t, [2]uint8{1, 7}, [2]uint8{2, 0}, [2]uint8{1, 1})}},
		"scsi quiet":           {SCSI: &SCSI{IE: &scsi.InformationalExceptions{}, Temperature: &scsi.Temperature{Current: 38, HasCurrent: true, Reference: 65, HasReference: true}}},
		"empty":                {},
	} {
		t.Run(name, func(t *testing.T) {
			v, _ := Evaluate(History{}, snap)
			assert.Equal(t, OK, v.State, "%v", v.Reasons)
			assert.Empty(t, v.Reasons)
		})
	}
}

func TestWorstStateWinsAndAllReasonsListed(t *testing.T) {
	snap := Snapshot{ATA: &ATA{
		Status: ata.SMARTStatusFailed,
		Attributes: attrs(t, "", map[uint8]uint8{190: 45},
			raw(197, ata.FlagOnline, 100, 100, 3),
			raw(5, ata.FlagPreFail, 100, 100, 1),
			raw(190, ata.FlagOnline, 40, 40, 60)),
	}}
	v, _ := Evaluate(History{}, snap)
	assert.Equal(t, Failed, v.State)
	assert.Equal(t, []RuleID{RuleSMARTStatusFailed, RuleBackblazeCounter, RuleBackblazeCounter, RuleUsageAtThreshold}, ruleIDs(v.Reasons))
	assert.Equal(t, "Current_Pending_Sector (197)", v.Reasons[1].Subject, "same rule: subjects in order")
	assert.Equal(t, "Reallocated_Sector_Ct (5)", v.Reasons[2].Subject)
	require.Len(t, v.Events, 5, "one state change and one event per sign")
	assert.Equal(t, StateChanged, v.Events[0].Kind)
	assert.Contains(t, v.Events[0].Text, "health changed from unknown to failed: ")
	for _, e := range v.Events[1:] {
		assert.Equal(t, NewSign, e.Kind)
		assert.Equal(t, Unknown, e.Old)
		assert.Equal(t, Failed, e.New)
	}
}

// The brief's example: pending sectors 0 -> 3 is a new bad sign and a state
// change; 3 -> 3 is nothing; 3 -> 5 is a new sign without a state change;
// back to 0 is a state change.
func TestEventsFollowPendingSectors(t *testing.T) {
	snap := func(pending uint64) Snapshot {
		return Snapshot{ATA: &ATA{Attributes: attrs(t, "", nil, raw(197, ata.FlagOnline, 100, 100, pending))}}
	}
	var h History
	var v Verdict
	v, h = Evaluate(h, snap(0))
	assert.Equal(t, OK, v.State)
	assert.Empty(t, v.Events)

	v, h = Evaluate(h, snap(3))
	assert.Equal(t, []Event{
		{Kind: StateChanged, Old: OK, New: PredictedFailure, Text: "health changed from ok to predicted_failure: Current_Pending_Sector (197) is 3"},
		{Kind: NewSign, Old: OK, New: PredictedFailure, Rule: RuleBackblazeCounter, Text: "Current_Pending_Sector (197) rose from 0 to 3"},
	}, v.Events)

	v, h = Evaluate(h, snap(3))
	assert.Equal(t, PredictedFailure, v.State)
	assert.Empty(t, v.Events)

	v, h = Evaluate(h, snap(5))
	assert.Equal(t, []Event{
		{Kind: NewSign, Old: PredictedFailure, New: PredictedFailure, Rule: RuleBackblazeCounter, Text: "Current_Pending_Sector (197) rose from 3 to 5"},
	}, v.Events)

	v, h = Evaluate(h, snap(0))
	assert.Equal(t, OK, v.State)
	assert.Equal(t, []Event{
		{Kind: StateChanged, Old: PredictedFailure, New: OK, Text: "health changed from predicted_failure to ok: no health rule fires any more"},
	}, v.Events)
	assert.Equal(t, OK, h.State())
}

func TestRisingBaselines(t *testing.T) {
	realloc := func(n uint64) Snapshot {
		return Snapshot{ATA: &ATA{Attributes: attrs(t, "", nil, raw(5, ata.FlagPreFail, 100, 100, n))}}
	}
	var h History
	var v Verdict
	v, h = Evaluate(h, realloc(8))
	assert.Equal(t, []RuleID{RuleBackblazeCounter}, ruleIDs(v.Reasons), "known history is not a rise")

	// A read without the attribute (unreadable page) keeps the baseline.
	_, h = Evaluate(h, Snapshot{})
	v, h = Evaluate(h, realloc(10))
	assert.Equal(t, []RuleID{RuleBackblazeCounter, RuleReallocatedRising}, ruleIDs(v.Reasons))
	assert.Contains(t, v.Reasons[1].Text, "rose from 8 to 10")

	// It stays raised while above the baseline...
	v, h = Evaluate(h, realloc(10))
	assert.Equal(t, []RuleID{RuleBackblazeCounter, RuleReallocatedRising}, ruleIDs(v.Reasons))
	assert.Empty(t, v.Events)
	// ...and a counter going backwards (drive swapped or reset) re-bases.
	v, _ = Evaluate(h, realloc(2))
	assert.Equal(t, []RuleID{RuleBackblazeCounter}, ruleIDs(v.Reasons))
}

// Evaluate is pure: the previous History is never modified, so the same
// inputs always give the same outputs.
func TestEvaluateDoesNotModifyHistory(t *testing.T) {
	var h History
	_, h = Evaluate(h, Snapshot{ATA: &ATA{Attributes: attrs(t, "", nil, raw(5, ata.FlagPreFail, 100, 100, 1))}})
	next := Snapshot{ATA: &ATA{Attributes: attrs(t, "", nil, raw(5, ata.FlagPreFail, 100, 100, 4), raw(197, 0, 100, 100, 2))}}
	v1, h1 := Evaluate(h, next)
	v2, h2 := Evaluate(h, next)
	assert.Equal(t, v1, v2)
	assert.Equal(t, h1, h2)
	assert.NotEqual(t, h, h1)
	assert.NotEmpty(t, v1.Events)
}

func TestRuleTableDocumented(t *testing.T) {
	seen := map[RuleID]bool{}
	last := Failed
	for _, r := range Rules() {
		assert.False(t, seen[r.ID], "duplicate rule %s", r.ID)
		seen[r.ID] = true
		assert.NotEmpty(t, r.Condition, r.ID)
		assert.NotEmpty(t, r.Protocols, r.ID)
		assert.LessOrEqual(t, r.State, last, "rules are listed worst state first")
		assert.Contains(t, []State{Degraded, PredictedFailure, Failed}, r.State)
		last = r.State
	}
	assert.Equal(t, "predicted_failure", PredictedFailure.String())
	assert.Equal(t, "unknown", State(42).String())
	assert.Equal(t, "state_changed", StateChanged.String())
	assert.Equal(t, "new_sign", NewSign.String())
}

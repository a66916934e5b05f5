package nvme

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
)

// The NVMe fixtures: QEMU's controller (healthy, and with critical warning
// bit 2 injected) and the Linux NVMe target over loop (temperature 0 K).
var controllers = []struct {
	dir, ctrl, ns string // ns: the block device whose smartctl output lists namespaces
	cli           string // nvme-cli capture, "" when none
}{
	{"k6.12", "nvme0", "nvme0n1", "usr_sbin_nvme_smart-log_dev_nvme0_-o_json.txt"},
	{"k6.12-critwarn4", "nvme0", "nvme0n1", "usr_sbin_nvme_smart-log_dev_nvme0_-o_json.txt"},
	{"k6.12-nvmet", "nvme1", "nvme1n1", "usr_sbin_nvme_smart-log_dev_nvme1_-o_json.txt"},
}

func smartctl(t *testing.T, dir, dev string) fixture.Smartctl {
	var o fixture.Smartctl
	fixture.JSON(t, &o, "qemu", dir, "usr_sbin_smartctl_-x_--json_c_dev_"+dev+".txt")
	return o
}

func TestSMARTLogMatchesSmartctlAndNVMeCLI(t *testing.T) {
	for _, c := range controllers {
		t.Run(c.dir, func(t *testing.T) {
			log, err := ParseSMARTLog(fixture.Read(t, "qemu", c.dir, c.ctrl+".log02_smart_log.bin"))
			require.NoError(t, err)
			o := smartctl(t, c.dir, c.ctrl)
			require.NotNil(t, o.NVMeLog)
			s := o.NVMeLog
			u := func(v Uint128) uint64 {
				n, ok := v.Uint64()
				require.True(t, ok)
				return n
			}

			assert.Equal(t, s.CriticalWarning, uint8(log.CriticalWarning))
			if celsius, ok := log.Temperature.Celsius(); ok {
				require.NotNil(t, s.Temperature)
				assert.Equal(t, *s.Temperature, celsius)
				assert.Equal(t, o.Temperature.Current, celsius)
			} else {
				assert.Nil(t, s.Temperature, "smartctl omits a 0 K temperature; so do we")
				assert.Nil(t, o.Temperature)
			}
			assert.Equal(t, s.AvailableSpare, log.AvailableSpare)
			assert.Equal(t, s.AvailableSpareThreshold, log.SpareThreshold)
			assert.Equal(t, s.PercentageUsed, log.PercentageUsed)
			assert.Equal(t, s.DataUnitsRead, u(log.DataUnitsRead))
			assert.Equal(t, s.DataUnitsWritten, u(log.DataUnitsWritten))
			assert.Equal(t, s.HostReads, u(log.HostReadCommands))
			assert.Equal(t, s.HostWrites, u(log.HostWriteCommands))
			assert.Equal(t, s.ControllerBusyTime, u(log.ControllerBusyMinutes))
			assert.Equal(t, s.PowerCycles, u(log.PowerCycles))
			assert.Equal(t, s.PowerOnHours, u(log.PowerOnHours))
			assert.Equal(t, s.UnsafeShutdowns, u(log.UnsafeShutdowns))
			assert.Equal(t, s.MediaErrors, u(log.MediaErrors))
			// The Linux target counts every admin command it rejects in
			// this counter, and smartctl and nvme-cli ran after the raw dump
			// and after more rejected probes: theirs may only be larger.
			if c.dir == "k6.12-nvmet" {
				assert.LessOrEqual(t, u(log.ErrorLogEntries), s.NumErrLogEntries)
			} else {
				assert.Equal(t, s.NumErrLogEntries, u(log.ErrorLogEntries))
			}
			if s.WarningTempTime != nil {
				assert.Equal(t, *s.WarningTempTime, log.WarningTempMinutes)
				assert.Equal(t, *s.CriticalCompTime, log.CriticalTempMinutes)
			}
			require.NotNil(t, o.PowerCycleCount)
			assert.Equal(t, *o.PowerCycleCount, int64(u(log.PowerCycles)))
			require.NotNil(t, o.PowerOnTime)
			assert.Equal(t, o.PowerOnTime.Hours, int64(u(log.PowerOnHours)))

			// smartctl's verdict and its decoding of the warning bits.
			passed := log.CriticalWarning == 0
			assert.Equal(t, o.SmartStatus.Passed, passed)
			assert.Equal(t, o.SmartStatus.NVMe.Value, int(log.CriticalWarning))
			assert.Equal(t, o.SmartStatus.NVMe.SpareBelowThreshold, log.CriticalWarning.Has(WarnSpareBelowThreshold))
			assert.Equal(t, o.SmartStatus.NVMe.TemperatureThreshold, log.CriticalWarning.Has(WarnTemperature))
			assert.Equal(t, o.SmartStatus.NVMe.ReliabilityDegraded, log.CriticalWarning.Has(WarnReliability))
			assert.Equal(t, o.SmartStatus.NVMe.MediaReadOnly, log.CriticalWarning.Has(WarnReadOnly))
			assert.Equal(t, o.SmartStatus.NVMe.VolatileBackupFailed, log.CriticalWarning.Has(WarnVolatileBackup))
			assert.Equal(t, o.SmartStatus.NVMe.PMRUnreliable, log.CriticalWarning.Has(WarnPMRReadOnly))

			// nvme-cli prints the raw Kelvin value and the 128-bit counters
			// as decimal strings.
			var n fixture.NVMeCLI
			fixture.JSON(t, &n, "qemu", c.dir, c.cli)
			assert.Equal(t, n.CriticalWarning, uint8(log.CriticalWarning))
			assert.Equal(t, n.Temperature, uint16(log.Temperature))
			assert.Equal(t, n.AvailSpare, log.AvailableSpare)
			assert.Equal(t, n.SpareThresh, log.SpareThreshold)
			assert.Equal(t, n.PercentUsed, log.PercentageUsed)
			assert.Equal(t, n.EnduranceGroupWarn, log.EnduranceGroupWarningSummary)
			assert.Equal(t, n.DataUnitsRead, log.DataUnitsRead.String())
			assert.Equal(t, n.DataUnitsWritten, log.DataUnitsWritten.String())
			assert.Equal(t, n.HostReadCommands, log.HostReadCommands.String())
			assert.Equal(t, n.HostWriteCommands, log.HostWriteCommands.String())
			assert.Equal(t, n.ControllerBusyTime, log.ControllerBusyMinutes.String())
			assert.Equal(t, n.PowerCycles, log.PowerCycles.String())
			assert.Equal(t, n.PowerOnHours, log.PowerOnHours.String())
			assert.Equal(t, n.UnsafeShutdowns, log.UnsafeShutdowns.String())
			assert.Equal(t, n.MediaErrors, log.MediaErrors.String())
			if c.dir != "k6.12-nvmet" {
				assert.Equal(t, n.NumErrLogEntries, log.ErrorLogEntries.String())
			}
			assert.Equal(t, n.WarningTempTime, log.WarningTempMinutes)
			assert.Equal(t, n.CriticalCompTime, log.CriticalTempMinutes)
			assert.Equal(t, [4]uint32{n.Thm1TransCount, n.Thm2TransCount, n.Thm1TotalTime, n.Thm2TotalTime},
				[4]uint32{log.ThermalTransitions[0], log.ThermalTransitions[1], log.ThermalSeconds[0], log.ThermalSeconds[1]})
			for i, k := range log.TempSensors {
				_, ok := k.Celsius()
				assert.False(t, ok, "sensor %d: none of these controllers has extra sensors", i+1)
			}
		})
	}
}

// The namespace block device and the controller node return the same log.
func TestSMARTLogSameThroughNamespaceNode(t *testing.T) {
	a, err := ParseSMARTLog(fixture.Read(t, "qemu", "k6.12-nvmet", "nvme1.log02_smart_log.bin"))
	require.NoError(t, err)
	b, err := ParseSMARTLog(fixture.Read(t, "qemu", "k6.12-nvmet", "nvme1n1.log02_smart_log.bin"))
	require.NoError(t, err)
	// ...except for the error counter the probes in between kept raising.
	assert.Equal(t, 1, b.ErrorLogEntries.Cmp(a.ErrorLogEntries))
	a.ErrorLogEntries, b.ErrorLogEntries = Uint128{}, Uint128{}
	assert.Equal(t, a, b)
}

func TestIdentifyMatchesSmartctl(t *testing.T) {
	for _, c := range controllers {
		t.Run(c.dir, func(t *testing.T) {
			ctrl, err := ParseIdentifyController(fixture.Read(t, "qemu", c.dir, c.ctrl+".identify_ctrl.bin"))
			require.NoError(t, err)
			o := smartctl(t, c.dir, c.ns)
			assert.Equal(t, o.ModelName, ctrl.Model)
			assert.Equal(t, o.SerialNumber, ctrl.Serial)
			assert.Equal(t, o.FirmwareVersion, ctrl.Firmware)
			assert.Equal(t, o.NVMePCIVendor.ID, ctrl.VendorID)
			assert.Equal(t, o.NVMePCIVendor.SubsystemID, ctrl.SubsystemVendorID)
			assert.Equal(t, o.NVMeIEEEOUI, ctrl.IEEEOUI)
			assert.Equal(t, o.NVMeControllerID, ctrl.ControllerID)
			assert.Equal(t, o.NVMeVersion.Value, ctrl.Version)
			assert.Equal(t, o.NVMeVersion.String, ctrl.VersionString())
			assert.Equal(t, o.NVMeNumberOfNamespaces, ctrl.Namespaces)
			assert.True(t, ctrl.SupportsLog(LogSMART))

			ns, err := ParseIdentifyNamespace(fixture.Read(t, "qemu", c.dir, c.ctrl+".identify_ns1.bin"))
			require.NoError(t, err)
			require.Len(t, o.NVMeNamespaces, 1)
			want := o.NVMeNamespaces[0]
			assert.Equal(t, want.Size.Blocks, ns.Size)
			assert.Equal(t, want.Size.Bytes, ns.SizeBytes())
			assert.Equal(t, want.Capacity.Blocks, ns.Capacity)
			assert.Equal(t, want.Utilization.Blocks, ns.Utilization)
			assert.Equal(t, want.Capacity.Bytes, ns.CapacityBytes())
			assert.Equal(t, want.Utilization.Bytes, ns.UtilizationBytes())
			// Neither QEMU's NVMe nor the Linux target is thin provisioned (NSFEAT 14h, 12h): NUSE is NCAP.
			assert.False(t, ns.ThinProvisioned())
			assert.Equal(t, ns.Capacity, ns.Utilization)
			assert.Equal(t, want.FormattedLBASize, ns.LBASize)
			assert.Equal(t, o.UserCapacity.Bytes, ns.SizeBytes())
			assert.Equal(t, o.LogicalBlockSize, ns.LBASize)
			assert.False(t, ns.HasNGUID())
			assert.False(t, ns.HasEUI64())
		})
	}
}

// Facts from the VM probe of the same controllers (smart.go's dump), which
// smartctl does not print: WCTEMP/CCTEMP, OACS, LPA, ELPE.
func TestIdentifyControllerLimitsAndLogs(t *testing.T) {
	q, err := ParseIdentifyController(fixture.Read(t, "qemu", "k6.12", "nvme0.identify_ctrl.bin"))
	require.NoError(t, err)
	assert.Equal(t, Kelvin(343), q.WarningTemp)
	assert.Equal(t, Kelvin(373), q.CriticalTemp)
	assert.Equal(t, uint16(0x10a), q.OACS)
	assert.Equal(t, uint8(0x07), q.LPA)
	assert.Equal(t, 1, q.ErrorLogCapacity)
	assert.Equal(t, "nqn.2019-08.org.qemu:smarttest", q.SubNQN)
	assert.True(t, q.SupportsLog(LogCommandsEffects))
	// QEMU 7.2 does not do device self-test (OACS bit 4 clear) and indeed
	// answered Get Log Page 06h with status 4002h in the probe.
	assert.False(t, q.SupportsLog(LogDeviceSelfTest))
	assert.True(t, q.PerNamespaceSMART())
	assert.True(t, q.TotalCapacity.IsZero())

	l, err := ParseIdentifyController(fixture.Read(t, "qemu", "k6.12-nvmet", "nvme1.identify_ctrl.bin"))
	require.NoError(t, err)
	assert.Zero(t, l.WarningTemp)
	assert.Zero(t, l.CriticalTemp)
	assert.Equal(t, 128, l.ErrorLogCapacity)
	assert.Equal(t, "testnqn", l.SubNQN)
	assert.False(t, l.SupportsLog(0x0C))
}

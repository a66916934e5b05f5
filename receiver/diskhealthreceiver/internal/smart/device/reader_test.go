package device_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device/devicetest"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

func newReader(t *testing.T, m *devicetest.Machine, mod func(*device.Config)) *device.Reader {
	t.Helper()
	cfg := device.Config{Timeout: 2 * time.Second, Standby: device.StandbyStandby, Open: m.Open, Library: m.Library(), Discover: m.Discover}
	if mod != nil {
		mod(&cfg)
	}
	r := device.NewReader(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, r.Close(ctx))
	})
	return r
}

func byName(t *testing.T, results []device.Result) map[string]device.Result {
	t.Helper()
	out := map[string]device.Result{}
	for _, r := range results {
		out[r.Disk.Name] = r
	}
	return out
}

func TestReadQEMUDisks(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	results, err := newReader(t, m, nil).Collect(t.Context())
	require.NoError(t, err)
	require.Len(t, results, 4)
	got := byName(t, results)
	for name, r := range got {
		assert.Equal(t, device.StatusOK, r.Status, "%s: %v", name, r.Err)
		require.NotNil(t, r.Snapshot, name)
		assert.False(t, r.Time.IsZero())
	}

	// The Seagate-named SATA disk, against smartctl's view of the same drive.
	var sc fixture.Smartctl
	fixture.JSON(t, &sc, "qemu", "k6.12", "usr_sbin_smartctl_-x_--json_c_dev_sda.txt")
	sda := got["sda"].Snapshot.ATA
	require.NotNil(t, sda)
	assert.Equal(t, sc.ModelName, sda.Identity.Model)
	assert.Equal(t, ata.SMARTStatusPassed, sda.Status)
	require.Len(t, sda.Attributes, 7)
	assert.True(t, got["sda"].HasPower)
	assert.Equal(t, ata.PowerActiveOrIdle, got["sda"].Power)
	require.NotNil(t, sda.ErrorLog)
	assert.Equal(t, uint16(0), sda.ErrorLog.ErrorCount)
	assert.NotNil(t, sda.SelfTests)
	assert.Nil(t, sda.Stats, "QEMU keeps no device statistics")

	nv := got["nvme0"].Snapshot.NVMe
	require.NotNil(t, nv)
	require.NotNil(t, nv.Log)
	assert.Equal(t, nvme.Kelvin(323), nv.Log.Temperature)
	assert.Equal(t, nvme.Kelvin(343), nv.Controller.WarningTemp)
	require.Len(t, nv.Namespaces, 1)
	assert.Equal(t, uint64(67108864), nv.Namespaces[0].SizeBytes())

	sdc := got["sdc"].Snapshot.SCSI
	require.NotNil(t, sdc)
	require.NotNil(t, sdc.Temperature)
	assert.Equal(t, 38, sdc.Temperature.Current)
	assert.Equal(t, uint64(8388608), sdc.Capacity.Bytes())
	require.NotNil(t, sdc.IE)
}

// The identity is read once: later reads send only the SMART commands (smart.go's
// device, whose open sends IDENTIFY, stays open between reads).
func TestIdentityCached(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	r := newReader(t, m, nil)
	_, err := r.Collect(t.Context())
	require.NoError(t, err)
	assert.Contains(t, m.Disk("sda").Sent(), devicetest.ATAIdentify)
	assert.Equal(t, []string{devicetest.NVMeIDCtrl, devicetest.NVMeIDNS(1), devicetest.NVMeLog(nvme.LogSMART), devicetest.NVMeLog(nvme.LogError)},
		m.Disk("nvme0").Sent(), "the identity (each namespace's Identify Namespace, NSZE, NCAP and NUSE with it) and the mandatory logs: nothing else")
	for _, n := range []string{"sda", "nvme0", "sdc"} {
		m.Disk(n).ResetSent()
	}
	_, err = r.Collect(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{devicetest.ATACheckPowerMode, devicetest.ATASMARTData, devicetest.ATAThresholds, "ata/return_status",
		devicetest.ATALog(ata.LogSummaryError), devicetest.ATALog(ata.LogSelfTest)}, m.Disk("sda").Sent(),
		"no IDENTIFY, and no second try at the device statistics the drive does not have")
	assert.Equal(t, []string{devicetest.NVMeLog(nvme.LogSMART), devicetest.NVMeLog(nvme.LogError)}, m.Disk("nvme0").Sent(),
		"NVMe 1.4, no telemetry bit, not Amazon, no thin namespace: the mandatory logs only, no list, no vendor log, no Identify again")
	assert.Equal(t, []string{devicetest.SCSILog(0x0D), devicetest.SCSILog(0x2F)}, m.Disk("sdc").Sent())
}

func TestStandby(t *testing.T) {
	for _, tc := range []struct {
		policy device.Standby
		mode   ata.PowerMode
		skip   bool
	}{
		{device.StandbyStandby, ata.PowerStandby, true},
		{device.StandbyStandby, ata.PowerStandbyNVCache, true},
		{device.StandbyStandby, ata.PowerIdle, false},
		{device.StandbyStandby, ata.PowerActiveOrIdle, false},
		{device.StandbyIdle, ata.PowerIdle, true},
		{device.StandbyIdle, ata.PowerStandby, true},
		{device.StandbyIdle, ata.PowerActiveOrIdle, false},
		{device.StandbyNever, ata.PowerStandby, false},
	} {
		t.Run(tc.policy.String()+"/"+tc.mode.String(), func(t *testing.T) {
			m := devicetest.QEMU(t, "k6.12")
			m.Disk("sda").Power = tc.mode
			results, err := newReader(t, m, func(c *device.Config) { c.Standby = tc.policy }).Collect(t.Context())
			require.NoError(t, err)
			got := byName(t, results)
			sent := m.Disk("sda").Sent()
			if tc.skip {
				assert.Equal(t, device.StatusStandbySkipped, got["sda"].Status)
				assert.Nil(t, got["sda"].Snapshot)
				assert.Equal(t, []string{devicetest.ATACheckPowerMode}, sent, "a sleeping disk gets no SMART command")
				require.ErrorContains(t, got["sda"].Err, "power mode "+tc.mode.String())
			} else {
				assert.Equal(t, device.StatusOK, got["sda"].Status)
				assert.Contains(t, sent, devicetest.ATASMARTData)
			}
			if tc.policy == device.StandbyNever {
				assert.NotContains(t, sent, devicetest.ATACheckPowerMode)
				assert.False(t, got["sda"].HasPower)
			}
			assert.Equal(t, device.StatusOK, got["sdb"].Status, "the other disk is read as usual")
		})
	}
}

// A hung ioctl costs its own disk a timeout and nothing else: the read
// returns at the deadline with every other disk's data, and the hung disk
// gets no second command while the first is in flight.
func TestHungDisk(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	hang := make(chan struct{})
	m.Disk("nvme0").Hang = hang
	const timeout = 300 * time.Millisecond
	r := newReader(t, m, func(c *device.Config) { c.Timeout = timeout })

	start := time.Now()
	results, err := r.Collect(t.Context())
	took := time.Since(start)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, took, timeout)
	assert.Less(t, took, timeout+time.Second, "the read must end at its deadline")
	got := byName(t, results)
	assert.Equal(t, device.StatusTimeout, got["nvme0"].Status)
	require.ErrorIs(t, got["nvme0"].Err, device.ErrTimeout)
	for _, n := range []string{"sda", "sdb", "sdc"} {
		assert.Equal(t, device.StatusOK, got[n].Status, n)
	}

	sent := len(m.Disk("nvme0").Sent())
	results, err = r.Collect(t.Context())
	require.NoError(t, err)
	got = byName(t, results)
	assert.Equal(t, device.StatusTimeout, got["nvme0"].Status)
	require.ErrorContains(t, got["nvme0"].Err, "still in flight")
	assert.Len(t, m.Disk("nvme0").Sent(), sent, "never two reads of one disk at once")
	assert.Equal(t, device.StatusOK, got["sda"].Status)

	close(hang)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.Close(ctx))
	m.Disk("nvme0").Hang = nil
	results, err = r.Collect(t.Context())
	require.NoError(t, err)
	assert.Equal(t, device.StatusOK, byName(t, results)["nvme0"].Status, "read again once the ioctl returned")
}

// The scrape's context ends the wait too.
func TestReadContextCancel(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	hang := make(chan struct{})
	m.Disk("sdb").Hang = hang
	defer close(hang)
	r := newReader(t, m, func(c *device.Config) { c.Timeout = time.Minute })
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	results, err := r.Collect(ctx)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, device.StatusTimeout, byName(t, results)["sdb"].Status)
}

func TestPermissionDenied(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	m.Disk("sda").Deny = true
	m.Disk("nvme0").Deny = true
	hw := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(hw, "temp1_input"), []byte("49850\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(hw, "temp1_crit"), []byte("99850\n"), 0o644))
	m.Disk("nvme0").Info.HwmonDir = hw
	m.Disk("sdb").DenyOpen = true

	results, err := newReader(t, m, nil).Collect(t.Context())
	require.NoError(t, err)
	got := byName(t, results)

	sda := got["sda"]
	assert.Equal(t, device.StatusPermissionDenied, sda.Status)
	require.ErrorIs(t, sda.Err, device.ErrPermission)
	assert.Equal(t, device.ProtocolATA, sda.Disk.Protocol, "a SATA disk stays ATA when pass-through is refused")
	assert.Nil(t, sda.Snapshot)
	assert.Equal(t, []string{devicetest.ATACheckPowerMode}, m.Disk("sda").Sent())

	nv := got["nvme0"]
	assert.Equal(t, device.StatusPermissionDenied, nv.Status)
	require.NotNil(t, nv.Snapshot)
	require.NotNil(t, nv.Snapshot.Hwmon, "the unprivileged hwmon temperature is still read")
	assert.InDelta(t, 49.85, nv.Snapshot.Hwmon.Current, 1e-9)
	assert.InDelta(t, 99.85, nv.Snapshot.Hwmon.Crit, 1e-9)
	assert.False(t, nv.Snapshot.Hwmon.HasMax)

	assert.Equal(t, device.StatusPermissionDenied, got["sdb"].Status)
	require.ErrorContains(t, got["sdb"].Err, "permission denied")
	assert.Equal(t, device.StatusOK, got["sdc"].Status, "SCSI log pages need no privilege")
}

// An NVMe-oF controller that is reconnecting keeps its hwmon sensor, which reads 0 °C: no drive had
// that temperature, so nothing is reported; nor is a 0 from a live controller whose SMART log cannot
// confirm it. A live controller's real reading still is (TestPermissionDenied).
func TestHwmonBelievedOnlyFromALiveController(t *testing.T) {
	for _, tc := range []struct {
		name, state, milli string
		want               bool
	}{
		{"connecting, sensor 0", "connecting", "0", false},
		{"connecting, sensor stale", "connecting", "41850", false},
		{"resetting", "resetting", "41850", false},
		{"live, sensor 0", "live", "0", false},
		{"live", "live", "41850", true},
		{"no state in sysfs", "", "41850", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := devicetest.QEMU(t, "k6.12")
			hw := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(hw, "temp1_input"), []byte(tc.milli+"\n"), 0o644))
			nvme0 := m.Disk("nvme0")
			nvme0.Info.HwmonDir, nvme0.Info.State = hw, tc.state
			// As seen in the QEMU guest: the admin commands of a controller that is not live fail.
			nvme0.Deny = true

			results, err := newReader(t, m, nil).Collect(t.Context())
			require.NoError(t, err)
			nv := byName(t, results)["nvme0"]
			assert.NotEqual(t, device.StatusOK, nv.Status)
			if !tc.want {
				assert.True(t, nv.Snapshot == nil || nv.Snapshot.Hwmon == nil, "no temperature: %+v", nv.Snapshot)
				return
			}
			require.NotNil(t, nv.Snapshot)
			require.NotNil(t, nv.Snapshot.Hwmon)
			assert.InDelta(t, 41.85, nv.Snapshot.Hwmon.Current, 1e-9)
		})
	}
}

// Linux 6.2+ answers Identify without CAP_SYS_ADMIN but refuses Get Log Page: a controller with no
// hwmon sensor is then permission_denied with its identity, not a panic in the fallback.
func TestSMARTLogDeniedWithoutSensor(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	nvme0 := m.Disk("nvme0")
	nvme0.Info.HwmonDir = ""
	nvme0.DenyCommands = []string{devicetest.NVMeLog(0x02)}
	results, err := newReader(t, m, nil).Collect(t.Context())
	require.NoError(t, err)
	nv := byName(t, results)["nvme0"]
	assert.Equal(t, device.StatusPermissionDenied, nv.Status, "%v", nv.Err)
	require.NotNil(t, nv.Snapshot)
	require.NotNil(t, nv.Snapshot.NVMe, "the identity read before the refusal")
	assert.Nil(t, nv.Snapshot.Hwmon)
}

// smart.go drops the NVMe status of its Get Log Page: a controller that refused it leaves a page of
// zeros, whose 0 % spare would read as a failing drive. A composite temperature of 0 K is no
// controller's: the read is an error and nothing of the log is reported.
func TestEmptySMARTLogIsNoReading(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	m.Disk("nvme0").Pages[devicetest.NVMeLog(nvme.LogSMART)] = make([]byte, nvme.SMARTLogSize)
	results, err := newReader(t, m, nil).Collect(t.Context())
	require.NoError(t, err)
	nv := byName(t, results)["nvme0"]
	assert.Equal(t, device.StatusError, nv.Status)
	require.ErrorContains(t, nv.Err, "every byte 0")
	require.NotNil(t, nv.Snapshot)
	require.NotNil(t, nv.Snapshot.NVMe, "the identity read before it")
	assert.Nil(t, nv.Snapshot.NVMe.Log)
	assert.Equal(t, device.StatusOK, byName(t, results)["sda"].Status, "the other disks are read")
}

// Linux's NVMe target (nvmet, as an NVMe/TCP or RDMA controller) fills only the data units and the
// commands of its SMART / health log, and leaves the composite temperature at 0 K: that is a reading,
// with no temperature (the stack guest's nvmet controller read as error before).
func TestPartlyFilledSMARTLogIsAReading(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	page := make([]byte, nvme.SMARTLogSize)
	page[32], page[48], page[64], page[80] = 7, 3, 140, 60 // data units read/written, host reads/writes
	m.Disk("nvme0").Pages[devicetest.NVMeLog(nvme.LogSMART)] = page
	results, err := newReader(t, m, nil).Collect(t.Context())
	require.NoError(t, err)
	nv := byName(t, results)["nvme0"]
	require.Equal(t, device.StatusOK, nv.Status, "%v", nv.Err)
	l := nv.Snapshot.NVMe.Log
	require.NotNil(t, l)
	assert.Equal(t, uint64(140), l.HostReadCommands.Lo)
	_, hasTemp := l.Temperature.Celsius()
	assert.False(t, hasTemp, "0 K is no temperature")
}

func TestPanicCostsOneDisk(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	m.Disk("sdb").Panic = true
	results, err := newReader(t, m, nil).Collect(t.Context())
	require.NoError(t, err)
	got := byName(t, results)
	assert.Equal(t, device.StatusError, got["sdb"].Status)
	require.ErrorContains(t, got["sdb"].Err, "panic while reading sdb")
	for _, n := range []string{"sda", "nvme0", "sdc"} {
		assert.Equal(t, device.StatusOK, got[n].Status, n)
	}
}

func TestUnsupported(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	// QEMU scsi-hd: INQUIRY works, LOG SENSE does not.
	sdc := m.Disk("sdc")
	delete(sdc.Pages, devicetest.SCSILog(0))
	// SMART disabled on sdb: IDENTIFY word 85 bit 0 cleared.
	id := append([]byte(nil), m.Disk("sdb").Pages[devicetest.ATAIdentify]...)
	id[85*2] &^= 1
	fixChecksum(id)
	m.Disk("sdb").Pages[devicetest.ATAIdentify] = id
	m.Add(&devicetest.Disk{Info: device.Disk{Name: "vda", Protocol: device.ProtocolNone, Node: "/dev/vda"}})

	results, err := newReader(t, m, nil).Collect(t.Context())
	require.NoError(t, err)
	got := byName(t, results)
	assert.Equal(t, device.StatusUnsupported, got["sdc"].Status)
	require.NotNil(t, got["sdc"].Snapshot, "identity is still reported")
	assert.NotNil(t, got["sdc"].Snapshot.SCSI.Capacity)
	assert.Equal(t, device.StatusUnsupported, got["sdb"].Status)
	require.ErrorContains(t, got["sdb"].Err, "SMART is disabled")
	assert.NotContains(t, m.Disk("sdb").Sent(), devicetest.ATASMARTData)
	assert.Equal(t, device.StatusUnsupported, got["vda"].Status)
	assert.Empty(t, m.Disk("vda").Sent(), "nothing is opened for a disk without SMART")
}

// fixChecksum sets IDENTIFY's word 255 checksum after an edit.
func fixChecksum(b []byte) {
	if b[510] != 0xA5 {
		return
	}
	var sum byte
	for _, v := range b[:511] {
		sum += v
	}
	b[511] = -sum
}

// Device statistics are read when the drive keeps them: page 0 lists the
// pages, then the listed pages are read (SMART READ LOG here: no GPL).
func TestDeviceStatistics(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	log := make([]byte, 2*ata.PageSize)
	binary.LittleEndian.PutUint64(log, 1) // page 0, revision 1
	log[8], log[9], log[10] = 2, 0, 1     // pages 0 and 1
	p1 := log[ata.PageSize:]
	binary.LittleEndian.PutUint64(p1, 1|1<<16)
	binary.LittleEndian.PutUint64(p1[0x08:], 3<<62|42)   // power-on resets
	binary.LittleEndian.PutUint64(p1[0x18:], 3<<62|1000) // logical sectors written
	m.Disk("sda").Pages[devicetest.ATALog(ata.LogDeviceStatistics)] = log

	results, err := newReader(t, m, nil).Collect(t.Context())
	require.NoError(t, err)
	sda := byName(t, results)["sda"]
	require.Equal(t, device.StatusOK, sda.Status)
	stats := sda.Snapshot.ATA.Stats
	require.NotNil(t, stats)
	v, ok := stats.Get(ata.StatLifetimePowerOnResets)
	assert.True(t, ok)
	assert.Equal(t, uint64(42), v)
	v, ok = stats.Get(ata.StatLogicalSectorsWritten)
	assert.True(t, ok)
	assert.Equal(t, uint64(1000), v)
}

func TestFailingDrive(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12-critwarn4")
	m.Disk("sda").Failing = true
	results, err := newReader(t, m, nil).Collect(t.Context())
	require.NoError(t, err)
	got := byName(t, results)
	assert.Equal(t, ata.SMARTStatusFailed, got["sda"].Snapshot.ATA.Status)
	nv := got["nvme0"].Snapshot.NVMe
	require.NotNil(t, nv.Log)
	assert.True(t, nv.Log.CriticalWarning.Has(nvme.WarnReliability), "the injected critical warning is read")
}

func TestDiscoverErrorStillReads(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	r := newReader(t, m, func(c *device.Config) {
		c.Discover = func(root string) ([]device.Disk, error) {
			d, _ := m.Discover(root)
			return d, os.ErrPermission
		}
		c.Match = func(name string) bool { return name != "sdc" }
	})
	results, err := r.Collect(t.Context())
	require.ErrorIs(t, err, os.ErrPermission)
	assert.Len(t, results, 3, "sdc is filtered out, the others read")
}

func TestParseStandby(t *testing.T) {
	for in, want := range map[string]device.Standby{"never": device.StandbyNever, "standby": device.StandbyStandby, "idle": device.StandbyIdle, "": device.StandbyStandby} {
		got, err := device.ParseStandby(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := device.ParseStandby("sleep")
	require.ErrorContains(t, err, `standby "sleep"`)
}

// A Config that says nothing about standby never wakes a disk.
func TestStandbyZeroValue(t *testing.T) {
	var c device.Config
	assert.Equal(t, device.StandbyStandby, c.Standby)
}

// A disk is free again when its result is handed over: reads back to back
// never see their own previous read as still in flight.
func TestBackToBackReads(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	r := newReader(t, m, nil)
	for i := range 50 {
		results, err := r.Collect(t.Context())
		require.NoError(t, err)
		for _, res := range results {
			require.Equal(t, device.StatusOK, res.Status, "read %d, %s: %v", i, res.Disk.Name, res.Err)
		}
	}
}

// A bridge that cannot report the power mode: the disk is read anyway (as
// smartctl does), and the snapshot says the mode was unknown.
func TestPowerModeUnknown(t *testing.T) {
	m := devicetest.QEMU(t, "k6.12")
	m.Disk("sda").Reject = []string{devicetest.ATACheckPowerMode}
	results, err := newReader(t, m, nil).Collect(t.Context())
	require.NoError(t, err)
	sda := byName(t, results)["sda"]
	require.Equal(t, device.StatusOK, sda.Status, "%v", sda.Err)
	assert.False(t, sda.HasPower)
	require.NotEmpty(t, sda.Snapshot.Problems)
	require.ErrorContains(t, sda.Snapshot.Problems[0], "power mode unknown, read anyway")
	assert.Contains(t, m.Disk("sda").Sent(), devicetest.ATASMARTData)
}

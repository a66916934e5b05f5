package ata

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
)

// The QEMU fixtures: one AHCI disk posing as a Seagate ST4000DM004 and one
// plain "QEMU HARDDISK", captured under two kernels. Which of sda/sdb is the
// Seagate differs per boot; the oracle JSON of the same boot says which.
var qemuDisks = []struct {
	dir, disk string
	pages     bool // SMART data/threshold/log pages were kept for this boot
}{
	{"k6.12", "sda", true},
	{"k6.12", "sdb", true},
	{"k6.1", "sda", false},
	{"k6.1", "sdb", false},
}

func oracle(t *testing.T, dir, disk string) fixture.Smartctl {
	var o fixture.Smartctl
	fixture.JSON(t, &o, "qemu", dir, "usr_sbin_smartctl_-x_--json_c_dev_"+disk+".txt")
	return o
}

func TestIdentifyMatchesSmartctl(t *testing.T) {
	for _, d := range qemuDisks {
		t.Run(d.dir+"/"+d.disk, func(t *testing.T) {
			o := oracle(t, d.dir, d.disk)
			id, err := ParseIdentify(fixture.Read(t, "qemu", d.dir, d.disk+".ata_identify.bin"))
			require.NoError(t, err)

			assert.Equal(t, o.ModelName, id.Model)
			assert.Equal(t, o.SerialNumber, id.Serial)
			assert.Equal(t, o.FirmwareVersion, id.Firmware)
			assert.Equal(t, o.UserCapacity.Blocks, id.Sectors)
			assert.Equal(t, o.UserCapacity.Bytes, id.Capacity())
			assert.Equal(t, o.LogicalBlockSize, id.LogicalSectorSize)
			assert.Equal(t, o.PhysicalBlockSize, id.PhysicalSectorSize)
			assert.Equal(t, o.ATAVersion.MajorValue, id.MajorVersion)
			assert.Equal(t, o.ATAVersion.MinorValue, id.MinorVersion)
			assert.Equal(t, o.SmartSupport.Available, id.SMARTSupported)
			assert.Equal(t, o.SmartSupport.Enabled, id.SMARTEnabled)
			assert.Equal(t, o.ATASmartData.Capabilities.GPLoggingSupported, id.GPLSupported)
			assert.Equal(t, o.Trim.Supported, id.TRIM)
			if o.RotationRate != nil {
				assert.Equal(t, *o.RotationRate, id.RotationRate)
			} else {
				assert.Zero(t, id.RotationRate, "smartctl omits rotation_rate only when word 217 is 0")
			}
			if o.WWN != nil {
				naa, oui, vid := id.WWNParts()
				assert.Equal(t, o.WWN.NAA, naa)
				assert.Equal(t, o.WWN.OUI, oui)
				assert.Equal(t, o.WWN.ID, vid)
			} else {
				assert.Zero(t, id.WWN)
			}
			// smartctl names a family exactly when its database knows the
			// model; ours must know the same QEMU models.
			assert.Equal(t, o.ModelFamily, lookup(t, id.Model).Family)
		})
	}
}

// leadingInt parses the first integer in a smartctl raw string
// ("31 (Min/Max 31/31)" -> 31, "1h+00m+00.000s" -> 1).
func leadingInt(t *testing.T, s string) int64 {
	end := 0
	for end < len(s) && (s[end] == '-' || (s[end] >= '0' && s[end] <= '9')) {
		end++
	}
	v, err := strconv.ParseInt(s[:end], 10, 64)
	require.NoError(t, err, "raw string %q", s)
	return v
}

func TestAttributesMatchSmartctl(t *testing.T) {
	for _, d := range qemuDisks {
		if !d.pages {
			continue
		}
		t.Run(d.dir+"/"+d.disk, func(t *testing.T) {
			o := oracle(t, d.dir, d.disk)
			id, err := ParseIdentify(fixture.Read(t, "qemu", d.dir, d.disk+".ata_identify.bin"))
			require.NoError(t, err)
			data, err := ParseSMARTData(fixture.Read(t, "qemu", d.dir, d.disk+".smart_read_data.bin"))
			require.NoError(t, err)
			th, err := ParseThresholds(fixture.Read(t, "qemu", d.dir, d.disk+".smart_read_thresholds.bin"))
			require.NoError(t, err)
			preset := lookup(t, id.Model)
			attrs := preset.Decode(data, th)

			assert.Equal(t, o.ATASmartAttributes.Revision, data.Revision)
			require.Len(t, attrs, len(o.ATASmartAttributes.Table))
			for i, want := range o.ATASmartAttributes.Table {
				got := attrs[i]
				assert.Equal(t, want.ID, got.ID)
				assert.Equal(t, want.Name, got.Name, "id %d", want.ID)
				assert.Equal(t, want.Flags.Value, got.Flags, "id %d", want.ID)
				assert.Equal(t, want.Flags.Prefailure, got.PreFail(), "id %d", want.ID)
				assert.Equal(t, want.Value, got.Value, "id %d", want.ID)
				assert.Equal(t, want.Worst, got.Worst, "id %d", want.ID)
				assert.True(t, got.HasThreshold, "id %d", want.ID)
				assert.Equal(t, want.Thresh, got.Threshold, "id %d", want.ID)
				assert.Equal(t, want.WhenFailed == "FAILING_NOW", got.FailingNow(), "id %d", want.ID)
				assert.Equal(t, want.WhenFailed == "In_the_past", got.FailedInPast(), "id %d", want.ID)
				assert.Equal(t, want.Raw.Value, got.Raw.Bits, "id %d raw", want.ID)
				assert.Equal(t, leadingInt(t, want.Raw.String), got.Raw.Value, "id %d decoded (smartctl %q)", want.ID, want.Raw.String)
				assert.Equal(t, want.Raw.String, got.Raw.String(), "id %d", want.ID)
			}

			temp, ok := attrs.Temperature()
			require.True(t, ok)
			assert.Equal(t, o.Temperature.Current, temp)
			poh, ok := attrs.PowerOn()
			require.True(t, ok)
			assert.Equal(t, time.Duration(o.PowerOnTime.Hours)*time.Hour+time.Duration(o.PowerOnTime.Minutes)*time.Minute, poh)
			cycles, ok := attrs.PowerCycles()
			require.True(t, ok)
			assert.Equal(t, *o.PowerCycleCount, cycles)

			sd := o.ATASmartData
			assert.Equal(t, sd.OfflineDataCollection.Status.Value, data.OfflineCollectionStatus)
			assert.Equal(t, sd.OfflineDataCollection.CompletionSeconds, data.OfflineCollectionSeconds)
			assert.Equal(t, sd.SelfTest.Status.Value, data.SelfTestExecutionStatus)
			assert.Equal(t, sd.SelfTest.Status.Passed, !data.SelfTestStatus().Failed())
			assert.Equal(t, sd.SelfTest.PollingMinutes.Short, data.ShortTestMinutes)
			assert.Equal(t, sd.SelfTest.PollingMinutes.Extended, data.ExtendedTestMinutes)
			assert.Equal(t, sd.Capabilities.Values, []uint16{uint16(data.OfflineCapabilities), data.SMARTCapabilities})
			assert.Equal(t, sd.Capabilities.ErrorLoggingSupported, data.ErrorLoggingSupported)

			errs, err := ParseErrorLogSummary(fixture.Read(t, "qemu", d.dir, d.disk+".smart_read_log01.bin"))
			require.NoError(t, err)
			assert.Equal(t, o.ATASmartErrorLog.Summary.Revision, errs.Revision)
			assert.Equal(t, o.ATASmartErrorLog.Summary.Count, errs.ErrorCount)
			assert.Empty(t, errs.Entries)

			tests, err := ParseSelfTestLog(fixture.Read(t, "qemu", d.dir, d.disk+".smart_read_log06.bin"))
			require.NoError(t, err)
			assert.Equal(t, o.ATASmartSelfTestLog.Standard.Revision, tests.Revision)
			assert.Len(t, tests.Entries, o.ATASmartSelfTestLog.Standard.Count)
			_, failed := tests.UnresolvedFailure()
			assert.False(t, failed)

			// The oracle's overall verdict, for the health rules' sake:
			// nothing at or below threshold on either QEMU disk.
			assert.True(t, o.SmartStatus.Passed)
			for _, a := range attrs {
				assert.False(t, a.FailingNow(), "%s", a.Label())
			}
		})
	}
}

// The QEMU AHCI disk's Seagate identity comes only from the model string:
// the same static attribute table decodes differently under the Seagate
// preset (attribute 9 as msec24hour32).
func TestSeagatePresetChangesDecoding(t *testing.T) {
	data, err := ParseSMARTData(fixture.Read(t, "qemu", "k6.12", "sda.smart_read_data.bin"))
	require.NoError(t, err)
	seagate := lookup(t, "ST4000DM004-2CV104").Decode(data, nil)
	plain := lookup(t, "QEMU HARDDISK").Decode(data, nil)
	a9s, _ := seagate.Find(9)
	a9p, _ := plain.Find(9)
	assert.Equal(t, FormatMsec24Hour32, a9s.Raw.Format)
	assert.Equal(t, FormatRaw24OptRaw8, a9p.Raw.Format)
	assert.True(t, strings.HasPrefix(a9s.Raw.String(), "1h+"))
	assert.Equal(t, "1", a9p.Raw.String())
	for _, a := range seagate {
		assert.False(t, a.HasThreshold, "nil thresholds page leaves attributes without threshold")
	}
}

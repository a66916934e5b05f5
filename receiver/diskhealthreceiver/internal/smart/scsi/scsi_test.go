package scsi

import (
	"encoding/binary"
	"math"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
)

// page assembles a parameter-format log page.
func page(code, sub uint8, params ...LogParam) []byte {
	var body []byte
	for _, p := range params {
		body = binary.BigEndian.AppendUint16(body, p.Code)
		body = append(body, p.Control, byte(len(p.Value)))
		body = append(body, p.Value...)
	}
	b := []byte{code, sub}
	if sub != 0 {
		b[0] |= 0x40
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(body)))
	return append(b, body...)
}

func param(code uint16, value ...byte) LogParam {
	return LogParam{Code: code, Control: 0x03, Value: value}
}

// scsi_debug's temperature and informational-exceptions pages, rebuilt from
// the module's source; the probe captured their first 8 bytes, which must
// match.
var (
	debugTemperature = page(PageTemperature, 0, param(0x0000, 0, 38), param(0x0001, 0, 65))
	debugIE          = page(PageInformationalExceptions, 0, param(0x0000, 0, 0, 38))
)

func TestScsiDebugPages(t *testing.T) {
	lines := probeLines(t, regexp.MustCompile(`^/dev/sdd LOG SENSE page (0xd|0x2f): err=<nil> status=0x0 .*first=([0-9a-f ]+)$`))
	for _, m := range lines {
		want := debugTemperature
		if m[1] == "0x2f" {
			want = debugIE
		}
		assert.Equal(t, unhex(t, m[2]), want[:8], "rebuilt page %s must start as captured", m[1])
	}

	temp, err := ParseTemperaturePage(debugTemperature)
	require.NoError(t, err)
	assert.Equal(t, Temperature{Current: 38, HasCurrent: true, Reference: 65, HasReference: true}, temp)
	ie, err := ParseInformationalExceptions(debugIE)
	require.NoError(t, err)
	assert.Equal(t, InformationalExceptions{Temperature: 38, HasTemperature: true}, ie)
	assert.False(t, ie.FailurePredicted())
	assert.False(t, ie.Warning())
}

func TestTemperatureUnavailable(t *testing.T) {
	temp, err := ParseTemperaturePage(page(PageTemperature, 0, param(0x0000, 0, 0xFF)))
	require.NoError(t, err)
	assert.False(t, temp.HasCurrent)
	assert.False(t, temp.HasReference)
	_, err = ParseTemperaturePage(debugIE)
	assert.ErrorContains(t, err, "want 0x0d")
}

func TestInformationalExceptions(t *testing.T) {
	ie, err := ParseInformationalExceptions(page(PageInformationalExceptions, 0, param(0x0000, 0x5D, 0x10, 0xFF)))
	require.NoError(t, err)
	assert.True(t, ie.FailurePredicted())
	assert.False(t, ie.HasTemperature)
	ie, err = ParseInformationalExceptions(page(PageInformationalExceptions, 0, param(0x0000, 0x0B, 0x01)))
	require.NoError(t, err)
	assert.True(t, ie.Warning())
	_, err = ParseInformationalExceptions(page(PageInformationalExceptions, 0, param(0x0001, 0, 0)))
	assert.ErrorContains(t, err, "missing")
}

func TestErrorCounters(t *testing.T) {
	b := page(PageReadErrors, 0,
		param(0x0000, 0, 0, 0, 5),
		param(0x0003, 0, 0, 0, 0, 0, 0, 1, 0),
		param(0x0005, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06),
		param(0x0006, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2), // 10 bytes, leading zeros
		param(0x8000, 0xAA),                         // vendor specific
	)
	c, err := ParseErrorCounters(b)
	require.NoError(t, err)
	assert.Equal(t, uint8(PageReadErrors), c.Page)
	assert.Equal(t, Counter{5, true}, c.CorrectedWithoutDelay)
	assert.Equal(t, Counter{}, c.CorrectedWithDelay)
	assert.Equal(t, Counter{256, true}, c.TotalCorrected)
	assert.Equal(t, Counter{0x010203040506, true}, c.BytesProcessed)
	assert.Equal(t, Counter{2, true}, c.TotalUncorrected)

	c, err = ParseErrorCounters(page(PageVerifyErrors, 0, param(0x0006, 1, 0, 0, 0, 0, 0, 0, 0, 0)))
	require.NoError(t, err)
	assert.Equal(t, Counter{math.MaxUint64, true}, c.TotalUncorrected, "a 9-byte counter saturates")

	_, err = ParseErrorCounters(debugTemperature)
	assert.ErrorContains(t, err, "not a write/read/verify")
}

func TestStartStop(t *testing.T) {
	s, err := ParseStartStop(page(PageStartStop, 0,
		param(0x0001, '2', '0', '2', '3', '1', '7'),
		param(0x0003, 0, 0, 0xC3, 0x50),
		param(0x0004, 0, 0, 0x01, 0x2C),
		param(0x0005, 0, 0x09, 0x27, 0xC0),
		param(0x0006, 0, 0, 0, 0x63),
	))
	require.NoError(t, err)
	assert.Equal(t, StartStop{
		ManufactureDate:        "202317",
		SpecifiedStartStops:    Counter{50000, true},
		AccumulatedStartStops:  Counter{300, true},
		SpecifiedLoadUnloads:   Counter{600000, true},
		AccumulatedLoadUnloads: Counter{99, true},
	}, s)
}

func selfTest(n uint16, code, result uint8, poh uint16, lba uint64, key, asc, ascq uint8) LogParam {
	v := make([]byte, 16)
	v[0] = code<<5 | result
	binary.BigEndian.PutUint16(v[2:], poh)
	binary.BigEndian.PutUint64(v[4:], lba)
	v[12], v[13], v[14] = key, asc, ascq
	return LogParam{Code: n, Control: 0x03, Value: v}
}

func TestSelfTestResults(t *testing.T) {
	b := page(PageSelfTest, 0,
		selfTest(2, 1, 7, 900, 0x1234, 3, 0x11, 0x00), // short test failed (read)
		selfTest(1, 1, 0, 1000, math.MaxUint64, 0, 0, 0),
		selfTest(3, 0, 0, 0, 0, 0, 0, 0), // unused
	)
	rs, err := ParseSelfTestResults(b)
	require.NoError(t, err)
	require.Len(t, rs, 2)
	r, failed := UnresolvedSelfTestFailure(rs)
	assert.True(t, failed, "the newer short test does not clear it")
	assert.Equal(t, SelfTestResult{Number: 2, Code: 1, Result: 7, PowerOnHours: 900, FirstFailure: 0x1234, SenseKey: 3, ASC: 0x11}, r)

	b = page(PageSelfTest, 0,
		selfTest(2, 1, 7, 900, 0x1234, 3, 0x11, 0x00),
		selfTest(1, 6, 0, 1000, 0, 0, 0, 0), // foreground extended passed
	)
	rs, err = ParseSelfTestResults(b)
	require.NoError(t, err)
	_, failed = UnresolvedSelfTestFailure(rs)
	assert.False(t, failed)

	_, err = ParseSelfTestResults(page(PageSelfTest, 0, param(1, 0, 0)))
	assert.ErrorContains(t, err, "want 16")
}

func TestLogPageWalkingChecksLengths(t *testing.T) {
	good := page(PageReadErrors, 0, param(0x0000, 1), param(0x0006, 2))
	p, err := ParseLogPage(append(good, 0, 0, 0)) // allocation padding ignored
	require.NoError(t, err)
	assert.Len(t, p.Params, 2)
	_, ok := p.Param(0x0006)
	assert.True(t, ok)
	_, ok = p.Param(0x0007)
	assert.False(t, ok)

	bad := append([]byte(nil), good...)
	bad[7] = 9 // first parameter claims 9 bytes
	_, err = ParseLogPage(bad)
	require.ErrorContains(t, err, "past the page end")

	bad = append([]byte(nil), good...)
	bad[3] += 2 // page length beyond the data
	_, err = ParseLogPage(bad)
	require.ErrorContains(t, err, "truncated")

	bad = append([]byte(nil), good[:len(good)-3]...)
	bad[3] = byte(len(bad) - 4) // page ends inside a parameter header
	_, err = ParseLogPage(bad)
	require.ErrorContains(t, err, "cut off")

	_, err = ParseLogPage([]byte{0x0D, 0})
	require.ErrorContains(t, err, "header")

	sub := page(PageTemperature, 0x01, param(0x0000, 0, 40))
	p, err = ParseLogPage(sub)
	require.NoError(t, err)
	assert.True(t, p.SPF)
	assert.Equal(t, uint8(1), p.Subpage)
}

func TestSupportedSubpages(t *testing.T) {
	b := []byte{0x40, 0xFF, 0, 6, 0x00, 0x00, 0x0D, 0x00, 0x0D, 0x01}
	refs, err := ParseSupportedPages(b)
	require.NoError(t, err)
	assert.Equal(t, []PageRef{{0, 0}, {0x0D, 0}, {0x0D, 1}}, refs)
	b[3] = 5
	_, err = ParseSupportedPages(b[:9])
	require.ErrorContains(t, err, "odd")
	_, err = ParseSupportedPages(debugIE)
	assert.ErrorContains(t, err, "got page 0x2f")
}

// INQUIRY, VPD and READ CAPACITY data laid out as the two SCSI disks of the
// VM answered them (values from smartctl's report of the same disks), so
// offsets and trimming are checked against smartctl's reading.
func inquiryData(vendor, product, rev string) []byte {
	b := make([]byte, 36)
	b[2], b[3], b[4] = 0x07, 0x02, 31
	copy(b[8:16], pad(vendor, 8))
	copy(b[16:32], pad(product, 16))
	copy(b[32:36], pad(rev, 4))
	return b
}

func pad(s string, n int) []byte {
	b := []byte(s)
	for len(b) < n {
		b = append(b, ' ')
	}
	return b
}

func TestInquiryAndCapacityMatchSmartctl(t *testing.T) {
	for _, tc := range []struct {
		dev, vendor, product, rev, serial string
		lastLBA                           uint64
		naa                               []byte
	}{
		{"sdc", "QEMU", "QEMU HARDDISK", "2.5+", "SCSITEST", 131071, nil},
		{"sdd", "Linux", "scsi_debug", "0191", "20000", 16383, []byte{0x33, 0x33, 0x33, 0x30, 0x00, 0x00, 0x4e, 0x20}},
	} {
		t.Run(tc.dev, func(t *testing.T) {
			var o fixture.Smartctl
			fixture.JSON(t, &o, "qemu", "k6.12-scsi_debug", "usr_sbin_smartctl_-x_--json_c_dev_"+tc.dev+".txt")

			inq, err := ParseInquiry(inquiryData(tc.vendor, tc.product, tc.rev))
			require.NoError(t, err)
			assert.Equal(t, o.SCSIVendor, inq.Vendor)
			assert.Equal(t, o.SCSIProduct, inq.Product)
			assert.Equal(t, o.SCSIRevision, inq.Revision)
			assert.Equal(t, uint8(0), inq.DeviceType)
			assert.False(t, inq.ATA())

			serial, err := ParseUnitSerialNumber(append([]byte{0, 0x80, 0, byte(len(tc.serial))}, tc.serial...))
			require.NoError(t, err)
			assert.Equal(t, o.SerialNumber, serial)

			rc := make([]byte, 32)
			binary.BigEndian.PutUint64(rc, tc.lastLBA)
			binary.BigEndian.PutUint32(rc[8:], 512)
			c, err := ParseReadCapacity16(rc)
			require.NoError(t, err)
			assert.Equal(t, o.UserCapacity.Blocks, c.Blocks())
			assert.Equal(t, o.UserCapacity.Bytes, c.Bytes())
			assert.Equal(t, o.LogicalBlockSize, c.BlockSize)

			if tc.naa != nil {
				vpd := append([]byte{0, 0x83, 0, byte(4 + len(tc.naa)), 0x01, 0x03, 0, byte(len(tc.naa))}, tc.naa...)
				ds, err := ParseDeviceIdentification(vpd)
				require.NoError(t, err)
				id, ok := LogicalUnitID(ds)
				require.True(t, ok)
				assert.Equal(t, o.LogicalUnitID, id)
			}
		})
	}
}

func TestInquiryRejectsAndATA(t *testing.T) {
	_, err := ParseInquiry(make([]byte, 35))
	require.ErrorContains(t, err, "35 bytes")
	b := inquiryData("ATA", "ST4000DM004-2CV1", "0001")
	b[4] = 20
	_, err = ParseInquiry(b)
	require.ErrorContains(t, err, "additional length")
	b[4] = 31
	b[0], b[1] = 0x05, 0x80 // CD-ROM, removable
	inq, err := ParseInquiry(b)
	require.NoError(t, err)
	assert.True(t, inq.ATA())
	assert.True(t, inq.Removable)
	assert.Equal(t, uint8(5), inq.DeviceType)
	assert.Equal(t, "ST4000DM004-2CV1", inq.Product, "SAT truncates the ATA model to 16 characters")
}

func TestVPDLengthChecks(t *testing.T) {
	// smart.go issue #17: a serial page claiming more bytes than returned.
	_, err := ParseUnitSerialNumber([]byte{0, 0x80, 0, 0xFF, 'A', 'B'})
	require.ErrorContains(t, err, "truncated")
	_, err = ParseUnitSerialNumber([]byte{0, 0x83, 0, 0})
	require.ErrorContains(t, err, "got page 0x83")
	_, err = ParseUnitSerialNumber([]byte{0, 0x80})
	require.ErrorContains(t, err, "header")

	_, err = ParseDeviceIdentification([]byte{0, 0x83, 0, 6, 0x01, 0x03, 0, 8, 1, 2})
	require.ErrorContains(t, err, "past the page end")
	_, err = ParseDeviceIdentification([]byte{0, 0x83, 0, 2, 0x01, 0x03})
	require.ErrorContains(t, err, "cut off")

	// Preference: NAA over EUI-64 over a name string; target-port
	// designators never name the logical unit.
	ds, err := ParseDeviceIdentification([]byte{
		0, 0x83, 0, 32,
		0x61, 0x93, 0, 8, 0x50, 0, 0, 0, 0, 0, 0, 1, // NAA of the target port
		0x03, 0x08, 0, 8, 'n', 'a', 'a', '.', '1', '2', 0, 0, // SCSI name string, LU
		0x01, 0x02, 0, 4, 0xde, 0xad, 0xbe, 0xef, // EUI-64 (short form), LU
	})
	require.NoError(t, err)
	id, ok := LogicalUnitID(ds)
	require.True(t, ok)
	assert.Equal(t, "0xdeadbeef", id)
	id, ok = LogicalUnitID(ds[:2])
	require.True(t, ok)
	assert.Equal(t, "naa.12", id)
	_, ok = LogicalUnitID(ds[:1])
	assert.False(t, ok)
}

func TestBlockDeviceCharacteristics(t *testing.T) {
	b := make([]byte, 64)
	b[1], b[3] = 0xB1, 60
	binary.BigEndian.PutUint16(b[4:], 7200)
	b[7] = 0x02
	c, err := ParseBlockDeviceCharacteristics(b)
	require.NoError(t, err)
	assert.Equal(t, BlockDeviceCharacteristics{RotationRate: 7200, FormFactor: 2}, c)
	_, err = ParseBlockDeviceCharacteristics([]byte{0, 0xB1, 0, 2, 0, 1})
	assert.ErrorContains(t, err, "at least 4")
}

func TestReadCapacity16(t *testing.T) {
	b := make([]byte, 32)
	binary.BigEndian.PutUint64(b, 0x1_D1C0_BEAF) // > 2 TiB: READ CAPACITY(10) would say FFFFFFFFh
	binary.BigEndian.PutUint32(b[8:], 512)
	b[13] = 3                 // 8 logical per physical
	b[14], b[15] = 0xC0, 0x07 // LBPME, LBPRZ, lowest aligned 7
	c, err := ParseReadCapacity16(b)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x1_D1C0_BEB0)*512, c.Bytes())
	assert.Equal(t, uint64(4096), c.PhysicalBlockSize())
	assert.True(t, c.ThinProvisioned)
	assert.True(t, c.ReadsZeros)
	assert.Equal(t, uint16(7), c.LowestAlignedLBA)

	c, err = ParseReadCapacity16(b[:12])
	require.NoError(t, err)
	assert.Zero(t, c.PhysicalExponent)

	binary.BigEndian.PutUint64(b, math.MaxUint64)
	c, err = ParseReadCapacity16(b)
	require.NoError(t, err)
	assert.Equal(t, uint64(math.MaxUint64), c.Blocks())
	assert.Equal(t, uint64(math.MaxUint64), c.Bytes())

	binary.BigEndian.PutUint32(b[8:], 0)
	_, err = ParseReadCapacity16(b)
	require.ErrorContains(t, err, "block length 0")
	_, err = ParseReadCapacity16(b[:11])
	assert.ErrorContains(t, err, "11 bytes")
}

func TestSenseErrors(t *testing.T) {
	_, err := ParseSense([]byte{0x70})
	require.Error(t, err)
	_, err = ParseSense([]byte{0x7F, 0, 0, 0, 0, 0, 0, 0})
	require.ErrorContains(t, err, "response code 0x7f")
	_, err = ParseSense([]byte{0x72, 0x05, 0x24, 0x00})
	require.ErrorContains(t, err, "descriptor sense")
	// A descriptor that claims more than the data holds.
	_, err = ParseSense([]byte{0x72, 0x01, 0, 0x1d, 0, 0, 0, 6, 0x09, 0x0c, 0, 0, 0, 0})
	require.ErrorContains(t, err, "runs past")
	s, err := ParseSense([]byte{0x72, 0x05, 0x24, 0x00, 0, 0, 0, 0})
	require.NoError(t, err)
	_, ok := s.ATA()
	assert.False(t, ok)
	assert.Equal(t, "ILLEGAL REQUEST (asc/ascq 24/00)", s.String())
}

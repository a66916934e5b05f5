package scsi

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
)

// probeLines returns the VM probe's output lines that match re.
func probeLines(t *testing.T, re *regexp.Regexp) [][]string {
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(fixture.Read(t, "qemu", "k6.12-scsi_debug", "probe.txt")))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			out = append(out, m)
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out, "no probe line matches %s", re)
	return out
}

func unhex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	require.NoError(t, err)
	return b
}

func atoi(t *testing.T, s string) uint64 {
	v, err := strconv.ParseUint(s, 0, 64)
	require.NoError(t, err)
	return v
}

// The probe decoded the ATA registers of SMART RETURN STATUS, CHECK POWER
// MODE and STANDBY IMMEDIATE (sent with CK_COND=1) with its own code; ours
// must agree on every register, for the two ATA disks (descriptor sense)
// and the two SCSI disks that reject ATA PASS-THROUGH (fixed sense, no
// registers).
func TestSenseATARegistersMatchProbe(t *testing.T) {
	re := regexp.MustCompile(`^(\S*) ?(SMART RETURN STATUS|CHECK POWER MODE|STANDBY IMMEDIATE).*out=\{Error:(\d+) Status:(\d+) Device:(\d+) Count:(\d+) LbaLow:(\d+) LbaMid:(\d+) LbaHigh:(\d+) Format:(\w+)\}.* sense=([0-9a-f ]+)$`)
	lines := probeLines(t, re)
	assert.Len(t, lines, 12)
	for _, m := range lines {
		s, err := ParseSense(unhex(t, m[11]))
		require.NoError(t, err, m[0])
		regs, ok := s.ATA()
		if m[10] == "fixed" {
			// QEMU scsi-hd and scsi_debug: ATA_16 is an invalid opcode.
			assert.False(t, ok, m[0])
			assert.Equal(t, KeyIllegalRequest, s.Key)
			assert.Equal(t, [2]uint8{0x20, 0x00}, [2]uint8{s.ASC, s.ASCQ}, "invalid command operation code")
			continue
		}
		require.True(t, ok, m[0])
		// CK_COND=1 answers: RECOVERED ERROR, "ATA pass through
		// information available".
		assert.Equal(t, KeyRecoveredError, s.Key)
		assert.Equal(t, [2]uint8{0x00, 0x1D}, [2]uint8{s.ASC, s.ASCQ})
		assert.Equal(t, atoi(t, m[3]), uint64(regs.Error), m[0])
		assert.Equal(t, atoi(t, m[4]), uint64(regs.Status), m[0])
		assert.Equal(t, atoi(t, m[5]), uint64(regs.Device), m[0])
		assert.Equal(t, atoi(t, m[6]), uint64(regs.Count), m[0])
		assert.Equal(t, atoi(t, m[7]), uint64(regs.LBALow()), m[0])
		assert.Equal(t, atoi(t, m[8]), uint64(regs.LBAMid()), m[0])
		assert.Equal(t, atoi(t, m[9]), uint64(regs.LBAHigh()), m[0])
		switch m[2] {
		case "SMART RETURN STATUS":
			st, err := ata.ParseReturnStatus(regs.LBAMid(), regs.LBAHigh())
			require.NoError(t, err)
			assert.Equal(t, ata.SMARTStatusPassed, st, "QEMU always passes")
		case "CHECK POWER MODE":
			assert.Equal(t, ata.PowerActiveOrIdle, ata.PowerMode(regs.Count), "QEMU never sleeps")
		}
	}
}

// READ LOG EXT on a disk without general purpose logging: libata reports
// the aborted ATA command in fixed-format sense, registers in the
// INFORMATION field.
func TestSenseAbortedATACommand(t *testing.T) {
	re := regexp.MustCompile(`^/dev/(sd[ab]) read log ext (0x[0-9a-f]+):.* sense=([0-9a-f ]+)$`)
	lines := probeLines(t, re)
	assert.Len(t, lines, 4)
	for _, m := range lines {
		s, err := ParseSense(unhex(t, m[3]))
		require.NoError(t, err)
		assert.Equal(t, KeyAbortedCommand, s.Key, m[0])
		assert.Equal(t, "ABORTED COMMAND (asc/ascq 00/00)", s.String())
		regs, ok := s.ATA()
		require.True(t, ok)
		assert.Equal(t, uint8(0x04), regs.Error, "ABRT")
		assert.Equal(t, uint8(0x41), regs.Status, "DRDY|ERR")
		assert.True(t, regs.Extend, "READ LOG EXT is a 48-bit command")
		assert.Equal(t, atoi(t, m[2]), uint64(regs.LBALow()), "the log address comes back in LBA(7:0)")
	}
}

// scsi_debug answered LOG SENSE; the probe kept the first 8 bytes of each
// page. The supported-pages list fits in them; the others are cut off and
// must be refused as truncated, not misread.
func TestLogSensePrefixesFromProbe(t *testing.T) {
	re := regexp.MustCompile(`^/dev/sdd LOG SENSE page (0x[0-9a-f]+): err=<nil> status=0x0 .*first=([0-9a-f ]+)$`)
	for _, m := range probeLines(t, re) {
		b := unhex(t, m[2])
		switch atoi(t, m[1]) {
		case PageSupported:
			pages, err := ParseSupportedPages(b)
			require.NoError(t, err)
			assert.Equal(t, []PageRef{{Code: 0x00}, {Code: 0x0D}, {Code: 0x2F}}, pages)
		default:
			_, err := ParseLogPage(b)
			assert.ErrorContains(t, err, "truncated", m[0])
		}
	}
}

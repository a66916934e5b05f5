package smart

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ata16 builds an ATA PASS-THROUGH(16) CDB the way the device layer will.
func ata16(protocol, tDir, tLength, features, count, lbaLow, lbaMid, lbaHigh, command uint8) []byte {
	cdb := make([]byte, 16)
	cdb[0] = 0x85
	cdb[1] = protocol << 1
	cdb[2] = 1<<5 | tDir<<3 | 1<<2 | tLength // CK_COND, BYTE_BLOCK
	cdb[4], cdb[6] = features, count
	cdb[8], cdb[10], cdb[12] = lbaLow, lbaMid, lbaHigh
	cdb[14] = command
	return cdb
}

// ata12 builds an ATA PASS-THROUGH(12) CDB.
func ata12(protocol, tDir, tLength, features, count, lbaLow, lbaMid, lbaHigh, command uint8) []byte {
	cdb := make([]byte, 12)
	cdb[0] = 0xA1
	cdb[1] = protocol << 1
	cdb[2] = tDir<<3 | 1<<2 | tLength
	cdb[3], cdb[4], cdb[5], cdb[6], cdb[7], cdb[9] = features, count, lbaLow, lbaMid, lbaHigh, command
	return cdb
}

func pioIn(feature, log, command uint8) SCSI {
	return SCSI{CDB: ata16(4, 1, 2, feature, 1, log, 0x4F, 0xC2, command), Dir: DirFromDevice}
}

func nonData(feature, command uint8) SCSI {
	return SCSI{CDB: ata16(3, 0, 0, feature, 0, 0, 0x4F, 0xC2, command), Dir: DirNone}
}

// Every command the device layer is going to send, built as it will build
// it, passes.
func TestAllowedCommandsPass(t *testing.T) {
	for name, c := range map[string]Command{
		"CHECK POWER MODE":             SCSI{CDB: ata16(3, 0, 0, 0, 0, 0, 0, 0, 0xE5), Dir: DirNone},
		"SMART RETURN STATUS":          nonData(0xDA, 0xB0),
		"SMART READ LOG summary error": pioIn(0xD5, 0x01, 0xB0),
		"SMART READ LOG self-test":     pioIn(0xD5, 0x06, 0xB0),
		"SMART READ LOG devstat":       pioIn(0xD5, 0x04, 0xB0),
		"READ LOG EXT devstat":         SCSI{CDB: ata16(4, 1, 2, 0, 8, 0x04, 0, 0, 0x2F), Dir: DirFromDevice},
		"INQUIRY":                      SCSI{CDB: []byte{0x12, 0, 0, 0, 36, 0}, Dir: DirFromDevice},
		"INQUIRY VPD 80h":              SCSI{CDB: []byte{0x12, 1, 0x80, 0, 252, 0}, Dir: DirFromDevice},
		"INQUIRY VPD B1h":              SCSI{CDB: []byte{0x12, 1, 0xB1, 0, 64, 0}, Dir: DirFromDevice},
		"LOG SENSE supported pages":    SCSI{CDB: []byte{0x4D, 0, 0x40, 0, 0, 0, 0, 0x10, 0, 0}, Dir: DirFromDevice},
		"LOG SENSE supported subpages": SCSI{CDB: []byte{0x4D, 0, 0x40, 0xFF, 0, 0, 0, 0x10, 0, 0}, Dir: DirFromDevice},
		"LOG SENSE temperature":        SCSI{CDB: []byte{0x4D, 0, 0x4D, 0, 0, 0, 0, 0x10, 0, 0}, Dir: DirFromDevice},
		"LOG SENSE IE":                 SCSI{CDB: []byte{0x4D, 0, 0x6F, 0, 0, 0, 0, 0x10, 0, 0}, Dir: DirFromDevice},
		"READ CAPACITY(16)":            SCSI{CDB: []byte{0x9E, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0}, Dir: DirFromDevice},
		"NVMe error log":               NVMeAdmin{Opcode: 0x02, NSID: 0xFFFFFFFF, CDW10: 15<<16 | 0x01, DataLen: 64},
		"NVMe Identify Controller":     NVMeAdmin{Opcode: 0x06, CDW10: 0x01, DataLen: 4096},
		"NVMe Identify Namespace":      NVMeAdmin{Opcode: 0x06, NSID: 1, CDW10: 0x00, DataLen: 4096},
		"NVMe supported log pages":     NVMeAdmin{Opcode: 0x02, NSID: 0xFFFFFFFF, CDW10: 255 << 16, DataLen: 1024},
		"NVMe error log, 256 entries":  NVMeAdmin{Opcode: 0x02, NSID: 0xFFFFFFFF, CDW10: 4095<<16 | 1<<15 | 0x01, DataLen: 16384},
		"NVMe telemetry 08h header":    NVMeAdmin{Opcode: 0x02, NSID: 0xFFFFFFFF, CDW10: 127<<16 | 1<<15 | 0x08, DataLen: 512},
		"NVMe OCP C0h":                 NVMeAdmin{Opcode: 0x02, NSID: 0xFFFFFFFF, CDW10: 127<<16 | 0xC0, DataLen: 512},
		"NVMe OCP C3h":                 NVMeAdmin{Opcode: 0x02, NSID: 0xFFFFFFFF, CDW10: 127<<16 | 0xC3, DataLen: 512},
		"NVMe Amazon D0h":              NVMeAdmin{Opcode: 0x02, NSID: 1, CDW10: 1023<<16 | 0xD0, DataLen: 4096},
	} {
		assert.NoError(t, Allowed(c), name)
	}
}

// The reads smart.go does for the device layer (LibraryCommands) are refused
// in every form: the device layer's own Conn cannot send them a second way.
func TestLibraryCommandsRefused(t *testing.T) {
	for name, c := range map[string]Command{
		"IDENTIFY DEVICE":            SCSI{CDB: ata16(4, 1, 2, 0, 1, 0, 0, 0, 0xEC), Dir: DirFromDevice},
		"IDENTIFY DEVICE via ATA_12": SCSI{CDB: ata12(4, 1, 2, 0, 1, 0, 0, 0, 0xEC), Dir: DirFromDevice},
		"SMART READ DATA":            pioIn(0xD0, 0, 0xB0),
		"SMART READ DATA via ATA_12": SCSI{CDB: ata12(4, 1, 2, 0xD0, 1, 0, 0x4F, 0xC2, 0xB0), Dir: DirFromDevice},
		"SMART READ THRESHOLDS":      pioIn(0xD1, 0, 0xB0),
		"NVMe SMART log":             NVMeAdmin{Opcode: 0x02, NSID: 0xFFFFFFFF, CDW10: 127<<16 | 0x02, DataLen: 512},
		"NVMe SMART log, RAE set":    NVMeAdmin{Opcode: 0x02, NSID: 0xFFFFFFFF, CDW10: 127<<16 | 1<<15 | 0x02, DataLen: 512},
	} {
		require.ErrorIs(t, Allowed(c), ErrNotAllowed, name)
	}
	for _, lc := range LibraryCommands() {
		for _, ac := range AllowedCommands() {
			same := ac.Protocol == lc.Protocol && ac.Opcode == lc.Opcode && ac.HasFeature == lc.HasFeature && ac.Feature == lc.Feature
			if same && lc.Targets != nil {
				for _, target := range lc.Targets {
					assert.NotContains(t, ac.Targets, target, "%s %s", lc.Name, ac.Name)
				}
				continue
			}
			assert.False(t, same, "%s is smart.go's read and on the allowlist", lc.Name)
		}
	}
}

// Commands that write, start tests, change power state, erase or reset, as
// listed in the ATA, NVMe and SCSI standards, independent of the allowlist's
// own tables.
var (
	ataWrites = map[string][2]uint8{ // command, SMART feature
		"SMART ENABLE OPERATIONS":     {0xB0, 0xD8},
		"SMART DISABLE OPERATIONS":    {0xB0, 0xD9},
		"SMART EXECUTE OFFLINE":       {0xB0, 0xD4},
		"SMART WRITE LOG":             {0xB0, 0xD6},
		"SMART SAVE ATTRIBUTE VALUES": {0xB0, 0xD3},
		"SMART ATTRIBUTE AUTOSAVE":    {0xB0, 0xD2},
		"SMART AUTO OFFLINE":          {0xB0, 0xDB},
		"SET FEATURES":                {0xEF, 0x02},
		"WRITE LOG EXT":               {0x3F, 0},
		"WRITE LOG DMA EXT":           {0x57, 0},
		"WRITE SECTORS":               {0x30, 0},
		"WRITE DMA EXT":               {0x35, 0},
		"DATA SET MANAGEMENT (TRIM)":  {0x06, 0},
		"DOWNLOAD MICROCODE":          {0x92, 0},
		"SECURITY ERASE UNIT":         {0xF4, 0},
		"SANITIZE DEVICE":             {0xB4, 0},
		"STANDBY IMMEDIATE":           {0xE0, 0},
		"SLEEP":                       {0xE6, 0},
		"IDLE IMMEDIATE":              {0xE1, 0},
	}
	// Reads the receiver has no use for are refused as well: the list is
	// closed, not "everything that does not write".
	ataOtherReads = map[string][2]uint8{
		"READ SECTORS":                    {0x20, 0},
		"READ DMA EXT":                    {0x25, 0},
		"READ BUFFER":                     {0xE4, 0},
		"SMART READ LOG is not READ DATA": {0xB0, 0xD7},
	}
	nvmeWrites = map[string]uint8{
		"Format NVM": 0x80, "Sanitize": 0x84, "Set Features": 0x09, "Device Self-test": 0x14,
		"Firmware Commit": 0x10, "Firmware Image Download": 0x11, "Namespace Management": 0x0D,
		"Namespace Attachment": 0x15, "Security Send": 0x81, "Abort": 0x08, "Delete I/O SQ": 0x00,
		"Keep Alive": 0x18, "Virtualization Management": 0x1C,
	}
	nvmeOtherReads = map[string]uint8{"Get Features": 0x0A, "Security Receive": 0x82, "Get LBA Status": 0x86}
	scsiWrites     = map[string][]byte{
		"WRITE(10)":         {0x2A, 0, 0, 0, 0, 0, 0, 0, 1, 0},
		"WRITE(16)":         {0x8A, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0},
		"WRITE(6)":          {0x0A, 0, 0, 0, 1, 0},
		"LOG SELECT":        {0x4C, 0x02, 0x40, 0, 0, 0, 0, 0, 0, 0},
		"SEND DIAGNOSTIC":   {0x1D, 0x04, 0, 0, 0, 0},
		"MODE SELECT(10)":   {0x55, 0x10, 0, 0, 0, 0, 0, 0, 0x18, 0},
		"FORMAT UNIT":       {0x04, 0, 0, 0, 0, 0},
		"SANITIZE":          {0x48, 0x01, 0, 0, 0, 0, 0, 0, 0, 0},
		"WRITE BUFFER":      {0x3B, 0x05, 0, 0, 0, 0, 0, 0x10, 0, 0},
		"UNMAP":             {0x42, 0, 0, 0, 0, 0, 0, 0, 0x18, 0},
		"START STOP UNIT":   {0x1B, 0, 0, 0, 0x01, 0},
		"SYNCHRONIZE CACHE": {0x35, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"RESERVE(6)":        {0x16, 0, 0, 0, 0, 0},
	}
	scsiOtherReads = map[string][]byte{
		"TEST UNIT READY":   {0x00, 0, 0, 0, 0, 0},
		"REQUEST SENSE":     {0x03, 0, 0, 0, 252, 0},
		"READ(10)":          {0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0},
		"READ CAPACITY(10)": {0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"GET LBA STATUS":    {0x9E, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0},
	}
)

// Every allowed command reads or transfers nothing, and none of them is a
// command the standards define as writing.
func TestAllowedCommandsAreReadOnly(t *testing.T) {
	for _, c := range AllowedCommands() {
		name := c.Protocol + " " + c.Name
		if c.Protocol == "SCSI" && (c.Opcode == 0x85 || c.Opcode == 0xA1) {
			continue // the wrapper: checked through the ATA entries
		}
		assert.Contains(t, []Direction{DirNone, DirFromDevice}, c.Dir, name)
		switch c.Protocol {
		case "ATA":
			for w, cf := range ataWrites {
				same := c.Opcode == cf[0] && (!c.HasFeature || c.Feature == cf[1])
				assert.False(t, same, "%s is %s", name, w)
			}
		case "NVMe admin":
			// NVMe encodes the data direction in opcode bits 1:0; 10b is
			// controller to host.
			assert.Equal(t, uint8(0b10), c.Opcode&0b11, name)
			assert.NotContains(t, nvmeWrites, c.Opcode, name)
		case "SCSI":
			for w, cdb := range scsiWrites {
				if c.HasFeature {
					assert.False(t, cdb[0] == c.Opcode && cdb[1]&0x1F == c.Feature, "%s is %s", name, w)
				} else {
					assert.NotEqual(t, cdb[0], c.Opcode, "%s is %s", name, w)
				}
			}
		default:
			t.Errorf("unknown protocol %q", c.Protocol)
		}
	}
}

func merge[V any](a, b map[string]V) map[string]V {
	m := maps.Clone(a)
	maps.Copy(m, b)
	return m
}

func assertRefused(t *testing.T, c Command, what string) {
	t.Helper()
	err := Allowed(c)
	require.Error(t, err, what)
	assert.ErrorIs(t, err, ErrNotAllowed, "%s: %v", what, err)
}

func TestWritesAreRefused(t *testing.T) {
	for name, cf := range merge(ataWrites, ataOtherReads) {
		// Wrapped every plausible way: as data-out, data-in and non-data,
		// in both CDB sizes, with the SMART key in place.
		for _, proto := range []uint8{3, 4, 5, 6} {
			tDir := uint8(0)
			if proto == 4 {
				tDir = 1
			}
			dir := map[uint8]Direction{3: DirNone, 4: DirFromDevice, 5: DirToDevice, 6: DirToDevice}[proto]
			assertRefused(t, SCSI{CDB: ata16(proto, tDir, 2, cf[1], 1, 0x00, 0x4F, 0xC2, cf[0]), Dir: dir}, fmt.Sprint(name, " ata16 proto ", proto))
			assertRefused(t, SCSI{CDB: ata12(proto, tDir, 2, cf[1], 1, 0x00, 0x4F, 0xC2, cf[0]), Dir: dir}, fmt.Sprint(name, " ata12 proto ", proto))
		}
	}
	for name, op := range merge(nvmeWrites, nvmeOtherReads) {
		assertRefused(t, NVMeAdmin{Opcode: op, CDW10: 0x02, DataLen: 4096}, name)
	}
	for name, cdb := range merge(scsiWrites, scsiOtherReads) {
		for _, dir := range []Direction{DirNone, DirFromDevice, DirToDevice} {
			assertRefused(t, SCSI{CDB: cdb, Dir: dir}, name)
		}
	}
	assertRefused(t, nil, "nil")
	assertRefused(t, SCSI{}, "empty CDB")
}

// Allowed commands asked to do more than read are refused too.
func TestAllowedCommandsMisusedAreRefused(t *testing.T) {
	for name, c := range map[string]Command{
		"SMART READ DATA as PIO out":              SCSI{CDB: ata16(5, 0, 2, 0xD0, 1, 0, 0x4F, 0xC2, 0xB0), Dir: DirToDevice},
		"SMART READ DATA with t_dir out":          SCSI{CDB: ata16(4, 0, 2, 0xD0, 1, 0, 0x4F, 0xC2, 0xB0), Dir: DirFromDevice},
		"SMART READ DATA with SG_IO to device":    SCSI{CDB: ata16(4, 1, 2, 0xD0, 1, 0, 0x4F, 0xC2, 0xB0), Dir: DirToDevice},
		"SMART READ DATA as DMA":                  SCSI{CDB: ata16(6, 1, 2, 0xD0, 1, 0, 0x4F, 0xC2, 0xB0), Dir: DirFromDevice},
		"SMART READ DATA without SMART key":       SCSI{CDB: ata16(4, 1, 2, 0xD0, 1, 0, 0, 0, 0xB0), Dir: DirFromDevice},
		"SMART READ DATA with no transfer length": SCSI{CDB: ata16(4, 1, 0, 0xD0, 1, 0, 0x4F, 0xC2, 0xB0), Dir: DirFromDevice},
		"SMART RETURN STATUS with data":           SCSI{CDB: ata16(4, 1, 2, 0xDA, 1, 0, 0x4F, 0xC2, 0xB0), Dir: DirFromDevice},
		"CHECK POWER MODE as hard reset":          SCSI{CDB: ata16(0, 0, 0, 0, 0, 0, 0, 0, 0xE5), Dir: DirNone},
		"SMART READ LOG of the SCT log":           pioIn(0xD5, 0xE0, 0xB0),
		"SMART READ LOG of PHY counters":          pioIn(0xD5, 0x11, 0xB0),
		"READ LOG EXT of the NCQ error log":       SCSI{CDB: ata16(4, 1, 2, 0, 1, 0x10, 0, 0, 0x2F), Dir: DirFromDevice},
		"READ LOG EXT with features set":          SCSI{CDB: ata16(4, 1, 2, 1, 1, 0x04, 0, 0, 0x2F), Dir: DirFromDevice},
		"IDENTIFY with a high feature byte":       SCSI{CDB: func() []byte { c := ata16(4, 1, 2, 0, 1, 0, 0, 0, 0xEC); c[3] = 1; return c }(), Dir: DirFromDevice},
		"ATA_16 CDB of 12 bytes":                  SCSI{CDB: ata16(4, 1, 2, 0, 1, 0, 0, 0, 0xEC)[:12], Dir: DirFromDevice},
		"INQUIRY with CMDDT":                      SCSI{CDB: []byte{0x12, 2, 0, 0, 36, 0}, Dir: DirFromDevice},
		"INQUIRY page without EVPD":               SCSI{CDB: []byte{0x12, 0, 0x80, 0, 36, 0}, Dir: DirFromDevice},
		"INQUIRY unknown VPD":                     SCSI{CDB: []byte{0x12, 1, 0xC0, 0, 36, 0}, Dir: DirFromDevice},
		"INQUIRY with no data direction":          SCSI{CDB: []byte{0x12, 0, 0, 0, 36, 0}, Dir: DirNone},
		"LOG SENSE saving parameters":             SCSI{CDB: []byte{0x4D, 0x01, 0x4D, 0, 0, 0, 0, 0x10, 0, 0}, Dir: DirFromDevice},
		"LOG SENSE with PPC":                      SCSI{CDB: []byte{0x4D, 0x02, 0x4D, 0, 0, 0, 0, 0x10, 0, 0}, Dir: DirFromDevice},
		"LOG SENSE unlisted page":                 SCSI{CDB: []byte{0x4D, 0, 0x58, 0, 0, 0, 0, 0x10, 0, 0}, Dir: DirFromDevice},
		"LOG SENSE subpage":                       SCSI{CDB: []byte{0x4D, 0, 0x4D, 0x01, 0, 0, 0, 0x10, 0, 0}, Dir: DirFromDevice},
		"LOG SENSE short CDB":                     SCSI{CDB: []byte{0x4D, 0, 0x4D, 0, 0, 0}, Dir: DirFromDevice},
		"NVMe telemetry host-initiated log":       NVMeAdmin{Opcode: 0x02, CDW10: 0x07, DataLen: 512},
		"NVMe persistent event log":               NVMeAdmin{Opcode: 0x02, CDW10: 0x0D, DataLen: 512},
		"NVMe telemetry 08h consuming the event":  NVMeAdmin{Opcode: 0x02, CDW10: 127<<16 | 0x08, DataLen: 512},
		"NVMe telemetry 08h with create bit":      NVMeAdmin{Opcode: 0x02, CDW10: 127<<16 | 1<<15 | 1<<8 | 0x08, DataLen: 512},
		"NVMe OCP error recovery log C1h":         NVMeAdmin{Opcode: 0x02, CDW10: 127<<16 | 0xC1, DataLen: 512},
		"NVMe vendor log D1h":                     NVMeAdmin{Opcode: 0x02, CDW10: 1023<<16 | 0xD1, DataLen: 4096},
		"NVMe Amazon D0h into a short buffer":     NVMeAdmin{Opcode: 0x02, CDW10: 1023<<16 | 0xD0, DataLen: 512},
		"NVMe SMART log with LSP":                 NVMeAdmin{Opcode: 0x02, NSID: 0xFFFFFFFF, CDW10: 127<<16 | 1<<8 | 0x02, DataLen: 512},
		"NVMe SMART log into a short buffer":      NVMeAdmin{Opcode: 0x02, NSID: 0xFFFFFFFF, CDW10: 127<<16 | 0x02, DataLen: 256},
		"NVMe Identify CNS 10h":                   NVMeAdmin{Opcode: 0x06, CDW10: 0x10, DataLen: 4096},
		"NVMe Identify into a short buffer":       NVMeAdmin{Opcode: 0x06, CDW10: 0x01, DataLen: 512},
	} {
		assertRefused(t, c, name)
	}
}

func TestRefusalSaysWhat(t *testing.T) {
	err := Allowed(pioIn(0xD4, 0, 0xB0))
	require.EqualError(t, err, "ATA SMART feature 0xd4: not on the read-only command allowlist")
	err = Allowed(NVMeAdmin{Opcode: 0x80})
	require.EqualError(t, err, "NVMe admin opcode 0x80: not on the read-only command allowlist")
	err = Allowed(SCSI{CDB: []byte{0x2A, 0, 0, 0, 0, 0, 0, 0, 1, 0}, Dir: DirToDevice})
	require.EqualError(t, err, "SCSI opcode 0x2a: not on the read-only command allowlist")
	assert.Equal(t, "to-device", DirToDevice.String())
	assert.Equal(t, "direction(9)", Direction(9).String())
}

// Every ATA table entry is reachable through both pass-through sizes.
func TestEveryATAEntryReachable(t *testing.T) {
	for _, c := range ataCommands {
		targets := c.Targets
		if targets == nil {
			targets = []uint8{0}
		}
		for _, log := range targets {
			mid, high := uint8(0), uint8(0)
			if c.HasFeature {
				mid, high = 0x4F, 0xC2
			}
			proto, tDir, tLen, dir := uint8(3), uint8(0), uint8(0), DirNone
			if c.Dir == DirFromDevice {
				proto, tDir, tLen, dir = 4, 1, 2, DirFromDevice
			}
			assert.NoError(t, Allowed(SCSI{CDB: ata16(proto, tDir, tLen, c.Feature, 1, log, mid, high, c.Opcode), Dir: dir}), "%s log %#x", c.Name, log)
			assert.NoError(t, Allowed(SCSI{CDB: ata12(proto, tDir, tLen, c.Feature, 1, log, mid, high, c.Opcode), Dir: dir}), "%s log %#x", c.Name, log)
		}
	}
	assert.True(t, slices.ContainsFunc(AllowedCommands(), func(c CommandInfo) bool { return c.Name == "READ LOG EXT" }))
}

// Whatever bytes come in, anything let through is one of the listed
// read-only commands.
func FuzzAllowedSCSI(f *testing.F) {
	f.Add(ata16(4, 1, 2, 0xD0, 1, 0, 0x4F, 0xC2, 0xB0), uint8(DirFromDevice))
	f.Add(ata12(3, 0, 0, 0xDA, 0, 0, 0x4F, 0xC2, 0xB0), uint8(DirNone))
	f.Add([]byte{0x4D, 0, 0x4D, 0, 0, 0, 0, 0x10, 0, 0}, uint8(DirFromDevice))
	f.Add([]byte{0x12, 1, 0x80, 0, 252, 0}, uint8(DirFromDevice))
	f.Fuzz(func(t *testing.T, cdb []byte, dir uint8) {
		if Allowed(SCSI{CDB: cdb, Dir: Direction(dir)}) != nil {
			return
		}
		if Direction(dir) == DirToDevice || findCommand(scsiCommands, cdb[0]) == nil {
			t.Fatalf("let through %x with direction %d", cdb, dir)
		}
		if cdb[0] != 0x85 && cdb[0] != 0xA1 {
			return
		}
		tf := decodePassThrough(cdb)
		if tf.protocol != protoPIOIn && tf.protocol != protoNonData {
			t.Fatalf("let through ATA protocol %d", tf.protocol)
		}
		for w, cf := range ataWrites {
			if tf.command == cf[0] && (cf[0] != 0xB0 || tf.features == cf[1]) {
				t.Fatalf("let through %s", w)
			}
		}
	})
}

func FuzzAllowedNVMe(f *testing.F) {
	f.Add(uint8(0x02), uint32(0xFFFFFFFF), uint32(127<<16|2), uint32(512))
	f.Add(uint8(0x06), uint32(0), uint32(1), uint32(4096))
	f.Fuzz(func(t *testing.T, op uint8, nsid, cdw10, dataLen uint32) {
		if Allowed(NVMeAdmin{Opcode: op, NSID: nsid, CDW10: cdw10, DataLen: dataLen}) != nil {
			return
		}
		if op != 0x02 && op != 0x06 || op&3 != 2 {
			t.Fatalf("let through opcode %#x", op)
		}
		if op == 0x02 && (cdw10>>8&0x7F != 0 || (cdw10>>16+1)*4 > dataLen) {
			t.Fatalf("let through Get Log Page cdw10 %#x into %d bytes", cdw10, dataLen)
		}
	})
}

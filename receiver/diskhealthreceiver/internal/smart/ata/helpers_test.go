package ata

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
)

// sealPage sets the checksum byte so the page sums to zero.
func sealPage(b []byte) []byte {
	b[PageSize-1] = 0
	b[PageSize-1] = -byteSum(b)
	return b
}

// dataPage builds a SMART READ DATA page holding attrs.
func dataPage(attrs ...RawAttribute) []byte {
	b := make([]byte, PageSize)
	binary.LittleEndian.PutUint16(b, 0x0010)
	for i, a := range attrs {
		e := b[2+i*attrSlotSize:]
		e[0] = a.ID
		binary.LittleEndian.PutUint16(e[1:], a.Flags)
		e[3], e[4] = a.Value, a.Worst
		copy(e[5:11], a.RawBytes[:])
		e[11] = a.Reserved
	}
	return sealPage(b)
}

// thresholdPage builds a SMART READ THRESHOLDS page from id/threshold pairs.
func thresholdPage(pairs ...[2]uint8) []byte {
	b := make([]byte, PageSize)
	binary.LittleEndian.PutUint16(b, 0x0010)
	for i, p := range pairs {
		b[2+i*attrSlotSize], b[3+i*attrSlotSize] = p[0], p[1]
	}
	return sealPage(b)
}

// raw48 makes the six raw bytes of a 48-bit little-endian value.
func raw48(v uint64) [6]byte {
	var r [6]byte
	for i := range r {
		r[i] = byte(v >> (8 * i))
	}
	return r
}

// seeds returns every QEMU ATA page of one kind, for fuzz corpora.
func seeds(t testing.TB, kind string) [][]byte {
	matches, err := filepath.Glob(fixture.Path("qemu", "*", "*."+kind+".bin"))
	require.NoError(t, err)
	require.NotEmpty(t, matches, kind)
	var out [][]byte
	for _, m := range matches {
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

// smartctlDB is the drive database smartctl names attributes from on this machine (Debian's
// drivedb.h, testkit.DriveDBH), parsed once per test binary.
func smartctlDB(tb testing.TB) *DriveDB { return testkit.ParsedDriveDBH(tb, ParseDriveDB) }

// lookup finds a model (any firmware, unknown medium) in smartctl's drive database.
func lookup(t testing.TB, model string) Preset { return smartctlDB(t).LookupDrive(model, "", 0) }

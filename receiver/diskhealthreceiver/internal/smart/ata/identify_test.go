package ata

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
)

func qemuIdentify(t *testing.T) []byte {
	return append([]byte(nil), fixture.Read(t, "qemu", "k6.12", "sda.ata_identify.bin")...)
}

func putWord(b []byte, i int, v uint16) { binary.LittleEndian.PutUint16(b[2*i:], v) }

func TestIdentifyChecksumSignature(t *testing.T) {
	b := qemuIdentify(t)
	b[510] = 0xA5 // signature present, checksum byte wrong
	b[511] = 0
	b[511] = -byteSum(b) + 1
	_, err := ParseIdentify(b)
	require.ErrorIs(t, err, ErrChecksum)
	b[511]--
	id, err := ParseIdentify(b)
	require.NoError(t, err)
	assert.Equal(t, "ST4000DM004-2CV104", id.Model)
}

func TestIdentifyRejects(t *testing.T) {
	_, err := ParseIdentify(make([]byte, 256))
	require.ErrorContains(t, err, "256 bytes")
	_, err = ParseIdentify(make([]byte, PageSize))
	require.ErrorContains(t, err, "blank")
	b := qemuIdentify(t)
	putWord(b, 0, 0x85C0) // ATAPI CD-ROM
	_, err = ParseIdentify(b)
	require.ErrorContains(t, err, "ATAPI")
	putWord(b, 0, 0x848A) // CFA: bit 15 set, still ATA
	_, err = ParseIdentify(b)
	assert.NoError(t, err)
}

func TestIdentifyCapacityAndSectorSizes(t *testing.T) {
	b := qemuIdentify(t)
	// 4Kn drive: logical sector 4096 B (2048 words), 8 TB in LBA48.
	putWord(b, 106, 0x4000|1<<12)
	putWord(b, 117, 2048)
	putWord(b, 118, 0)
	putWord(b, 100, 0xA000)
	putWord(b, 101, 0x746F)
	putWord(b, 102, 0)
	id, err := ParseIdentify(b)
	require.NoError(t, err)
	assert.Equal(t, uint32(4096), id.LogicalSectorSize)
	assert.Equal(t, uint32(4096), id.PhysicalSectorSize)
	assert.Equal(t, uint64(0x746FA000), id.Sectors)
	assert.Equal(t, uint64(0x746FA000)*4096, id.Capacity())

	// 512e: 8 logical per physical.
	b = qemuIdentify(t)
	putWord(b, 106, 0x4000|1<<13|3)
	id, err = ParseIdentify(b)
	require.NoError(t, err)
	assert.Equal(t, uint32(512), id.LogicalSectorSize)
	assert.Equal(t, uint32(4096), id.PhysicalSectorSize)

	// No LBA48: the 28-bit count stands.
	b = qemuIdentify(t)
	putWord(b, 83, 0x4000)
	putWord(b, 60, 0x1234)
	putWord(b, 61, 0x0001)
	id, err = ParseIdentify(b)
	require.NoError(t, err)
	assert.False(t, id.LBA48)
	assert.Equal(t, uint64(0x11234), id.Sectors)

	// ACS-4 extended count wins when word 69 bit 3 says it is there.
	b = qemuIdentify(t)
	putWord(b, 69, 1<<3)
	putWord(b, 230, 0x1)
	putWord(b, 233, 0x100)
	id, err = ParseIdentify(b)
	require.NoError(t, err)
	assert.Equal(t, uint64(1)<<56|1, id.Sectors)
	assert.Equal(t, ^uint64(0), id.Capacity(), "saturates instead of wrapping")
}

func TestIdentifyInvalidFeatureWords(t *testing.T) {
	b := qemuIdentify(t)
	for _, w := range []int{82, 83, 84, 85, 86, 87} {
		putWord(b, w, 0xFFFF)
	}
	putWord(b, 80, 0xFFFF)
	id, err := ParseIdentify(b)
	require.NoError(t, err)
	assert.False(t, id.SMARTSupported)
	assert.False(t, id.SMARTEnabled)
	assert.False(t, id.LBA48)
	assert.False(t, id.GPLSupported)
	assert.Zero(t, id.WWN)
	assert.Zero(t, id.MajorVersion)
}

func TestIdentifySolidStateAndStrings(t *testing.T) {
	b := qemuIdentify(t)
	putWord(b, 217, 1)
	// Serial with the leading spaces some vendors use: "  AB" in words 10-11.
	for i := 10; i < 20; i++ {
		putWord(b, i, 0x2020)
	}
	putWord(b, 18, 'A'<<8|'B')
	id, err := ParseIdentify(b)
	require.NoError(t, err)
	assert.True(t, id.SolidState())
	assert.Equal(t, "AB", id.Serial)
}

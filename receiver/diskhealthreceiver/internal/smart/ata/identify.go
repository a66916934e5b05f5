package ata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/ascii"
)

// Identity is what IDENTIFY DEVICE says about a drive, reduced to the fields
// the receiver reports or needs to decide what else it may ask.
type Identity struct {
	Model    string
	Serial   string
	Firmware string

	// WWN is the 64-bit world wide name (words 108-111), 0 when the drive
	// does not report one.
	WWN uint64

	// Sectors is the number of user-addressable logical sectors: the
	// extended count (words 230-233) when present, else the 48-bit count
	// (words 100-103), else the 28-bit count (words 60-61).
	Sectors            uint64
	LogicalSectorSize  uint32
	PhysicalSectorSize uint32

	// RotationRate is word 217 as reported: 0 not reported, 1 non-rotating
	// (solid state), otherwise revolutions per minute.
	RotationRate uint16

	// MajorVersion is word 80 (one bit per supported ATA/ACS standard), the
	// same number smartctl prints as ata_version.major_value.
	MajorVersion uint16
	MinorVersion uint16

	SMARTSupported bool
	SMARTEnabled   bool
	// GPLSupported says READ LOG EXT may be used (general purpose logging).
	GPLSupported bool
	LBA48        bool
	TRIM         bool
}

// Capacity is Sectors × LogicalSectorSize in bytes, saturating at the
// largest uint64 rather than wrapping.
func (id *Identity) Capacity() uint64 {
	hi, lo := bits.Mul64(id.Sectors, uint64(id.LogicalSectorSize))
	if hi != 0 {
		return ^uint64(0)
	}
	return lo
}

// SolidState reports whether the drive says it does not rotate.
func (id *Identity) SolidState() bool { return id.RotationRate == 1 }

// WWNParts splits the WWN into its NAA, IEEE OUI and vendor-specific id, the
// three numbers smartctl prints.
func (id *Identity) WWNParts() (naa uint8, oui uint32, vendorID uint64) {
	return uint8(id.WWN >> 60), uint32(id.WWN>>36) & 0xFFFFFF, id.WWN & (1<<36 - 1)
}

// ParseIdentify decodes a 512-byte IDENTIFY DEVICE page. When word 255
// carries the A5h signature its checksum byte must be right.
func ParseIdentify(b []byte) (*Identity, error) {
	if len(b) != PageSize {
		return nil, fmt.Errorf("ata identify: page is %d bytes, want %d", len(b), PageSize)
	}
	if b[510] == 0xA5 && byteSum(b) != 0 {
		return nil, fmt.Errorf("ata identify: %w (integrity word %#04x)", ErrChecksum, binary.LittleEndian.Uint16(b[510:]))
	}
	w := func(i int) uint16 { return binary.LittleEndian.Uint16(b[2*i:]) }
	// Bit 15 of word 0 marks an ATAPI device; 848Ah is the one CFA value
	// that sets it yet is an ATA device.
	if w(0)&0x8000 != 0 && w(0) != 0x848A {
		return nil, errors.New("ata identify: word 0 marks an ATAPI (packet) device, not an ATA drive")
	}
	if allSame(b[:PageSize-2]) {
		return nil, errors.New("ata identify: page is blank")
	}

	id := &Identity{
		Serial:       swappedString(b, 10, 20),
		Firmware:     swappedString(b, 23, 27),
		Model:        swappedString(b, 27, 47),
		RotationRate: w(217),
	}
	if v := w(80); v != 0 && v != 0xFFFF {
		id.MajorVersion = v
		id.MinorVersion = w(81)
	}

	// Words 82-84 and 85-87 say which features exist and are enabled. Words
	// 83, 84 and 87 carry 01b in bits 15:14 when the group is valid.
	w82valid := w(82) != 0 && w(82) != 0xFFFF
	w83valid, w84valid, w87valid := validWord(w(83)), validWord(w(84)), validWord(w(87))
	id.SMARTSupported = w82valid && w(82)&1 != 0
	id.SMARTEnabled = w87valid && w(85)&1 != 0
	id.LBA48 = w83valid && w(83)&(1<<10) != 0
	id.GPLSupported = (w84valid && w(84)&(1<<5) != 0) || (w87valid && w(87)&(1<<5) != 0)
	wwnSupported := (w84valid && w(84)&(1<<8) != 0) || (w87valid && w(87)&(1<<8) != 0)
	if wwnSupported {
		id.WWN = uint64(w(108))<<48 | uint64(w(109))<<32 | uint64(w(110))<<16 | uint64(w(111))
	}
	id.TRIM = w(169)&1 != 0

	id.Sectors = uint64(w(60)) | uint64(w(61))<<16
	if id.LBA48 {
		if n := words64(w, 100); n != 0 {
			id.Sectors = n
		}
	}
	// Word 69 bit 3: words 230-233 hold the extended sector count (ACS-4).
	if w(69)&(1<<3) != 0 {
		if n := words64(w, 230); n != 0 {
			id.Sectors = n
		}
	}

	id.LogicalSectorSize, id.PhysicalSectorSize = 512, 512
	if w106 := w(106); validWord(w106) {
		if w106&(1<<12) != 0 {
			// Logical sector size in 16-bit words.
			words := uint32(w(117)) | uint32(w(118))<<16
			if words >= 256 && words <= 1<<20 {
				id.LogicalSectorSize = 2 * words
			}
		}
		id.PhysicalSectorSize = id.LogicalSectorSize
		if w106&(1<<13) != 0 {
			id.PhysicalSectorSize = id.LogicalSectorSize << (w106 & 0xF)
		}
	}
	return id, nil
}

func validWord(v uint16) bool { return v&0xC000 == 0x4000 }

func words64(w func(int) uint16, first int) uint64 {
	return uint64(w(first)) | uint64(w(first+1))<<16 | uint64(w(first+2))<<32 | uint64(w(first+3))<<48
}

// swappedString reads an ATA string field spanning words [from, to): each
// word holds two characters with the first one in its high byte.
func swappedString(b []byte, from, to int) string {
	s := make([]byte, 0, 2*(to-from))
	for i := from; i < to; i++ {
		s = append(s, b[2*i+1], b[2*i])
	}
	return ascii.Clean(s)
}

func allSame(b []byte) bool {
	for _, c := range b[1:] {
		if c != b[0] {
			return false
		}
	}
	return true
}

package scsi

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/ascii"
)

// Inquiry is the standard INQUIRY data.
type Inquiry struct {
	// Qualifier 0 means a device is connected at this LUN.
	Qualifier uint8
	// DeviceType is the peripheral device type: 0 direct-access block
	// device (a disk), 5 CD/DVD, 0x0E simplified direct access...
	DeviceType uint8
	Removable  bool
	// Version is the claimed SPC version (e.g. 7 = SPC-5).
	Version  uint8
	Vendor   string
	Product  string
	Revision string
}

// ATA reports whether a SCSI/ATA translation layer presents an ATA device:
// SAT puts "ATA" in the vendor field.
func (i *Inquiry) ATA() bool { return i.Vendor == "ATA" }

// ParseInquiry decodes standard INQUIRY data (at least the 36 bytes every
// device returns).
func ParseInquiry(b []byte) (*Inquiry, error) {
	if len(b) < 36 {
		return nil, fmt.Errorf("inquiry: %d bytes, want at least 36", len(b))
	}
	if n := int(b[4]) + 5; n < 36 {
		return nil, fmt.Errorf("inquiry: additional length %d leaves only %d bytes, want 36", b[4], n)
	}
	return &Inquiry{
		Qualifier:  b[0] >> 5,
		DeviceType: b[0] & 0x1F,
		Removable:  b[1]&0x80 != 0,
		Version:    b[2],
		Vendor:     ascii.Clean(b[8:16]),
		Product:    ascii.Clean(b[16:32]),
		Revision:   ascii.Clean(b[32:36]),
	}, nil
}

// vpdBody checks a VPD page header and returns the page's payload.
func vpdBody(b []byte, page uint8) ([]byte, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("vpd page %#02x: %d bytes, shorter than the header", page, len(b))
	}
	if b[1] != page {
		return nil, fmt.Errorf("vpd page %#02x: got page %#02x", page, b[1])
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if 4+n > len(b) {
		return nil, fmt.Errorf("vpd page %#02x: page length %d exceeds the %d bytes returned (truncated)", page, n, len(b)-4)
	}
	return b[4 : 4+n], nil
}

// ParseUnitSerialNumber decodes VPD page 80h. (smart.go indexes this page
// by its own length byte and panics on long serials; here the length is
// checked against the buffer.)
func ParseUnitSerialNumber(b []byte) (string, error) {
	body, err := vpdBody(b, VPDUnitSerialNumber)
	if err != nil {
		return "", err
	}
	return ascii.Clean(body), nil
}

// Designator is one identification descriptor of VPD page 83h. Value
// aliases the page buffer.
type Designator struct {
	CodeSet     uint8 // 1 binary, 2 ASCII, 3 UTF-8
	Association uint8 // 0 logical unit, 1 target port, 2 target device
	Type        uint8 // 2 EUI-64, 3 NAA, 8 SCSI name string...
	Value       []byte
}

// ParseDeviceIdentification decodes VPD page 83h.
func ParseDeviceIdentification(b []byte) ([]Designator, error) {
	body, err := vpdBody(b, VPDDeviceID)
	if err != nil {
		return nil, err
	}
	var out []Designator
	for off := 0; off < len(body); {
		if off+4 > len(body) {
			return nil, fmt.Errorf("vpd page 0x83: descriptor header at offset %d cut off", 4+off)
		}
		n := int(body[off+3])
		if off+4+n > len(body) {
			return nil, fmt.Errorf("vpd page 0x83: descriptor at offset %d has length %d, past the page end", 4+off, n)
		}
		out = append(out, Designator{
			CodeSet:     body[off] & 0x0F,
			Association: body[off+1] >> 4 & 0x03,
			Type:        body[off+1] & 0x0F,
			Value:       body[off+4 : off+4+n],
		})
		off += 4 + n
	}
	return out, nil
}

// Designator types the receiver uses for a stable disk identity.
const (
	DesignatorEUI64        = 2
	DesignatorNAA          = 3
	DesignatorSCSIName     = 8
	associationLogicalUnit = 0
)

// LogicalUnitID picks the logical unit's stable name from VPD 83h
// designators, preferring NAA, then EUI-64 (both as 0x-prefixed hex, the
// form smartctl prints as logical_unit_id), then a SCSI name string.
func LogicalUnitID(ds []Designator) (string, bool) {
	for _, want := range []uint8{DesignatorNAA, DesignatorEUI64, DesignatorSCSIName} {
		for _, d := range ds {
			if d.Association != associationLogicalUnit || d.Type != want || len(d.Value) == 0 {
				continue
			}
			if want == DesignatorSCSIName {
				if s := ascii.Clean(d.Value); s != "" {
					return s, true
				}
				continue
			}
			return "0x" + hex.EncodeToString(d.Value), true
		}
	}
	return "", false
}

// BlockDeviceCharacteristics is VPD page B1h.
type BlockDeviceCharacteristics struct {
	// RotationRate: 0 not reported, 1 non-rotating (solid state), else rpm.
	RotationRate uint16
	// FormFactor: 0 not reported, 1 5.25", 2 3.5", 3 2.5", 4 1.8", 5 below 1.8".
	FormFactor uint8
}

// ParseBlockDeviceCharacteristics decodes VPD page B1h.
func ParseBlockDeviceCharacteristics(b []byte) (BlockDeviceCharacteristics, error) {
	body, err := vpdBody(b, VPDBlockDeviceCharac)
	if err != nil {
		return BlockDeviceCharacteristics{}, err
	}
	if len(body) < 4 {
		return BlockDeviceCharacteristics{}, fmt.Errorf("vpd page 0xb1: %d bytes of payload, want at least 4", len(body))
	}
	return BlockDeviceCharacteristics{
		RotationRate: binary.BigEndian.Uint16(body),
		FormFactor:   body[3] & 0x0F,
	}, nil
}

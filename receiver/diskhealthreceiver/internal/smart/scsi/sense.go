package scsi

import (
	"encoding/binary"
	"fmt"
)

// SenseKey is the sense key of a CHECK CONDITION.
type SenseKey uint8

// Sense keys (SPC-5).
const (
	KeyNoSense        SenseKey = 0x0
	KeyRecoveredError SenseKey = 0x1
	KeyNotReady       SenseKey = 0x2
	KeyMediumError    SenseKey = 0x3
	KeyHardwareError  SenseKey = 0x4
	KeyIllegalRequest SenseKey = 0x5
	KeyUnitAttention  SenseKey = 0x6
	KeyDataProtect    SenseKey = 0x7
	KeyAbortedCommand SenseKey = 0xB
)

var keyNames = [16]string{
	"NO SENSE", "RECOVERED ERROR", "NOT READY", "MEDIUM ERROR", "HARDWARE ERROR",
	"ILLEGAL REQUEST", "UNIT ATTENTION", "DATA PROTECT", "BLANK CHECK", "VENDOR SPECIFIC",
	"COPY ABORTED", "ABORTED COMMAND", "RESERVED", "VOLUME OVERFLOW", "MISCOMPARE", "COMPLETED",
}

func (k SenseKey) String() string { return keyNames[k&0x0F] }

// Sense is decoded sense data.
type Sense struct {
	// Descriptor says the descriptor format (72h/73h) was used rather than
	// the fixed format (70h/71h).
	Descriptor bool
	Key        SenseKey
	ASC, ASCQ  uint8
	// Valid and Information: the fixed format's INFORMATION field.
	Valid       bool
	Information uint32
	// ata holds the ATA output registers when the data carries them.
	ata *ATARegisters
}

func (s *Sense) String() string {
	return fmt.Sprintf("%s (asc/ascq %02x/%02x)", s.Key, s.ASC, s.ASCQ)
}

// ATARegisters are the ATA output registers an ATA PASS-THROUGH command
// returns in its sense data.
type ATARegisters struct {
	Extend bool
	Error  uint8
	Status uint8
	Device uint8
	Count  uint16
	LBA    uint64
}

// LBALow is the low 8-bit register of the 28-bit view.
func (r ATARegisters) LBALow() uint8 { return uint8(r.LBA) }

// LBAMid is the middle 8-bit register of the 28-bit view (SMART RETURN STATUS
// answers in LBAMid/LBAHigh).
func (r ATARegisters) LBAMid() uint8 { return uint8(r.LBA >> 8) }

// LBAHigh is the high 8-bit register of the 28-bit view.
func (r ATARegisters) LBAHigh() uint8 { return uint8(r.LBA >> 16) }

// ATA returns the ATA registers of a response to ATA PASS-THROUGH: from the
// ATA Status Return descriptor in descriptor format, or from the
// INFORMATION and COMMAND-SPECIFIC INFORMATION fields in fixed format
// (SAT-5). Only meaningful for that command: other commands use those
// fixed-format fields for other things.
func (s *Sense) ATA() (ATARegisters, bool) {
	if s.ata == nil {
		return ATARegisters{}, false
	}
	return *s.ata, true
}

// ParseSense decodes fixed- or descriptor-format sense data.
func ParseSense(b []byte) (*Sense, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("sense data: %d bytes", len(b))
	}
	switch code := b[0] & 0x7F; code {
	case 0x70, 0x71:
		if len(b) < 8 {
			return nil, fmt.Errorf("fixed sense data: %d bytes, want at least 8", len(b))
		}
		s := &Sense{Key: SenseKey(b[2] & 0x0F), Valid: b[0]&0x80 != 0, Information: binary.BigEndian.Uint32(b[3:])}
		if len(b) >= 14 && int(b[7]) >= 6 {
			s.ASC, s.ASCQ = b[12], b[13]
		}
		if s.Valid && len(b) >= 12 {
			s.ata = &ATARegisters{
				Error:  b[3],
				Status: b[4],
				Device: b[5],
				Count:  uint16(b[6]),
				Extend: b[8]&0x80 != 0,
				LBA:    uint64(b[9]) | uint64(b[10])<<8 | uint64(b[11])<<16,
			}
		}
		return s, nil
	case 0x72, 0x73:
		if len(b) < 8 {
			return nil, fmt.Errorf("descriptor sense data: %d bytes, want at least 8", len(b))
		}
		s := &Sense{Descriptor: true, Key: SenseKey(b[1] & 0x0F), ASC: b[2], ASCQ: b[3]}
		end := min(8+int(b[7]), len(b))
		for off := 8; off+2 <= end; {
			n := int(b[off+1])
			if off+2+n > end {
				return nil, fmt.Errorf("descriptor sense data: descriptor %#02x at offset %d runs past the data", b[off], off)
			}
			if d := b[off : off+2+n]; d[0] == 0x09 && n >= 12 {
				s.ata = &ATARegisters{
					Extend: d[2]&1 != 0,
					Error:  d[3],
					Count:  uint16(d[4])<<8 | uint16(d[5]),
					LBA: uint64(d[7]) | uint64(d[9])<<8 | uint64(d[11])<<16 |
						uint64(d[6])<<24 | uint64(d[8])<<32 | uint64(d[10])<<40,
					Device: d[12],
					Status: d[13],
				}
			}
			off += 2 + n
		}
		return s, nil
	default:
		return nil, fmt.Errorf("sense data: response code %#02x is neither fixed (70h/71h) nor descriptor (72h/73h) format", code)
	}
}

package ata

import (
	"encoding/binary"
	"fmt"
	"time"
)

const (
	attrSlots    = 30 // attribute entries in a SMART READ DATA / THRESHOLDS page
	attrSlotSize = 12
)

// Attribute flag bits (the low bits of the 16-bit flags word).
const (
	FlagPreFail = 1 << 0 // reaching the threshold predicts imminent failure
	FlagOnline  = 1 << 1 // updated during normal operation, not only offline
)

// RawAttribute is one 12-byte entry of the SMART READ DATA page, undecoded.
type RawAttribute struct {
	ID       uint8
	Flags    uint16
	Value    uint8 // normalized current value
	Worst    uint8 // normalized worst value seen
	RawBytes [6]byte
	Reserved uint8 // vendor byte after the raw bytes, used by 56-bit formats
}

// SMARTData is the SMART READ DATA page.
type SMARTData struct {
	Revision   uint16
	Attributes []RawAttribute // in page order, empty slots (ID 0) left out

	OfflineCollectionStatus  uint8
	SelfTestExecutionStatus  uint8 // status in bits 7:4, percent remaining/10 in bits 3:0
	OfflineCollectionSeconds uint16
	OfflineCapabilities      uint8
	SMARTCapabilities        uint16
	ErrorLoggingSupported    bool
	ShortTestMinutes         uint16
	ExtendedTestMinutes      uint16
	ConveyanceTestMinutes    uint16
}

// SelfTestStatus is the state of the most recent self-test as kept in the
// SMART data page (same codes as the self-test log).
func (d *SMARTData) SelfTestStatus() SelfTestStatus {
	return SelfTestStatus(d.SelfTestExecutionStatus >> 4)
}

// ParseSMARTData decodes a SMART READ DATA page after verifying its checksum.
// Duplicate attribute IDs keep their first entry, as smartctl shows them.
func ParseSMARTData(b []byte) (*SMARTData, error) {
	if err := checkPage("smart read data", b); err != nil {
		return nil, err
	}
	d := &SMARTData{
		Revision:                 binary.LittleEndian.Uint16(b),
		OfflineCollectionStatus:  b[362],
		SelfTestExecutionStatus:  b[363],
		OfflineCollectionSeconds: binary.LittleEndian.Uint16(b[364:]),
		OfflineCapabilities:      b[367],
		SMARTCapabilities:        binary.LittleEndian.Uint16(b[368:]),
		ErrorLoggingSupported:    b[370]&1 != 0,
		ShortTestMinutes:         uint16(b[372]),
		ExtendedTestMinutes:      uint16(b[373]),
		ConveyanceTestMinutes:    uint16(b[374]),
	}
	// FFh in the byte means "too long, see the word at 375".
	if b[373] == 0xFF {
		d.ExtendedTestMinutes = binary.LittleEndian.Uint16(b[375:])
	}
	var seen [256]bool
	for i := range attrSlots {
		e := b[2+i*attrSlotSize:][:attrSlotSize]
		if e[0] == 0 || seen[e[0]] {
			continue
		}
		seen[e[0]] = true
		a := RawAttribute{
			ID:       e[0],
			Flags:    binary.LittleEndian.Uint16(e[1:]),
			Value:    e[3],
			Worst:    e[4],
			Reserved: e[11],
		}
		copy(a.RawBytes[:], e[5:11])
		d.Attributes = append(d.Attributes, a)
	}
	return d, nil
}

// Thresholds is the SMART READ THRESHOLDS page: one threshold per attribute.
type Thresholds struct {
	Revision uint16
	value    [256]uint8
	present  [256]bool
}

// ParseThresholds decodes a SMART READ THRESHOLDS page after verifying its
// checksum.
func ParseThresholds(b []byte) (*Thresholds, error) {
	if err := checkPage("smart read thresholds", b); err != nil {
		return nil, err
	}
	t := &Thresholds{Revision: binary.LittleEndian.Uint16(b)}
	for i := range attrSlots {
		e := b[2+i*attrSlotSize:][:attrSlotSize]
		if e[0] == 0 || t.present[e[0]] {
			continue
		}
		t.value[e[0]], t.present[e[0]] = e[1], true
	}
	return t, nil
}

// NewThresholds is a thresholds page already decoded elsewhere (smart.go's
// ReadSMARTThresholds, which checks the page's checksum itself): attribute
// ID to threshold.
func NewThresholds(revision uint16, byID map[uint8]uint8) *Thresholds {
	t := &Thresholds{Revision: revision}
	for id, v := range byID {
		if id != 0 {
			t.value[id], t.present[id] = v, true
		}
	}
	return t
}

// Lookup returns the threshold of attribute id.
func (t *Thresholds) Lookup(id uint8) (uint8, bool) {
	if t == nil {
		return 0, false
	}
	return t.value[id], t.present[id]
}

// Attribute is a SMART attribute with its name, threshold and decoded raw
// value.
type Attribute struct {
	RawAttribute
	Name         string
	Threshold    uint8
	HasThreshold bool
	Raw          RawValue
}

// PreFail reports the pre-failure flag: the vendor says falling to the
// threshold predicts failure (as opposed to mere ageing).
func (a *Attribute) PreFail() bool { return a.Flags&FlagPreFail != 0 }

// thresholdValid reports whether the threshold can be compared: 00h means
// "always passing" and FEh/FFh are not thresholds (ATA: always failing /
// invalid), so none of them is ever crossed.
func (a *Attribute) thresholdValid() bool {
	return a.HasThreshold && a.Threshold != 0 && a.Threshold < 0xFE
}

// FailingNow reports whether the normalized value is at or below a valid
// threshold (smartctl's FAILING_NOW).
func (a *Attribute) FailingNow() bool { return a.thresholdValid() && a.Value <= a.Threshold }

// FailedInPast reports whether the worst value reached a valid threshold
// while the current value is above it again (smartctl's In_the_past).
func (a *Attribute) FailedInPast() bool {
	return a.thresholdValid() && a.Value > a.Threshold && a.Worst <= a.Threshold
}

// Label names the attribute for people: "Current_Pending_Sector (197)".
func (a *Attribute) Label() string { return fmt.Sprintf("%s (%d)", a.Name, a.ID) }

// Attributes is a decoded attribute table in page order.
type Attributes []Attribute

// Find returns the attribute with the given ID.
func (as Attributes) Find(id uint8) (*Attribute, bool) {
	for i := range as {
		if as[i].ID == id {
			return &as[i], true
		}
	}
	return nil, false
}

// Temperature returns the drive temperature in °C from attribute 194, or 190
// when 194 is missing, provided the database reads it as a temperature and
// the value is plausible. (smart.go picked whichever its map iteration met
// last.)
func (as Attributes) Temperature() (int, bool) {
	for _, id := range [...]uint8{194, 190} {
		a, ok := as.Find(id)
		if !ok || !a.Raw.Format.Temperature() {
			continue
		}
		if t := a.Raw.Value; t > -60 && t <= 125 {
			return int(t), true
		}
	}
	return 0, false
}

// PowerOn returns the power-on time from attribute 9: exact for duration
// formats, whole hours otherwise.
func (as Attributes) PowerOn() (time.Duration, bool) {
	a, ok := as.Find(9)
	if !ok {
		return 0, false
	}
	if a.Raw.Format.Duration() {
		return a.Raw.Duration, true
	}
	return spanOf(uint64(max(a.Raw.Value, 0)), time.Hour), true
}

// PowerCycles returns attribute 12, the power-cycle count.
func (as Attributes) PowerCycles() (int64, bool) {
	a, ok := as.Find(12)
	if !ok {
		return 0, false
	}
	return a.Raw.Value, true
}

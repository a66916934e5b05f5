package ata

import "fmt"

// SMARTStatus is the drive's own health verdict from SMART RETURN STATUS.
type SMARTStatus uint8

// SMART RETURN STATUS outcomes.
const (
	SMARTStatusUnknown SMARTStatus = iota
	SMARTStatusPassed
	// SMARTStatusFailed: the drive says a threshold was exceeded.
	SMARTStatusFailed
)

func (s SMARTStatus) String() string {
	switch s {
	case SMARTStatusPassed:
		return "passed"
	case SMARTStatusFailed:
		return "failed"
	}
	return "unknown"
}

// ParseReturnStatus reads the LBA mid/high registers SMART RETURN STATUS
// leaves behind: 4Fh/C2h passed, F4h/2Ch a threshold was exceeded. Anything
// else (a bridge that does not return registers) is an error.
func ParseReturnStatus(lbaMid, lbaHigh uint8) (SMARTStatus, error) {
	switch {
	case lbaMid == 0x4F && lbaHigh == 0xC2:
		return SMARTStatusPassed, nil
	case lbaMid == 0xF4 && lbaHigh == 0x2C:
		return SMARTStatusFailed, nil
	}
	return SMARTStatusUnknown, fmt.Errorf("smart return status: unexpected LBA mid/high %#02x/%#02x (want 4f/c2 or f4/2c)", lbaMid, lbaHigh)
}

// PowerMode is the power state CHECK POWER MODE reports in its COUNT
// register.
type PowerMode uint8

// Power modes (ACS-3). Only Active/Idle and Idle are safe to read SMART
// from without spinning the disk up.
const (
	PowerStandby        PowerMode = 0x00
	PowerStandbyNVCache PowerMode = 0x40 // NV cache power mode, spindle down
	PowerActiveNVCache  PowerMode = 0x41 // NV cache power mode, spindle up
	PowerIdle           PowerMode = 0x80
	PowerActiveOrIdle   PowerMode = 0xFF
)

// Spinning reports whether reading SMART now leaves the platters as they
// are. Unknown codes count as asleep: waking a disk is the costlier mistake.
func (m PowerMode) Spinning() bool {
	switch m {
	case PowerIdle, PowerActiveOrIdle, PowerActiveNVCache:
		return true
	}
	// ACS-3 idle_a/b/c and standby_y/z sub-states: 81h-83h idle, 01h-02h standby.
	return m >= 0x81 && m <= 0x83
}

func (m PowerMode) String() string {
	switch {
	case m == PowerActiveOrIdle:
		return "active_or_idle"
	case m == PowerIdle || (m >= 0x81 && m <= 0x83):
		return "idle"
	case m == PowerActiveNVCache:
		return "active_nv_cache"
	case m == PowerStandby || m == PowerStandbyNVCache || m == 0x01 || m == 0x02:
		return "standby"
	}
	return fmt.Sprintf("unknown(%#02x)", uint8(m))
}

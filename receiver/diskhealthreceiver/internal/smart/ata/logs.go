package ata

import (
	"encoding/binary"
	"fmt"
)

// SelfTestStatus is the 4-bit result code of a self-test (ACS-3 table
// "Self-test execution status"), both in the SMART data page and the log.
type SelfTestStatus uint8

// Self-test results. 3..8 mean the test found a fault.
const (
	SelfTestCompleted        SelfTestStatus = 0
	SelfTestAbortedByHost    SelfTestStatus = 1
	SelfTestInterrupted      SelfTestStatus = 2
	SelfTestFatalError       SelfTestStatus = 3
	SelfTestFailedUnknown    SelfTestStatus = 4
	SelfTestFailedElectrical SelfTestStatus = 5
	SelfTestFailedServo      SelfTestStatus = 6
	SelfTestFailedRead       SelfTestStatus = 7
	SelfTestFailedHandling   SelfTestStatus = 8
	SelfTestInProgress       SelfTestStatus = 15
)

// Failed reports whether the status says the test found a fault.
func (s SelfTestStatus) Failed() bool { return s >= SelfTestFatalError && s <= SelfTestFailedHandling }

func (s SelfTestStatus) String() string {
	switch s {
	case SelfTestCompleted:
		return "completed without error"
	case SelfTestAbortedByHost:
		return "aborted by the host"
	case SelfTestInterrupted:
		return "interrupted by a reset"
	case SelfTestFatalError:
		return "fatal or unknown error"
	case SelfTestFailedUnknown:
		return "failed (unknown element)"
	case SelfTestFailedElectrical:
		return "failed (electrical element)"
	case SelfTestFailedServo:
		return "failed (servo/seek element)"
	case SelfTestFailedRead:
		return "failed (read element)"
	case SelfTestFailedHandling:
		return "failed (handling damage)"
	case SelfTestInProgress:
		return "in progress"
	}
	return fmt.Sprintf("reserved status %d", uint8(s))
}

// SelfTestEntry is one self-test log descriptor.
type SelfTestEntry struct {
	// Test is the subcommand that started the test: 1/81h short, 2/82h
	// extended, 3/83h conveyance, 4/84h selective (81h-84h captive), 0
	// offline data collection.
	Test             uint8
	Status           SelfTestStatus
	RemainingPercent uint8
	LifetimeHours    uint16
	// FailingLBA is the first failing LBA (28-bit log); meaningful only for
	// failed tests.
	FailingLBA uint32
}

// Extended reports whether the entry is an extended (full-surface) test.
func (e SelfTestEntry) Extended() bool { return e.Test == 0x02 || e.Test == 0x82 }

// SelfTestLog is the SMART self-test log (log address 06h).
type SelfTestLog struct {
	Revision uint16
	// Entries are newest first.
	Entries []SelfTestEntry
}

const (
	selfTestEntries   = 21
	selfTestEntrySize = 24
)

// ParseSelfTestLog decodes the SMART self-test log after verifying its
// checksum. The log is a ring of 21 descriptors; byte 508 points at the
// newest (1-based, 0 = no test logged).
func ParseSelfTestLog(b []byte) (*SelfTestLog, error) {
	if err := checkPage("smart self-test log", b); err != nil {
		return nil, err
	}
	l := &SelfTestLog{Revision: binary.LittleEndian.Uint16(b)}
	newest := int(b[508])
	if newest == 0 {
		return l, nil
	}
	if newest > selfTestEntries {
		return nil, fmt.Errorf("smart self-test log: newest-entry index %d is beyond the %d descriptors", newest, selfTestEntries)
	}
	for n := range selfTestEntries {
		i := (newest - 1 - n + selfTestEntries) % selfTestEntries
		d := b[2+i*selfTestEntrySize:][:selfTestEntrySize]
		if allZero(d) {
			continue
		}
		l.Entries = append(l.Entries, SelfTestEntry{
			Test:             d[0],
			Status:           SelfTestStatus(d[1] >> 4),
			RemainingPercent: (d[1] & 0x0F) * 10,
			LifetimeHours:    binary.LittleEndian.Uint16(d[2:]),
			FailingLBA:       binary.LittleEndian.Uint32(d[5:]),
		})
	}
	return l, nil
}

// UnresolvedFailure returns the newest failed self-test unless a later
// extended test completed without error, which re-verified the whole
// surface and so supersedes it (smartctl's rule for its exit status).
func (l *SelfTestLog) UnresolvedFailure() (SelfTestEntry, bool) {
	for _, e := range l.Entries {
		if e.Status.Failed() {
			return e, true
		}
		if e.Extended() && e.Status == SelfTestCompleted {
			return SelfTestEntry{}, false
		}
	}
	return SelfTestEntry{}, false
}

// ErrorLogEntry is the error part of one summary error log data structure.
type ErrorLogEntry struct {
	Error, Status, Count uint8
	LBA                  uint32 // 28-bit LBA with the device register's bits 27:24
	State                uint8  // device state: 0 unknown, 1 sleep, 2 standby, 3 active/idle, 4 offline/self-test
	LifetimeHours        uint16
}

// ErrorLogSummary is the SMART summary error log (log address 01h).
type ErrorLogSummary struct {
	Revision uint8
	// ErrorCount is the number of errors the drive has logged in its life
	// (not just the five kept).
	ErrorCount uint16
	// Entries are the kept errors, newest first.
	Entries []ErrorLogEntry
}

const (
	errorLogEntries   = 5
	errorLogEntrySize = 90
)

// ParseErrorLogSummary decodes the SMART summary error log after verifying
// its checksum.
func ParseErrorLogSummary(b []byte) (*ErrorLogSummary, error) {
	if err := checkPage("smart summary error log", b); err != nil {
		return nil, err
	}
	l := &ErrorLogSummary{Revision: b[0], ErrorCount: binary.LittleEndian.Uint16(b[452:])}
	newest := int(b[1])
	if newest == 0 {
		return l, nil
	}
	if newest > errorLogEntries {
		return nil, fmt.Errorf("smart summary error log: newest-entry index %d is beyond the %d entries", newest, errorLogEntries)
	}
	for n := range errorLogEntries {
		i := (newest - 1 - n + errorLogEntries) % errorLogEntries
		d := b[2+i*errorLogEntrySize:][:errorLogEntrySize]
		if allZero(d) {
			continue
		}
		// The last 30 bytes are the error registers; the 60 before them the
		// five commands leading up to the error.
		e := d[60:]
		l.Entries = append(l.Entries, ErrorLogEntry{
			Error:         e[1],
			Count:         e[2],
			LBA:           uint32(e[3]) | uint32(e[4])<<8 | uint32(e[5])<<16 | uint32(e[6]&0x0F)<<24,
			Status:        e[7],
			State:         e[27],
			LifetimeHours: binary.LittleEndian.Uint16(e[28:]),
		})
	}
	return l, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Package ata decodes the pages a SATA/PATA drive returns to read-only ATA
// commands: IDENTIFY DEVICE, SMART READ DATA, SMART READ THRESHOLDS, the
// SMART summary error and self-test logs, the device statistics log and the
// register outputs of SMART RETURN STATUS and CHECK POWER MODE. A drive
// database says how each attribute is named and its raw value read: the one
// built in (drivedb.go), or smartmontools' drivedb.h read at run time
// (drivedbh.go, ParseDriveDB).
//
// Every decoder takes bytes and nothing else, so the same code serves the
// SG_IO device layer, fixture tests and fuzzing. A page that fails its own
// integrity check (checksum, signature, length) is an error: callers get
// "this page is bad", never plausible-looking garbage.
package ata // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"

import (
	"errors"
	"fmt"
)

// PageSize is the size of every ATA data page decoded here (one 512-byte
// sector).
const PageSize = 512

// Command codes and SMART feature codes (ACS-3) of the only commands this
// project sends. The read-only allowlist in package smart is built from them.
const (
	CmdSMART          = 0xB0
	CmdIdentifyDevice = 0xEC
	CmdCheckPowerMode = 0xE5
	CmdReadLogExt     = 0x2F

	SMARTReadData       = 0xD0
	SMARTReadThresholds = 0xD1
	SMARTReadLog        = 0xD5
	SMARTReturnStatus   = 0xDA

	// SMARTLBAMid and SMARTLBAHigh are the key every SMART command must carry
	// in LBA(15:8) and LBA(23:16).
	SMARTLBAMid  = 0x4F
	SMARTLBAHigh = 0xC2
)

// Log addresses read with SMART READ LOG or READ LOG EXT.
const (
	LogDirectory           = 0x00
	LogSummaryError        = 0x01
	LogComprehensiveError  = 0x02
	LogExtComprehensiveErr = 0x03
	LogDeviceStatistics    = 0x04
	LogSelfTest            = 0x06
	LogExtSelfTest         = 0x07
)

// ErrChecksum is wrapped by every error about a page whose checksum byte
// does not make the page sum to zero.
var ErrChecksum = errors.New("checksum mismatch")

// checkPage verifies the length and the ATA data-structure checksum: the
// 512 bytes of a page, the checksum byte included, must sum to 0 mod 256.
func checkPage(what string, b []byte) error {
	if len(b) != PageSize {
		return fmt.Errorf("%s: page is %d bytes, want %d", what, len(b), PageSize)
	}
	if sum := byteSum(b); sum != 0 {
		return fmt.Errorf("%s: %w (bytes sum to %#02x, checksum byte %#02x)", what, ErrChecksum, sum, b[PageSize-1])
	}
	return nil
}

func byteSum(b []byte) byte {
	var s byte
	for _, c := range b {
		s += c
	}
	return s
}

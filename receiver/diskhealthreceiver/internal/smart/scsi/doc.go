// Package scsi decodes the SCSI data the receiver reads from SAS/SCSI disks
// and from SATA disks behind a SCSI/ATA translation layer: LOG SENSE pages
// (supported pages, error counters, temperature, start-stop cycles, self-test
// results, informational exceptions), standard INQUIRY and its VPD pages
// 80h/83h/B1h, READ CAPACITY(16) and sense data, including the ATA
// registers an ATA PASS-THROUGH command returns in it. Decoders take bytes
// only and check every length before using it.
package scsi // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/scsi"

// Operation codes of the only commands this project sends (SPC-5, SBC-4,
// SAT-5). The read-only allowlist in package smart is built from them.
const (
	OpInquiry           = 0x12
	OpLogSense          = 0x4D
	OpServiceActionIn16 = 0x9E
	OpATAPassThrough16  = 0x85
	OpATAPassThrough12  = 0xA1

	// SAReadCapacity16 is the SERVICE ACTION IN(16) action for READ
	// CAPACITY(16).
	SAReadCapacity16 = 0x10
)

// LOG SENSE page codes.
const (
	PageSupported               = 0x00
	PageWriteErrors             = 0x02
	PageReadErrors              = 0x03
	PageVerifyErrors            = 0x05
	PageTemperature             = 0x0D
	PageStartStop               = 0x0E
	PageSelfTest                = 0x10
	PageInformationalExceptions = 0x2F
)

// VPD page codes.
const (
	VPDSupported         = 0x00
	VPDUnitSerialNumber  = 0x80
	VPDDeviceID          = 0x83
	VPDBlockDeviceCharac = 0xB1
)

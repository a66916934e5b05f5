package device

import (
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
)

// ataReads is what readATA asks the library (smart.go) for, already in the
// decoders' types: readATA knows nothing of smart.go's (smartgo_linux.go
// adapts them, and elsewhere there is no library).
type ataReads interface {
	Identify() (*ata.Identity, error)
	// SMARTData is the SMART data page and the preset of the library's own
	// names for it (used when no drive database was read).
	SMARTData() (*ata.SMARTData, ata.Preset, error)
	Thresholds() (*ata.Thresholds, error)
	Close() error
}

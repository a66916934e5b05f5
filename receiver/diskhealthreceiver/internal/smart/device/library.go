package device

import (
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
)

// ataReads is what readATA asks the library (smart.go) for, already in the
// decoders' types: readATA knows nothing of smart.go's (smartgo_linux.go
// adapts them, and elsewhere there is no library). It stays open from one
// read of the disk to the next (identityCache.ataDev); each call is bounded by
// the deadline of the read it is part of.
type ataReads interface {
	Identify(deadline time.Time) (*ata.Identity, error)
	// SMARTData is the SMART data page and the preset of the library's own
	// names for it (used when no drive database was read).
	SMARTData(deadline time.Time) (*ata.SMARTData, ata.Preset, error)
	Thresholds(deadline time.Time) (*ata.Thresholds, error)
	Close() error
}

//go:build !linux

package device

import (
	"fmt"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// Library is the seam of the reads github.com/anatol/smart.go does on Linux;
// it does not build for every other system (macOS needs cgo) and its ioctls
// are Linux's, so elsewhere there is none and every disk reads unsupported.
type Library interface{}

func defaultLibrary() Library { return nil }

func openATA(_ Library, _, node string, _ time.Time) (ataReads, error) {
	return nil, fmt.Errorf("open %s: %w", node, errNeedsLinux)
}

func readNVMeSMART(_ Library, _, node string, _ time.Time) (*nvme.SMARTLog, error) {
	return nil, fmt.Errorf("open %s: %w", node, errNeedsLinux)
}

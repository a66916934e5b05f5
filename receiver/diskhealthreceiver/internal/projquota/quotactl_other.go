//go:build !linux

package projquota // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/projquota"

// Read is unsupported off Linux.
func Read(_, _ string, dst []Project) ([]Project, error) { return dst, ErrUnsupported }

package pressure

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// Read reads and parses the PSI file at path. A kernel without PSI gives an error that wraps
// ErrUnavailable (errors.Is), so callers can report it once instead of every read. Errors name path.
func Read(path string) (Pressure, error) {
	data, err := bounded.ReadFile(path, bounded.Pressure, nil)
	if err != nil {
		if Unavailable(err) {
			return Pressure{}, fmt.Errorf("%s: %w (%w)", path, ErrUnavailable, err)
		}
		return Pressure{}, err
	}
	p, err := Parse(data)
	if err != nil {
		return Pressure{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Unavailable reports whether a read error means "no PSI here" rather than a failure: the file or
// /proc/pressure does not exist (CONFIG_PSI off; psi=0 on current kernels), or the kernel refuses the
// read with EOPNOTSUPP (psi=0 on kernels that still create the files).
func Unavailable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EOPNOTSUPP)
}

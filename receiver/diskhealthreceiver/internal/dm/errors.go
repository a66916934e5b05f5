package dm

import (
	"errors"
	"syscall"
)

// isNoDevice: the device was removed between DM_LIST_DEVICES and its
// DM_TABLE_STATUS (the kernel answers ENXIO).
func isNoDevice(err error) bool { return errors.Is(err, syscall.ENXIO) }

func joinErrors(errs []error) error { return errors.Join(errs...) }

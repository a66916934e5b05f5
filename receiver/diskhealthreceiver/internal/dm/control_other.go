//go:build !linux

package dm

import (
	"errors"
	"fmt"
)

// ControlPath is the device-mapper control node on Linux.
const ControlPath = "/dev/mapper/control"

// Control is Linux-only.
type Control struct{ *Client }

// OpenControl is Linux-only: elsewhere it returns ErrUnsupported.
func OpenControl(path string) (*Control, error) {
	return nil, fmt.Errorf("open %s: %w", path, errors.Join(ErrUnsupported, errors.New("device-mapper exists on Linux only")))
}

// Close does nothing.
func (c *Control) Close() error { return nil }

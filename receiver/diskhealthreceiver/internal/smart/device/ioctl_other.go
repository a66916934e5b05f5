//go:build !linux

package device

import (
	"errors"
	"fmt"
)

// OpenNode is Linux-only: elsewhere every disk reports unsupported.
func OpenNode(node string) (Transport, error) {
	return nil, fmt.Errorf("open %s: %w", node, errors.Join(ErrUnsupported, errors.New("SMART ioctls are implemented for Linux only")))
}

//go:build !linux

package device

import "fmt"

// errNeedsLinux: the SG_IO and NVMe admin ioctls are Linux's. It wraps ErrUnsupported, so every disk
// reports unsupported rather than failing.
var errNeedsLinux = fmt.Errorf("%w: SMART ioctls need Linux", ErrUnsupported)

// OpenNode fails off Linux.
func OpenNode(node string) (Transport, error) {
	return nil, fmt.Errorf("open %s: %w", node, errNeedsLinux)
}

//go:build !linux

package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import "errors"

var errNotLinux = errors.New("the disk_health receiver reads Linux /proc, /sys and Linux ioctls: it runs on Linux only")

// supported refuses to create the receiver off Linux, with one error that says why.
func supported() error { return errNotLinux }

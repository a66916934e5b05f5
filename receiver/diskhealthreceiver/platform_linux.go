//go:build linux

package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

// supported: every source reads Linux interfaces (/proc, /sys, Linux ioctls).
func supported() error { return nil }

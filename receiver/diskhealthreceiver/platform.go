package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import "errors"

var errNotLinux = errors.New("the disk_health receiver reads Linux /proc, /sys and Linux ioctls: it runs on Linux only")

// platformError refuses to create the receiver off Linux, with one error that says why. The package
// compiles everywhere so that a distribution can include it; it takes the GOOS so that tests on Linux
// can check the refusal.
func platformError(goos string) error {
	if goos != "linux" {
		return errNotLinux
	}
	return nil
}

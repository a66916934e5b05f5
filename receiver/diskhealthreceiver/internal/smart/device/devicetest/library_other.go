//go:build !linux

package devicetest

import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"

// Library is nil off Linux, where the device layer has no library (and its
// tests do not run): it keeps the tests that name it building.
func (m *Machine) Library() device.Library { return nil }

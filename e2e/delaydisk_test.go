package e2e

import (
	"testing"
	"time"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// delayLoop attaches a read-only loop device to a testkit.DelayDisk of size bytes whose every read takes
// at least delay, and returns its name (loopN). The I/O a test does on it then lasts far longer than
// what fio adds around it (a syscall, a wake-up: tens of µs), so the block layer's latency and fio's fall
// in one bucket of a scale-3 histogram, which they do not on a plain loop device (15 µs requests). When
// the test ends the device is detached before the filesystem goes.
func delayLoop(t *testing.T, dir string, size int64, delay time.Duration) string {
	t.Helper()
	return attachLoop(t, testkit.DelayDisk{Size: size, Fixed: delay}.Serve(t, dir), "--read-only")
}

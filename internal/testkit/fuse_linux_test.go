package testkit

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServeFUSEKeepsItsDeviceFromChildren: a child process started while a test serves a FUSE
// filesystem has no descriptor on /dev/fuse, so it cannot keep a mount with no server alive.
func TestServeFUSEKeepsItsDeviceFromChildren(t *testing.T) {
	RequireRoot(t, "mounting a FUSE filesystem")
	_, err := os.Stat("/dev/fuse")
	require.NoError(t, err, "this kernel offers no FUSE device")
	img := DelayDisk{Size: 1 << 20}.Serve(t, t.TempDir())
	b, err := os.ReadFile(img)
	require.NoError(t, err)
	require.Len(t, b, 1<<20, "the image is served")

	out, err := exec.Command("sh", "-c", `for f in /proc/self/fd/*; do readlink "$f" || :; done`).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NotContains(t, strings.Fields(string(out)), "/dev/fuse", "the child's descriptors:\n%s", out)
}

// TestDelayDiskTakesItsTime: a serial delay disk serves a request in its fixed time plus its share per
// MiB, one after another; writes are taken.
func TestDelayDiskTakesItsTime(t *testing.T) {
	RequireRoot(t, "mounting a FUSE filesystem")
	img := DelayDisk{Size: 4 << 20, Fixed: 20 * time.Millisecond, PerMiB: 80 * time.Millisecond, Serial: true, Writable: true}.Serve(t, t.TempDir())
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	start := time.Now()
	buf := make([]byte, 1<<20)
	n, err := f.WriteAt(buf[:128<<10], 0)
	require.NoError(t, err)
	require.Equal(t, 128<<10, n)
	// 128 KiB: 20 ms + 10 ms; the duration is at least that, whatever the machine's load.
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
	_, err = f.ReadAt(buf[:4096], 4<<20-4096)
	require.NoError(t, err)
	require.Equal(t, make([]byte, 4096), buf[:4096])
}

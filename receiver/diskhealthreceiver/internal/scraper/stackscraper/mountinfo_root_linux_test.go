package stackscraper

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// The host's mount table is a seq_file, handed out a page per read: with more mounts than fit in a
// page, the stack source still reads all of them (a single read stopped at the first page).
func TestMountinfoBeyondOnePage(t *testing.T) {
	testkit.RequireRoot(t, "mount")
	dir := t.TempDir()
	for i := range 80 {
		mp := filepath.Join(dir, fmt.Sprintf("m%02d", i))
		require.NoError(t, os.Mkdir(mp, 0o755))
		require.NoError(t, unix.Mount("tmpfs", mp, "tmpfs", 0, "size=64k"))
		t.Cleanup(func() { _ = unix.Unmount(mp, unix.MNT_DETACH) })
	}
	want, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	require.Greater(t, len(want), os.Getpagesize(), "the mount table fits in a page: nothing to show")

	r := newReaders(&Config{Errors: true})
	got, err := r.mountinfo()
	require.NoError(t, err)
	self, err := os.ReadFile("/proc/1/mountinfo")
	require.NoError(t, err)
	require.Equal(t, string(self), string(got), "the whole of /proc/1/mountinfo")
	require.True(t, bytes.Contains(got, []byte(filepath.Join(dir, "m79"))), "the last mount made")
}

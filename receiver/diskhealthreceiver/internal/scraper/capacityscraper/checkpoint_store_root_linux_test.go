package capacityscraper

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
)

// TestFSScraperFullStateDirectory (issue 43): the real file_storage extension on a state directory with
// no space left (a tmpfs of 1 MiB, filled): the filesystem source starts, learns the job and sends its
// will_fail event as without storage, with one WARN that its state is not kept. Before, the client's
// open failed the source's start, and with it the collector's.
func TestFSScraperFullStateDirectory(t *testing.T) {
	dhtest.RequireRoot(t, "mounting a tmpfs")
	dir := t.TempDir()
	require.NoError(t, unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	fill, err := os.Create(filepath.Join(dir, "fill"))
	require.NoError(t, err)
	chunk := make([]byte, 64<<10)
	for err == nil {
		_, err = fill.Write(chunk)
	}
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.NoError(t, fill.Close())

	ext := dhtest.FileStorage(t, dir)
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(t.Context())) })
	s := learnsWithoutStorage(t, ext)
	require.NoError(t, s.shutdown(t.Context()))
}

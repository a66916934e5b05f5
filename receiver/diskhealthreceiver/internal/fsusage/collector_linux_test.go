package fsusage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestCollectorCollect(t *testing.T) {
	root := fakeRoot(t, map[string]string{"1": "docker_host_init.txt"})
	f := newFakeFS()
	// Between listing and statfs: one mount forbids, one has vanished, one
	// hangs, one errors.
	f.set(filepath.Join(root, "boot"), unix.EACCES, 0)
	f.set(filepath.Join(root, "home"), unix.ENOENT, 0)
	f.set(filepath.Join(root, "media/usb"), unix.EIO, 0)
	release := f.block(filepath.Join(root, "tank"))
	defer release()
	log := newChangeLog()
	var reloads []TableReload
	c, err := NewCollector(Config{
		RootPath:      root,
		Prober:        ProberConfig{Timeout: 100 * time.Millisecond, Statfs: f.statfs, OnStateChange: log.record},
		OnTableReload: func(r TableReload) { reloads = append(reloads, r) },
	})
	require.NoError(t, err)
	defer c.Close()
	require.Len(t, reloads, 1)

	rs, err := c.Collect(context.Background(), t0)
	require.NoError(t, err, "per-mount failures never fail the scrape")
	got := map[string]Status{}
	for _, r := range rs {
		got[r.Mount.MountPoint] = r.Status
	}
	assert.Equal(t, map[string]Status{
		"/": StatusOK, "/boot": StatusPermission, "/boot/efi": StatusOK, "/home": StatusNotFound,
		"/tank": StatusTimeout, "/tank/data": StatusOK, "/media/usb": StatusIOError,
	}, got)
	assert.Len(t, log.transitions(), 4)

	// Forecasts build up per mount over scrapes: the fake's usage is
	// constant, so there is never one.
	for i := 1; i <= 30; i++ {
		rs, err = c.Collect(context.Background(), t0.Add(time.Duration(i)*5*time.Minute))
		require.NoError(t, err)
	}
	for _, r := range rs {
		assert.False(t, r.Forecast.OK)
		if r.Status == StatusOK {
			assert.Equal(t, 31, r.Forecast.Points, r.Mount.MountPoint)
		}
	}
	assert.Len(t, log.transitions(), 4, "one line per change, not per scrape")
	assert.Equal(t, 3, c.forecaster.Len())
}

func TestCollectorRealStatfs(t *testing.T) {
	// A root_path whose mount table lists mount points that exist and
	// some that do not: the real statfs reports them per mount.
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc/1"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "data"), 0o755))
	table := "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n" +
		"2 1 8:2 / /data rw - ext4 /dev/sda2 rw\n" +
		"3 1 8:3 / /vanished rw - ext4 /dev/sda3 rw\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc/1/mountinfo"), []byte(table), 0o644))
	c, err := NewCollector(Config{RootPath: root})
	require.NoError(t, err)
	defer c.Close()
	rs, err := c.Collect(context.Background(), time.Now())
	require.NoError(t, err)
	require.Len(t, rs, 3)
	assert.Equal(t, []Status{StatusOK, StatusOK, StatusNotFound}, statuses(rs))
	assert.Equal(t, root, rs[0].Mount.Path)
	assert.Positive(t, rs[1].Usage.Limit)
}

func TestCollectorTableError(t *testing.T) {
	root := fakeRoot(t, map[string]string{"1": "btrfs.txt"})
	f := newFakeFS()
	c, err := NewCollector(Config{RootPath: root, Prober: ProberConfig{Statfs: f.statfs}})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, unix.Close(c.table.fd))
	require.NoError(t, os.Remove(filepath.Join(root, "proc/1/mountinfo")))
	rs, err := c.Collect(context.Background(), t0)
	require.Error(t, err)
	assert.Len(t, rs, 9, "the last good table is still measured")
}

func TestNewCollectorErrors(t *testing.T) {
	_, err := NewCollector(Config{Forecast: ForecastConfig{MinPoints: 1}})
	require.Error(t, err)
	_, err = NewCollector(Config{Prober: ProberConfig{Concurrency: -1}})
	require.Error(t, err)
	_, err = NewCollector(Config{RootPath: t.TempDir()})
	assert.ErrorContains(t, err, "mountinfo")
}

//go:build linux

package errcount

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
	return string(out)
}

// TestBtrfsRaid1CorruptionMatchesDeviceStats (root): a btrfs raid1 over two
// loop devices, one data copy overwritten on one device, a scrub; our
// reader's error_stats must equal `btrfs device stats` for both devices,
// and the corrupted device must show corruption errors.
func TestBtrfsRaid1CorruptionMatchesDeviceStats(t *testing.T) {
	testkit.RequireRoot(t, "loop devices, mount")
	if b, err := os.ReadFile("/proc/filesystems"); err != nil || !bytes.Contains(b, []byte("btrfs")) {
		_ = exec.Command("modprobe", "btrfs").Run()
	}
	mkfs := testkit.Tool(t, "mkfs.btrfs", "btrfs-progs")
	btrfs := testkit.Tool(t, "btrfs", "btrfs-progs")

	dir := t.TempDir()
	imgs := []string{filepath.Join(dir, "a.img"), filepath.Join(dir, "b.img")}
	var loops []string
	for _, img := range imgs {
		require.NoError(t, os.WriteFile(img, nil, 0o600))
		require.NoError(t, os.Truncate(img, 300<<20))
		loops = append(loops, strings.TrimSpace(run(t, "losetup", "-f", "--show", img)))
	}
	t.Cleanup(func() {
		for _, l := range loops {
			_ = exec.Command("losetup", "-d", l).Run()
		}
	})
	run(t, mkfs, "-q", "-f", "-d", "raid1", "-m", "raid1", loops[0], loops[1])
	mnt := filepath.Join(dir, "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	run(t, "mount", "-o", "compress=no", loops[0], mnt)
	mounted := true
	t.Cleanup(func() {
		if mounted {
			_ = exec.Command("umount", mnt).Run()
		}
	})

	// 1 MiB of a recognisable pattern, then unmount to corrupt one copy.
	pattern := bytes.Repeat([]byte("diskhealth-btrfs-corruption-test"), 4096/32)
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "data"), bytes.Repeat(pattern, 256), 0o644))
	run(t, "sync")
	run(t, "umount", mnt)
	mounted = false
	run(t, "losetup", "-d", loops[0])
	img, err := os.ReadFile(imgs[0])
	require.NoError(t, err)
	at := bytes.Index(img, pattern)
	require.GreaterOrEqual(t, at, 0, "the data's copy on the first device")
	f, err := os.OpenFile(imgs[0], os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(bytes.Repeat([]byte{0xAA}, 16*4096), int64(at))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	loops[0] = strings.TrimSpace(run(t, "losetup", "-f", "--show", imgs[0]))
	run(t, btrfs, "device", "scan", loops[0], loops[1])
	run(t, "mount", "-o", "compress=no", loops[1], mnt)
	mounted = true
	_ = exec.Command(btrfs, "scrub", "start", "-B", mnt).Run() // exits non-zero when it found errors

	r := NewBtrfsReader(os.DirFS("/sys"), os.DirFS("/dev"), 2*time.Second)
	ours, err := r.Read(context.Background())
	require.NoError(t, err)
	want := deviceStats(t, run(t, btrfs, "device", "stats", mnt))
	require.Len(t, want, 2)
	got := map[string]BtrfsStats{}
	for _, d := range ours {
		if _, ok := want[d.Device]; ok {
			got[d.Device] = d.Stats
		}
	}
	assert.Equal(t, want, got)
	corrupted := filepath.Base(loops[0])
	assert.Positive(t, got[corrupted].Corruption, "scrub counted the overwritten copy on %s", corrupted)
	assert.Zero(t, got[filepath.Base(loops[1])].Corruption)
}

// deviceStats parses `btrfs device stats` ("[/dev/loop0].corruption_errs 14").
func deviceStats(t *testing.T, out string) map[string]BtrfsStats {
	m := map[string]BtrfsStats{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || !strings.HasPrefix(f[0], "[") {
			continue
		}
		dev, key, ok := strings.Cut(strings.TrimPrefix(f[0], "["), "].")
		require.True(t, ok, line)
		v, err := strconv.ParseUint(f[1], 10, 64)
		require.NoError(t, err, line)
		name := filepath.Base(dev)
		s := m[name]
		switch key {
		case "write_io_errs":
			s.Write = v
		case "read_io_errs":
			s.Read = v
		case "flush_io_errs":
			s.Flush = v
		case "corruption_errs":
			s.Corruption = v
		case "generation_errs":
			s.Generation = v
		}
		m[name] = s
	}
	return m
}

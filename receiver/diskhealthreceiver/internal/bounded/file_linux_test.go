package bounded

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestReadFileRegular(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "model")
	require.NoError(t, os.WriteFile(p, []byte("QEMU HARDDISK\n"), 0o644))
	b, err := ReadFile(p, Attr, nil)
	require.NoError(t, err)
	assert.Equal(t, "QEMU HARDDISK\n", string(b))

	// Exactly at the cap is whole; one byte more is refused, naming the file.
	big := strings.Repeat("x", 10000)
	require.NoError(t, os.WriteFile(p, []byte(big), 0o644))
	b, err = ReadFile(p, len(big), nil)
	require.NoError(t, err)
	assert.Len(t, b, len(big))
	_, err = ReadFile(p, len(big)-1, nil)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), p)
}

// A FIFO without a writer would block open and read forever; it is refused at once.
func TestReadFileRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "diskstats")
	require.NoError(t, unix.Mkfifo(p, 0o644))
	done := make(chan error, 1)
	go func() { _, err := ReadFile(p, Diskstats, nil); done <- err }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrNotRegular)
		assert.Contains(t, err.Error(), p)
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO blocked")
	}
	_, err := Open(p)
	require.ErrorIs(t, err, ErrNotRegular)
}

// /dev/zero never ends: refused, not read until memory runs out.
func TestReadFileRefusesDevice(t *testing.T) {
	_, err := ReadFile("/dev/zero", Mountinfo, nil)
	require.ErrorIs(t, err, ErrNotRegular)
}

// The buffer never grows past the cap, however long the file: an endless file costs at most its cap.
func TestReadFDStopsAtTheCap(t *testing.T) {
	fd, err := unix.Open("/dev/zero", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer func() { _ = unix.Close(fd) }()
	b, err := ReadFD(fd, "/dev/zero", 1<<20, nil)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.LessOrEqual(t, cap(b), 1<<20+1)
}

func TestDirFS(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "block", "sda", "device"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "block", "sda", "size"), []byte("2048\n"), 0o644))
	require.NoError(t, os.Symlink("sda", filepath.Join(dir, "block", "link")))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "block", "sda", "device", "model"), 0o644))
	fsys := NewDirFS(dir, Attr)

	b, err := fs.ReadFile(fsys, "block/sda/size")
	require.NoError(t, err)
	assert.Equal(t, "2048\n", string(b))
	_, err = fs.ReadFile(fsys, "block/sda/device/model")
	require.ErrorIs(t, err, ErrNotRegular)
	_, err = fsys.Open("block/sda/device/model")
	require.ErrorIs(t, err, ErrNotRegular)
	_, err = fs.ReadFile(fsys, "../etc/passwd")
	require.ErrorIs(t, err, fs.ErrInvalid)

	ents, err := fs.ReadDir(fsys, "block")
	require.NoError(t, err)
	assert.Len(t, ents, 2)
	target, err := fs.ReadLink(fsys, "block/link")
	require.NoError(t, err)
	assert.Equal(t, "sda", target)
	st, err := fs.Stat(fsys, "block/link")
	require.NoError(t, err)
	assert.True(t, st.IsDir())
	_, err = fs.ReadFile(fsys, "block/missing")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// A file of many seq_file records comes a kernel page at a time: the first read of /proc/kallsyms
// (megabytes of one-line records) is short of the buffer without being its end. ReadRecords reads on
// to the end, as os.ReadFile does, and keeps to its cap; ReadFile stops at the short read.
func TestReadRecordsReadsEveryRecord(t *testing.T) {
	const p = "/proc/kallsyms"
	want, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Greater(t, len(want), 64<<10, "%s spans many pages on every kernel with symbols", p)
	got, err := ReadRecords(p, 64<<20, nil)
	require.NoError(t, err)
	assert.Len(t, got, len(want), "the whole file")
	short, err := ReadFile(p, 64<<20, nil)
	require.NoError(t, err)
	assert.Less(t, len(short), len(want), "ReadFile stops at the first short read")
	_, err = ReadRecords(p, len(want)/2, nil)
	require.ErrorIs(t, err, ErrTooLarge)
}

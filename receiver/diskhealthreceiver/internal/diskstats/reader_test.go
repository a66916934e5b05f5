package diskstats

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFileReaderReadsCurrentContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "diskstats")
	require.NoError(t, os.WriteFile(path, []byte("first\n"), 0o600))
	var r FileReader
	t.Cleanup(func() { require.NoError(t, r.Close()) })

	got, err := r.Read(path)
	require.NoError(t, err)
	assert.Equal(t, "first\n", string(got))

	// Rewritten in place (shorter, then longer): every read sees the
	// whole current content, like procfs regenerating it.
	require.NoError(t, os.WriteFile(path, []byte("2\n"), 0o600))
	got, err = r.Read(path)
	require.NoError(t, err)
	assert.Equal(t, "2\n", string(got))
	require.NoError(t, os.WriteFile(path, []byte("third, longer\n"), 0o600))
	got, err = r.Read(path)
	require.NoError(t, err)
	assert.Equal(t, "third, longer\n", string(got))
}

func TestFileReaderEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "diskstats")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	var r FileReader
	t.Cleanup(func() { _ = r.Close() })
	got, err := r.Read(path)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestFileReaderGrowsForLargeFiles(t *testing.T) {
	data := synthetic(2000) // ~300 KB, several times the first buffer
	require.Greater(t, len(data), 4*initialReadBuffer)
	path := filepath.Join(t.TempDir(), "diskstats")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	var r FileReader
	t.Cleanup(func() { _ = r.Close() })
	got, err := r.Read(path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, got))

	// Exactly one buffer's worth: must not stop early or misreport.
	exact := bytes.Repeat([]byte("x"), len(r.buf))
	require.NoError(t, os.WriteFile(path, exact, 0o600))
	got, err = r.Read(path)
	require.NoError(t, err)
	assert.Len(t, got, len(exact))
}

func TestFileReaderSwitchesPath(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.WriteFile(a, []byte("A"), 0o600))
	require.NoError(t, os.WriteFile(b, []byte("B"), 0o600))
	var r FileReader
	t.Cleanup(func() { _ = r.Close() })
	got, err := r.Read(a)
	require.NoError(t, err)
	assert.Equal(t, "A", string(got))
	got, err = r.Read(b)
	require.NoError(t, err)
	assert.Equal(t, "B", string(got))
}

func TestFileReaderErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	var r FileReader
	t.Cleanup(func() { _ = r.Close() })

	missing := filepath.Join(dir, "proc", "diskstats")
	_, err := r.Read(missing)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, missing)

	// A directory opens fine but cannot be read.
	_, err = r.Read(dir)
	require.Error(t, err)
	require.ErrorContains(t, err, dir)
	assert.Nil(t, r.f, "the failed file is not kept open")

	// And the reader recovers once the path is good.
	require.NoError(t, os.MkdirAll(filepath.Dir(missing), 0o700))
	require.NoError(t, os.WriteFile(missing, []byte("ok"), 0o600))
	got, err := r.Read(missing)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(got))
}

func TestFileReaderSteadyStateAllocatesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "diskstats")
	require.NoError(t, os.WriteFile(path, synthetic(100), 0o600))
	var r FileReader
	t.Cleanup(func() { _ = r.Close() })
	_, err := r.Read(path)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(20, func() {
		_, err = r.Read(path)
	})
	require.NoError(t, err)
	assert.Zero(t, allocs)
}

func TestFileReaderCloseIsIdempotent(t *testing.T) {
	var r FileReader
	require.NoError(t, r.Close())
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, []byte("x"), 0o600))
	_, err := r.Read(path)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
}

// TestFileReaderReopensReplacedFile: a file replaced by rename (a new inode) is reopened at the next read,
// so its values do not freeze (it took up to checkEvery reads: rates 0, 0, 0, 40); a removed file becomes
// an error naming the path at the next read.
func TestFileReaderReopensReplacedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "diskstats")
	require.NoError(t, os.WriteFile(path, []byte("old\n"), 0o600))
	var r FileReader
	t.Cleanup(func() { _ = r.Close() })
	got, err := r.Read(path)
	require.NoError(t, err)
	require.Equal(t, "old\n", string(got))

	tmp := filepath.Join(dir, "diskstats.new")
	require.NoError(t, os.WriteFile(tmp, []byte("new\n"), 0o600))
	require.NoError(t, os.Rename(tmp, path))
	got, err = r.Read(path)
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(got), "the new file is read at the next read")

	require.NoError(t, os.Remove(path))
	_, err = r.Read(path)
	require.Error(t, err, "a removed file is an error at the next read")
	assert.Contains(t, err.Error(), path)
}

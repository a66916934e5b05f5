package boottime

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	v, err := Parse([]byte("cpu  1 2 3\nintr 5\nbtime 1764396000\nprocesses 9\n"))
	require.NoError(t, err)
	assert.Equal(t, int64(1764396000), v)
	_, err = Parse([]byte("cpu 1 2 3\n"))
	require.ErrorIs(t, err, errNoBtime)
	_, err = Parse([]byte("btime soon\n"))
	require.Error(t, err)
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1764396100, 0)
	_, err := Read(dir, now)
	require.ErrorContains(t, err, "boot time")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte("btime 1764396000\n"), 0o644))
	b, err := Read(dir, now)
	require.NoError(t, err)
	assert.Equal(t, time.Unix(1764396000, 0), b)
	_, err = Read(dir, time.Unix(1764395000, 0))
	require.ErrorContains(t, err, "lies in the future")
}

func TestReadThisHost(t *testing.T) {
	b, err := Read("/proc", time.Now())
	require.NoError(t, err)
	assert.True(t, b.Before(time.Now()))
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("btime 1764396000\n"))
	f.Add([]byte("btime -1\nbtime 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Parse(data)
	})
}

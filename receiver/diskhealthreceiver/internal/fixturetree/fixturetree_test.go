package fixturetree

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCopyRestoresNames(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "devices", "pci0000%3A00", "sda"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "devices", "pci0000%3A00", "sda", "dev"), []byte("8:0\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(src, "dev", "block"), 0o755))
	require.NoError(t, os.Symlink("../../devices/pci0000:00/sda", filepath.Join(src, "dev", "block", "8%3A0")))
	dst := Copy(t, src)
	data, err := os.ReadFile(filepath.Join(dst, "dev", "block", "8:0", "dev"))
	require.NoError(t, err)
	assert.Equal(t, "8:0\n", string(data))
}

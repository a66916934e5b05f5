package netfsscraper

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// TestKernelLogBudget: one read takes at most kmsgBudget bytes; the rest comes at the next.
func TestKernelLogBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg")
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	k, err := openKernelLog(path)
	require.NoError(t, err)
	defer func() { require.NoError(t, k.close()) }()
	var b strings.Builder
	n := 0
	for b.Len() < 2*kmsgBudget {
		fmt.Fprintf(&b, "5,%d,1,-;nfs: server s%d not responding, still trying\n", n, n)
		n++
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	got := 0
	for i := 0; ; i++ {
		lines, err := k.read()
		require.NoError(t, err)
		if len(lines) == 0 {
			assert.GreaterOrEqual(t, i, 2, "reads of %d bytes", b.Len())
			break
		}
		got += len(lines)
	}
	// A read of a regular file may end inside a record (/dev/kmsg gives whole records): at most one
	// record per read of kmsgRecord bytes is lost here.
	assert.InDelta(t, n, got, float64(b.Len()/kmsgRecord+1))
	assert.Greater(t, got, n*9/10)
}

// TestKernelLogDevice: /dev/kmsg opens at its end and reads without blocking (EAGAIN ends a read).
func TestKernelLogDevice(t *testing.T) {
	testkit.RequireRoot(t, "reading /dev/kmsg")
	k, err := openKernelLog("/dev/kmsg")
	require.NoError(t, err)
	defer func() { require.NoError(t, k.close()) }()
	for range 2 {
		_, err := k.read()
		require.NoError(t, err)
	}
}

//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package biolat

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Kernels whose block_rq_complete passes an errno get the same names as blk_status_t codes.
func TestErrnoTableMatchesStatusNames(t *testing.T) {
	errnos := errnoTable()
	require.Equal(t, "ioerr", statusName(errnos, uint8(unix.EIO)))
	require.Equal(t, "medium", statusName(errnos, uint8(unix.ENODATA)))
	require.Equal(t, "timeout", statusName(errnos, uint8(unix.ETIMEDOUT)))
	names := map[string]bool{}
	for _, n := range statusTable(kernelVersion{6, 18}) {
		names[n] = true
	}
	for _, n := range statusTable(kernelVersion{6, 1}) {
		names[n] = true
	}
	for code, n := range errnos {
		require.True(t, names[n], "errno %d: %s is no status name", code, n)
	}
}

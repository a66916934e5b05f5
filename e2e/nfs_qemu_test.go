package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
)

func TestNFSClientQEMU(t *testing.T) {
	_, run := bootGuest(t, "nfsguest", 10*time.Minute, nil)
	var b vmproto.NFSBundle
	run.bundle(t, vmproto.MarkerNFS, &b)
	require.True(t, strings.HasPrefix(b.Kernel, "6.1."), "the guest runs Debian's 6.1 kernel, not %s", b.Kernel)
}

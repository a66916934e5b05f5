package filelat

import (
	"testing"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// requireRoot is the test kit's, with what this package's tests need root for.
func requireRoot(t testing.TB) {
	t.Helper()
	testkit.RequireRoot(t, "loads BPF, creates loop devices and mounts")
}

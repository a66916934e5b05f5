package biolat

import (
	"testing"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/testpeer"
)

// requireRoot and requireTool are testpeer's, with what this package's tests need root for.
func requireRoot(t testing.TB) {
	t.Helper()
	testpeer.RequireRoot(t, "loads BPF, creates loop devices")
}

func requireTool(t testing.TB, pkg, tool string) string {
	t.Helper()
	return testpeer.Tool(t, pkg, tool)
}

package biolat

import (
	"testing"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// The committed objects must be what their sources build to (biolat per device, cglat per cgroup).
func TestObjectMatchesSources(t *testing.T) {
	testkit.BPFObjectsMatchSources(t, "biolat", "biolat", "cglat")
}

package filelat

import (
	"testing"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// The committed object must be what its sources (and biolat's shared slots.h) build to.
func TestObjectMatchesSources(t *testing.T) {
	testkit.BPFObjectsMatchSources(t, "filelat", "filelat")
}

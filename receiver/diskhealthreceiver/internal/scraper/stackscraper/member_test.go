package stackscraper

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
)

// TestMemberID: an md member's hw.errors are the member's as a component (semantic conventions' hardware
// model): its physical disk's hw.id where there is one, else one of its own under the array, a logical disk
// only where sysfs says the kernel built it (dm, md, loop).
func TestMemberID(t *testing.T) {
	sys := fstest.MapFS{
		"class/block/dm-3/dm/name":   {Data: []byte("vg-lv\n")},
		"class/block/md1/md/level":   {Data: []byte("raid1\n")},
		"class/block/loop0/loop/ro":  {Data: []byte("0\n")},
		"class/block/sdb1/partition": {Data: []byte("1\n")},
	}
	ids := newDiskIDs("", sys)
	for _, tc := range []struct {
		member, disk string
		wantID       string
		wantType     metadata.AttributeHwType
	}{
		{"sdb1", "0x5000c500a1b2c3d4", "0x5000c500a1b2c3d4", metadata.AttributeHwTypePhysicalDisk},
		{"sdb1", "", "md:u/sdb1", metadata.AttributeHwTypePhysicalDisk},
		{"dm-3", "", "md:u/dm-3", metadata.AttributeHwTypeLogicalDisk},
		{"md1", "", "md:u/md1", metadata.AttributeHwTypeLogicalDisk},
		{"loop0", "", "md:u/loop0", metadata.AttributeHwTypeLogicalDisk},
		{"../dm-3", "", "md:u/../dm-3", metadata.AttributeHwTypePhysicalDisk},
	} {
		id, typ := memberID("md:u", tc.member, tc.disk, tc.disk == "" && ids.virtual(tc.member))
		assert.Equal(t, tc.wantID, id, tc.member)
		assert.Equal(t, tc.wantType, typ, tc.member)
	}
}

// TestLogicalState: a logical disk's hw.status takes only the states the semantic conventions allow a
// logical disk (ok, degraded, failed); a predicted failure is reported as degraded.
func TestLogicalState(t *testing.T) {
	assert.Equal(t, health.Degraded, logicalState(health.PredictedFailure))
	for _, st := range []health.State{health.OK, health.Degraded, health.Failed} {
		assert.Equal(t, st, logicalState(st))
	}
	var allowed []string
	for _, s := range hwStates {
		allowed = append(allowed, s.attr.String())
	}
	assert.Equal(t, []string{"ok", "degraded", "failed"}, allowed)
}

package blockdev

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDiskID(t *testing.T) {
	for name, tc := range map[string]struct {
		id   Identity
		want string
	}{
		"wwn wins":         {Identity{WWN: "naa.5000c500a1b2c3d4", Model: "ST4000DM004", Serial: "ZFN0ABCD", Major: 8}, "naa.5000c500a1b2c3d4"},
		"model and serial": {Identity{Model: "Samsung SSD 980", Serial: "S64DNX0R123", Major: 259}, "Samsung SSD 980_S64DNX0R123"},
		"serial only":      {Identity{Serial: "VIRTIO123", Major: 254}, "_VIRTIO123"},
		"nothing to go by": {Identity{Major: 254, Minor: 16}, "254:16"},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, DiskID(&tc.id))
		})
	}
}

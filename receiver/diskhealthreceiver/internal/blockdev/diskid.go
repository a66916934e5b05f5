package blockdev

import (
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

// DiskID is the stable identity of a whole disk, shared by the I/O and SMART metrics (hw.id) so a backend
// can join them: the WWN when the device has one (globally unique), else model and serial (unique per
// vendor), else major:minor (unique on this host only, and only until the device is re-created). It is
// at most sanitize.Cap(sanitize.HWID) bytes of valid UTF-8.
func DiskID(id *Identity) string {
	switch {
	case id.WWN != "":
		return sanitize.String(sanitize.HWID, id.WWN)
	case id.Serial != "":
		return sanitize.String(sanitize.HWID, id.Model+"_"+id.Serial)
	default:
		return MajorMinor(id.Major, id.Minor)
	}
}

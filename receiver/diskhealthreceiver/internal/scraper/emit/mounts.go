package emit // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

// MountResource is what the sources that report mounts (filesystem, capacity) put on a mount's points:
// its mount point made valid UTF-8 and bounded (Linux mount points are bytes), its filesystem's
// major:minor (the capacity domain) and the resource of that domain.
type MountResource struct {
	MP, Domain string
	Res        pcommon.Resource
}

// Mounts keeps each mount's MountResource, built again only when the mount changes.
type Mounts struct {
	cache Cache[mountKey, MountResource]
	// resource builds the resource of the filesystem of major:minor majorMinor.
	resource func(majorMinor string) pcommon.Resource
}

// mountKey is what a mount's MountResource is built from.
type mountKey struct {
	m            *fsusage.Mount
	src          string
	major, minor uint32
}

// NewMounts returns a cache whose resources resource builds.
func NewMounts(resource func(majorMinor string) pcommon.Resource) *Mounts {
	return &Mounts{resource: resource}
}

// Get returns m's MountResource, from the cache while m is unchanged.
func (c *Mounts) Get(m *fsusage.Mount) MountResource {
	k := mountKey{m, m.MountPoint, m.Major, m.Minor}
	if r, ok := c.cache.Get(k); ok {
		return r
	}
	r := MountResource{MP: sanitize.String(sanitize.MountPoint, m.MountPoint), Domain: m.MajorMinor(), Res: c.resource(m.MajorMinor())}
	c.cache.Put(k, r)
	return r
}

// Sweep forgets the mounts the last scrape did not ask for.
func (c *Mounts) Sweep() { c.cache.Sweep() }

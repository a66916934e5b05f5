package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
)

func (s *smartScraper) appendEvents(res *device.Result, resource pcommon.Resource, v health.Verdict) {
	for _, e := range v.Events {
		s.events.Append(resource, res.Time, s.now(), diskLabel(res), e)
	}
}

// diskLabel names a disk for people: "sda (ST4000DM004-2CV104, serial ZFN0TEST)".
func diskLabel(res *device.Result) string {
	model, serial, _ := identityStrings(res.Disk, res.Snapshot)
	var parts []string
	if model != "" {
		parts = append(parts, model)
	}
	if serial != "" {
		parts = append(parts, "serial "+serial)
	}
	if len(parts) == 0 {
		return res.Disk.Name
	}
	return res.Disk.Name + " (" + strings.Join(parts, ", ") + ")"
}

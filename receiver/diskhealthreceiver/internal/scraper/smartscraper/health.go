package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
)

// healthInput is the part of a disk's snapshot the health rules evaluate: the rules take values, so the
// I/O layer (device) and the policy (health) never import each other.
func healthInput(s *device.Snapshot) (health.Snapshot, bool) {
	var h health.Snapshot
	if a := s.ATA; a != nil && a.Attributes != nil {
		h.ATA = &health.ATA{Status: a.Status, Attributes: a.Attributes, SelfTests: a.SelfTests, Stats: a.Stats}
	}
	if n := s.NVMe; n != nil && n.Log != nil {
		h.NVMe = &health.NVMe{Log: *n.Log, OCP: n.OCP}
		if n.Controller != nil {
			h.NVMe.WarningTemp, h.NVMe.CriticalTemp = n.Controller.WarningTemp, n.Controller.CriticalTemp
		}
	}
	if sc := s.SCSI; sc != nil && (sc.IE != nil || sc.Temperature != nil || sc.ErrorCounters != nil || sc.SelfTests != nil) {
		h.SCSI = &health.SCSI{IE: sc.IE, Temperature: sc.Temperature, ErrorCounters: sc.ErrorCounters, SelfTests: sc.SelfTests}
	}
	return h, h.ATA != nil || h.NVMe != nil || h.SCSI != nil
}

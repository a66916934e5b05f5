package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
)

// identityStrings prefers what the drive itself reports (sysfs truncates ATA models to 16 characters).
func identityStrings(d device.Disk, snap *device.Snapshot) (model, serial, firmware string) {
	model, serial, firmware = d.Identity.Model, d.Identity.Serial, d.Identity.Firmware
	if snap == nil {
		return model, serial, firmware
	}
	switch {
	case snap.ATA != nil && snap.ATA.Identity != nil:
		id := snap.ATA.Identity
		model, serial, firmware = id.Model, id.Serial, id.Firmware
	case snap.NVMe != nil && snap.NVMe.Controller != nil:
		c := snap.NVMe.Controller
		model, serial, firmware = c.Model, c.Serial, c.Firmware
	}
	// What a drive reports is cleaned to printable ASCII of its field's width; the caps still apply.
	return sanitize.String(sanitize.Model, model), sanitize.String(sanitize.Serial, serial), sanitize.String(sanitize.Firmware, firmware)
}

func (s *smartScraper) resource(d device.Disk, snap *device.Snapshot, last *device.Result) pcommon.Resource {
	if snap == nil && last != nil {
		snap = last.Snapshot
	}
	rb := s.rb
	rb.SetHwID(d.ID)
	rb.SetHwName(d.Name)
	rb.SetHwTypePhysicalDisk()
	switch d.Protocol {
	case device.ProtocolATA:
		rb.SetDiskHealthDiskProtocolAta()
	case device.ProtocolNVMe:
		rb.SetDiskHealthDiskProtocolNvme()
	case device.ProtocolSCSI:
		rb.SetDiskHealthDiskProtocolScsi()
	default:
		rb.SetDiskHealthDiskProtocolNone()
	}
	model, serial, firmware := identityStrings(d, snap)
	emit.SetIfNotEmpty(rb.SetHwModel, model)
	emit.SetIfNotEmpty(rb.SetHwSerialNumber, serial)
	emit.SetIfNotEmpty(rb.SetHwFirmwareVersion, firmware)
	emit.SetIfNotEmpty(rb.SetDiskHealthDiskWwn, d.Identity.WWN)
	emit.SetIfNotEmpty(rb.SetHwVendor, vendor(snap))
	rot := d.Identity.Rotational
	if d.Protocol == device.ProtocolNVMe {
		rot = 0
	}
	if snap != nil && snap.ATA != nil && snap.ATA.Identity != nil {
		switch r := snap.ATA.Identity.RotationRate; {
		case r == 1:
			rot = 0
			rb.SetDiskHealthDiskRotationRate(0) // smartctl's rotation_rate for a solid state device
		case r > 1:
			rot = 1
			rb.SetDiskHealthDiskRotationRate(int64(r))
		}
	}
	switch rot {
	case 0:
		rb.SetHwPhysicalDiskTypeSSD()
	case 1:
		rb.SetHwPhysicalDiskTypeHDD()
	}
	return rb.Emit()
}

// vendor is hw.vendor where the drive reports one: a SCSI disk's INQUIRY vendor identification, unless a
// SCSI/ATA translation put "ATA" there. ATA IDENTIFY DEVICE has no vendor field and NVMe reports a PCI
// vendor ID with no table here to name it, so neither has one: a vendor is never guessed from a model.
func vendor(snap *device.Snapshot) string {
	if snap == nil || snap.SCSI == nil || snap.SCSI.Inquiry == nil || snap.SCSI.Inquiry.ATA() {
		return ""
	}
	return snap.SCSI.Inquiry.Vendor // 8 bytes, cleaned to printable ASCII by scsi.ParseInquiry
}

package smartscraper

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/scsi"
)

// TestVendor: hw.vendor only where the drive reports a vendor, a SCSI disk's INQUIRY; never for an ATA disk
// (behind SAT the INQUIRY vendor is "ATA"), an NVMe disk (a PCI vendor ID, no table to name it) or none.
func TestVendor(t *testing.T) {
	scsiSnap := func(v string) *device.Snapshot {
		return &device.Snapshot{SCSI: &device.SCSIData{Inquiry: &scsi.Inquiry{Vendor: v}}}
	}
	assert.Equal(t, "SEAGATE", vendor(scsiSnap("SEAGATE")))
	assert.Empty(t, vendor(scsiSnap("ATA")))
	assert.Empty(t, vendor(&device.Snapshot{ATA: &device.ATAData{}}))
	assert.Empty(t, vendor(&device.Snapshot{NVMe: &device.NVMeData{}}))
	assert.Empty(t, vendor(&device.Snapshot{SCSI: &device.SCSIData{}}))
	assert.Empty(t, vendor(nil))
}

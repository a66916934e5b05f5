package smartscraper

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/scraper/scrapertest"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
)

func rawAttr(id uint8, v uint64) ata.RawAttribute {
	a := ata.RawAttribute{ID: id, Flags: ata.FlagOnline, Value: 100, Worst: 100}
	for i := range a.RawBytes {
		a.RawBytes[i] = byte(v >> (8 * i))
	}
	return a
}

// ataErrors records a page of model and returns its hw.errors by error.type.
func ataErrors(t *testing.T, model string, raw ...ata.RawAttribute) map[string]int64 {
	t.Helper()
	mb := metadata.NewMetricsBuilder(metadata.NewDefaultMetricsBuilderConfig(), scrapertest.NewNopSettings(metadata.Type))
	ts := pcommon.NewTimestampFromTime(time.Unix(1700000000, 0))
	a := &device.ATAData{Attributes: testkit.ParsedDriveDBH(t, ata.ParseDriveDB).LookupDrive(model, "", 0).Decode(&ata.SMARTData{Attributes: raw}, nil)}
	r := &recorder{mb: mb, ts: ts, id: "disk-1", name: "sda"}
	recordATA(r, a, &tempRecorder{recorder: r})
	out := map[string]int64{}
	ms := mb.Emit().ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := range ms.Len() {
		if ms.At(i).Name() != "hw.errors" {
			continue
		}
		dps := ms.At(i).Sum().DataPoints()
		for j := range dps.Len() {
			et, _ := dps.At(j).Attributes().Get("error.type")
			out[et.Str()] = dps.At(j).IntValue()
		}
	}
	return out
}

// hw.errors follows what the drive database names an attribute on the drive,
// not its ID. On an OCZ Vector 150 (Indilinx Barefoot 3) 187 counts
// uncorrectable NAND reads and 199 host writes in GiB, while the interface CRC
// count is 210: a default-table reading would report 5000 CRC errors.
func TestATAErrorsFollowMeanings(t *testing.T) {
	page := []ata.RawAttribute{rawAttr(187, 3), rawAttr(188, 2), rawAttr(199, 5000), rawAttr(210, 4)}
	assert.Equal(t, map[string]int64{"reported_uncorrectable": 3, "command_timeout": 2, "crc": 5000}, ataErrors(t, "", page...),
		"a drive the database does not know: the default names of 187, 188, 199")
	assert.Equal(t, map[string]int64{"command_timeout": 2, "crc": 4}, ataErrors(t, "OCZ-VECTOR150", page...),
		"187 Total_Unc_NAND_Reads and 199 Host_Writes_GiB are no errors of those kinds; 210 SATA_CRC_Error_Count is the CRC count")
}

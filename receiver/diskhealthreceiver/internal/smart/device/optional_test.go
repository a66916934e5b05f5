package device_test

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device/devicetest"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

func readOnce(t *testing.T, r *device.Reader) device.Result {
	t.Helper()
	results, err := r.Collect(t.Context())
	require.NoError(t, err)
	require.Len(t, results, 1)
	require.Equal(t, device.StatusOK, results[0].Status, "%v", results[0].Err)
	return results[0]
}

func logKeys(lids ...uint8) []string {
	out := make([]string, len(lids))
	for i, l := range lids {
		out[i] = devicetest.NVMeLog(l)
	}
	return out
}

// An NVMe 2.0 OCP drive lists its logs; each listed one is read, in order,
// and the list itself only once.
func TestOCPDriveReadsWhatItLists(t *testing.T) {
	tel := make([]byte, nvme.TelemetryHeaderSize)
	tel[0], tel[382], tel[383] = nvme.LogTelemetryController, 1, 3
	m := devicetest.NVMeMachine(t, devicetest.NVMeController(t, 0x1E0F, "OCP DC SSD", 0x00020000, 0, 15), map[string][]byte{
		devicetest.NVMeLog(nvme.LogSupportedLogs):       devicetest.SupportedLogs(0x00, 0x01, 0x02, 0x08, 0xC0, 0xC3),
		devicetest.NVMeLog(nvme.LogError):               devicetest.ErrorLog(16, 12, 11),
		devicetest.NVMeLog(nvme.LogTelemetryController): tel,
		devicetest.NVMeLog(nvme.LogOCPSMART):            devicetest.OCPSMART(nvme.OCPSMARTVersion25, 5_000_000),
		devicetest.NVMeLog(nvme.LogOCPLatency):          devicetest.OCPLatency(),
	})
	r := newReader(t, m, nil)
	res := readOnce(t, r)
	d := m.Disk("nvme0")
	assert.Equal(t, append([]string{devicetest.NVMeIDCtrl, devicetest.NVMeIDNS(1)},
		logKeys(nvme.LogSMART, nvme.LogSupportedLogs, nvme.LogError, nvme.LogTelemetryController, nvme.LogOCPSMART, nvme.LogOCPLatency)...), d.Sent())
	nv := res.Snapshot.NVMe
	require.NotNil(t, nv.OCP)
	assert.Equal(t, uint64(5_000_000), nv.OCP.PhysicalMediaWritten.Lo)
	assert.Equal(t, uint16(93), nv.OCP.CapacitorHealth)
	require.NotNil(t, nv.Latency)
	assert.Equal(t, uint32(77), nv.Latency.Active[0][nvme.LatencyRead])
	require.NotNil(t, nv.Telemetry)
	assert.True(t, nv.Telemetry.Available)
	require.Len(t, nv.Errors, 2)
	assert.Equal(t, uint64(12), nv.Errors[0].Count)
	assert.Nil(t, nv.Amazon)
	for _, o := range nv.Optional {
		assert.Equal(t, device.StatusOK, o.Status, o.Log)
	}
	assert.Len(t, nv.Optional, 4)
	assert.Empty(t, res.Snapshot.Problems)

	d.ResetSent()
	readOnce(t, r)
	assert.Equal(t, logKeys(nvme.LogSMART, nvme.LogError, nvme.LogTelemetryController, nvme.LogOCPSMART, nvme.LogOCPLatency), d.Sent(),
		"the list is read once per disk")
}

// A latency monitor whose thresholds do not rise has no buckets to report: the log's read status is
// an error that says so, and every other log still counts.
func TestOCPLatencyThresholdsOutOfOrder(t *testing.T) {
	page := devicetest.OCPLatency()
	page[7] = page[6] // B = A
	m := devicetest.NVMeMachine(t, devicetest.NVMeController(t, 0x1E0F, "OCP DC SSD", 0x00020000, 0, 15), map[string][]byte{
		devicetest.NVMeLog(nvme.LogSupportedLogs): devicetest.SupportedLogs(0x00, 0x01, 0x02, 0xC0, 0xC3),
		devicetest.NVMeLog(nvme.LogError):         devicetest.ErrorLog(16),
		devicetest.NVMeLog(nvme.LogOCPSMART):      devicetest.OCPSMART(nvme.OCPSMARTVersion20, 5_000_000),
		devicetest.NVMeLog(nvme.LogOCPLatency):    page,
	})
	res := readOnce(t, newReader(t, m, nil))
	assert.Equal(t, device.StatusOK, res.Status)
	nv := res.Snapshot.NVMe
	assert.Nil(t, nv.Latency)
	require.NotNil(t, nv.OCP)
	status := map[string]device.Status{}
	for _, o := range nv.Optional {
		status[o.Log] = o.Status
		if o.Log == device.LogOCPLatency {
			require.ErrorContains(t, o.Err, "do not rise")
		}
	}
	assert.Equal(t, map[string]device.Status{device.LogErrorInformation: device.StatusOK, device.LogOCPSMART: device.StatusOK,
		device.LogOCPLatency: device.StatusError}, status)
}

// A drive gets no command for a log it does not advertise, even when it
// would answer one: vendor logs on a drive without the list, telemetry
// without the LPA bit, Amazon's log on a non-Amazon drive.
func TestUnadvertisedLogsAreNeverAsked(t *testing.T) {
	vendorPages := map[string][]byte{
		devicetest.NVMeLog(nvme.LogSupportedLogs):       devicetest.SupportedLogs(0x00, 0x01, 0x02, 0x08, 0xC0, 0xC3, 0xD0),
		devicetest.NVMeLog(nvme.LogError):               devicetest.ErrorLog(4),
		devicetest.NVMeLog(nvme.LogTelemetryController): make([]byte, 512),
		devicetest.NVMeLog(nvme.LogOCPSMART):            devicetest.OCPSMART(nvme.OCPSMARTVersion20, 1),
		devicetest.NVMeLog(nvme.LogOCPLatency):          devicetest.OCPLatency(),
		devicetest.NVMeLog(nvme.LogAmazon):              make([]byte, nvme.AmazonLogSize),
	}
	for _, tc := range []struct {
		name string
		ctrl []byte
		want []string
	}{
		{"NVMe 1.4, no telemetry bit", devicetest.NVMeController(t, 0x1E0F, "OCP DC SSD", 0x00010400, 0x07, 3),
			logKeys(nvme.LogSMART, nvme.LogError)},
		{"NVMe 1.4 with the telemetry bit", devicetest.NVMeController(t, 0x1E0F, "OCP DC SSD", 0x00010400, 0x0F, 3),
			logKeys(nvme.LogSMART, nvme.LogError, nvme.LogTelemetryController)},
		{"Amazon vendor, other model", devicetest.NVMeController(t, nvme.VendorAmazon, "Amazon EC2 Something Else", 0x00010000, 0, 0),
			logKeys(nvme.LogSMART, nvme.LogError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := devicetest.NVMeMachine(t, tc.ctrl, vendorPages)
			r := newReader(t, m, nil)
			readOnce(t, r)
			m.Disk("nvme0").ResetSent()
			for range 3 {
				readOnce(t, r)
			}
			sent := m.Disk("nvme0").Sent()
			assert.Equal(t, slices.Concat(tc.want, tc.want, tc.want), sent)
		})
	}

	// NVMe 2.0 listing nothing vendor-specific: the list is read, nothing else.
	m := devicetest.NVMeMachine(t, devicetest.NVMeController(t, 0x1E0F, "DC SSD", 0x00020000, 0x08, 3), map[string][]byte{
		devicetest.NVMeLog(nvme.LogSupportedLogs): devicetest.SupportedLogs(0x00, 0x01, 0x02),
		devicetest.NVMeLog(nvme.LogError):         devicetest.ErrorLog(4),
		devicetest.NVMeLog(nvme.LogOCPSMART):      devicetest.OCPSMART(3, 1),
	})
	readOnce(t, newReader(t, m, nil))
	assert.Equal(t, append([]string{devicetest.NVMeIDCtrl, devicetest.NVMeIDNS(1)}, logKeys(nvme.LogSMART, nvme.LogSupportedLogs, nvme.LogError)...),
		m.Disk("nvme0").Sent(), "the list overrides the LPA telemetry bit")
}

// A C0h page without the OCP GUID: the drive is not OCP; neither OCP log
// is asked again, and the read is still ok.
func TestNotOCPAskedOnce(t *testing.T) {
	bad := devicetest.OCPSMART(3, 1)
	bad[500] ^= 0xFF
	m := devicetest.NVMeMachine(t, devicetest.NVMeController(t, 0x1E0F, "DC SSD", 0x00020000, 0, 0), map[string][]byte{
		devicetest.NVMeLog(nvme.LogSupportedLogs): devicetest.SupportedLogs(0x00, 0x01, 0x02, 0xC0, 0xC3),
		devicetest.NVMeLog(nvme.LogError):         devicetest.ErrorLog(1),
		devicetest.NVMeLog(nvme.LogOCPSMART):      bad,
		devicetest.NVMeLog(nvme.LogOCPLatency):    devicetest.OCPLatency(),
	})
	r := newReader(t, m, nil)
	res := readOnce(t, r)
	nv := res.Snapshot.NVMe
	assert.Nil(t, nv.OCP)
	assert.Nil(t, nv.Latency, "C3h never asked without a proven C0h")
	require.Len(t, nv.Optional, 2)
	assert.Equal(t, device.LogRead{Log: device.LogOCPSMART, Status: device.StatusUnsupported, Err: nv.Optional[1].Err}, nv.Optional[1])
	require.ErrorContains(t, nv.Optional[1].Err, "not the OCP layout")
	m.Disk("nvme0").ResetSent()
	res = readOnce(t, r)
	assert.Equal(t, logKeys(nvme.LogSMART, nvme.LogError), m.Disk("nvme0").Sent())
	assert.Equal(t, device.StatusUnsupported, res.Snapshot.NVMe.Optional[1].Status, "the reason stays on every read")
}

func TestAmazonEBSRead(t *testing.T) {
	page := devicetest.AmazonEBSPage(nvme.AmazonStats{ReadOps: 4242, VolumeIOPSExceeded: 1500 * time.Microsecond,
		ReadLatency: []nvme.LatencyBin{{Lower: 0, Upper: 1, Count: 9}}})
	m := devicetest.NVMeMachine(t, devicetest.NVMeController(t, nvme.VendorAmazon, nvme.AmazonModelEBS, 0x00010000, 0, 255), map[string][]byte{
		devicetest.NVMeLog(nvme.LogError):  devicetest.ErrorLog(256),
		devicetest.NVMeLog(nvme.LogAmazon): page,
	})
	// A configured clock stamps the read: the rates of two reads are taken over its interval.
	at := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	res := readOnce(t, newReader(t, m, func(c *device.Config) { c.Clock = func() time.Time { return at } }))
	assert.Equal(t, at, res.Time)
	a := res.Snapshot.NVMe.Amazon
	require.NotNil(t, a)
	assert.Equal(t, nvme.AmazonEBS, a.Kind)
	assert.Equal(t, uint64(4242), a.ReadOps)
	assert.Equal(t, []nvme.LatencyBin{{Lower: 0, Upper: 1, Count: 9}}, a.ReadLatency)
	assert.Equal(t, logKeys(nvme.LogSMART, nvme.LogError, nvme.LogAmazon), m.Disk("nvme0").Sent()[2:])

	// The instance store layout on a controller whose model says EBS is refused.
	binary.LittleEndian.PutUint32(page, nvme.AmazonMagicInstanceStore)
	res = readOnce(t, newReader(t, m, nil))
	assert.Nil(t, res.Snapshot.NVMe.Amazon)
	assert.Equal(t, device.StatusError, res.Snapshot.NVMe.Optional[1].Status)
}

// A controller that refuses the read of its whole (16-entry) error log
// falls back to a size it takes; one that refuses every size keeps every
// other value, with the reason, and is not asked again.
func TestErrorLogRefusedSizes(t *testing.T) {
	ctrl := devicetest.NVMeController(t, 0x1E0F, "DC SSD", 0x00010400, 0, 15)
	m := devicetest.NVMeMachine(t, ctrl, map[string][]byte{devicetest.NVMeLog(nvme.LogError): devicetest.ErrorLog(16, 7)})
	m.Disk("nvme0").RefuseLen = map[string][]int{devicetest.NVMeLog(nvme.LogError): {16 * nvme.ErrorEntrySize}}
	r := newReader(t, m, nil)
	res := readOnce(t, r)
	require.Len(t, res.Snapshot.NVMe.Errors, 1, "the one entry read")
	assert.Equal(t, uint64(7), res.Snapshot.NVMe.Errors[0].Count)
	assert.Equal(t, logKeys(nvme.LogSMART, nvme.LogError, nvme.LogError), m.Disk("nvme0").Sent()[2:], "16 refused, then 1")
	m.Disk("nvme0").ResetSent()
	readOnce(t, r)
	assert.Equal(t, logKeys(nvme.LogSMART, nvme.LogError), m.Disk("nvme0").Sent(), "the size that worked is kept")

	m = devicetest.NVMeMachine(t, ctrl, map[string][]byte{devicetest.NVMeLog(nvme.LogError): devicetest.ErrorLog(16, 7)})
	m.Disk("nvme0").RefuseLen = map[string][]int{devicetest.NVMeLog(nvme.LogError): {16 * nvme.ErrorEntrySize, nvme.ErrorEntrySize}}
	r = newReader(t, m, nil)
	res = readOnce(t, r)
	nv := res.Snapshot.NVMe
	require.NotNil(t, nv.Log, "the SMART log is still there")
	require.NotNil(t, nv.Controller)
	assert.Nil(t, nv.Errors)
	require.Len(t, nv.Optional, 1)
	assert.Equal(t, device.StatusUnsupported, nv.Optional[0].Status)
	require.ErrorContains(t, nv.Optional[0].Err, "every read size refused")
	require.Len(t, res.Snapshot.Problems, 1)
	m.Disk("nvme0").ResetSent()
	res = readOnce(t, r)
	assert.Equal(t, logKeys(nvme.LogSMART), m.Disk("nvme0").Sent(), "not asked again")
	require.Len(t, res.Snapshot.NVMe.Optional, 1, "the reason stays on every read")
	assert.Equal(t, device.StatusUnsupported, res.Snapshot.NVMe.Optional[0].Status)
}

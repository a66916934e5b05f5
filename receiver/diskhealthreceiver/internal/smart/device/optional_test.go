package device_test

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device/devicetest"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// The GUIDs as the OCP specification's pages carry them, written out here
// rather than taken from the decoder.
var (
	ocpC0GUID = []byte{0xC5, 0xAF, 0x10, 0x28, 0xEA, 0xBF, 0xF2, 0xA4, 0x9C, 0x4F, 0x6F, 0x7C, 0xC9, 0x14, 0xD5, 0xAF}
	ocpC3GUID = []byte{0x92, 0x7A, 0xC0, 0x8C, 0xD0, 0x84, 0x6C, 0x9C, 0x70, 0x43, 0xE6, 0xD4, 0x58, 0x5E, 0xD4, 0x85}
)

// controller is QEMU's Identify Controller with the fields that decide the
// plan replaced.
func controller(t *testing.T, vid uint16, model string, version uint32, lpa, elpe uint8) []byte {
	b := slices.Clone(fixture.Read(t, "qemu", "k6.12", "nvme0.identify_ctrl.bin"))
	binary.LittleEndian.PutUint16(b[0:], vid)
	copy(b[24:64], append([]byte(model), make([]byte, 40)...)[:40])
	for i := 24 + len(model); i < 64; i++ {
		b[i] = ' '
	}
	binary.LittleEndian.PutUint32(b[80:], version)
	b[261], b[262] = lpa, elpe
	return b
}

func supportedLogs(lids ...uint8) []byte {
	b := make([]byte, nvme.SupportedLogsSize)
	for _, l := range lids {
		b[4*int(l)] = 1
	}
	return b
}

func ocpC0(version uint16, mediaWritten uint64) []byte {
	b := make([]byte, nvme.OCPLogSize)
	binary.LittleEndian.PutUint64(b[0:], mediaWritten)
	binary.LittleEndian.PutUint16(b[128:], 93) // capacitor health
	binary.LittleEndian.PutUint16(b[494:], version)
	copy(b[496:], ocpC0GUID)
	return b
}

func ocpC3() []byte {
	b := make([]byte, nvme.OCPLogSize)
	b[0] = 1
	binary.LittleEndian.PutUint32(b[32+12:], 77) // bucket 0 reads
	binary.LittleEndian.PutUint16(b[494:], 1)
	copy(b[496:], ocpC3GUID)
	return b
}

func errorLog(capacity int, counts ...uint64) []byte {
	b := make([]byte, capacity*nvme.ErrorEntrySize)
	for i, n := range counts {
		binary.LittleEndian.PutUint64(b[64*i:], n)
		binary.LittleEndian.PutUint16(b[64*i+12:], 0x0002<<1) // invalid field
		binary.LittleEndian.PutUint64(b[64*i+16:], 4096+n)
	}
	return b
}

// nvmeMachine is one NVMe controller with the given Identify Controller
// and pages, plus QEMU's namespace and SMART log.
func nvmeMachine(t *testing.T, ctrl []byte, pages map[string][]byte) *devicetest.Machine {
	nread := func(kind string) []byte { return fixture.Read(t, "qemu", "k6.12", "nvme0."+kind+".bin") }
	all := map[string][]byte{
		devicetest.NVMeIDCtrl:             ctrl,
		devicetest.NVMeIDNS(1):            nread("identify_ns1"),
		devicetest.NVMeLog(nvme.LogSMART): nread("log02_smart_log"),
	}
	for k, v := range pages {
		all[k] = v
	}
	ident := blockdev.Identity{Name: "nvme0n1", Class: blockdev.ClassDisk, Model: "test", Serial: "s1"}
	m := &devicetest.Machine{}
	m.Add(&devicetest.Disk{
		Info: device.Disk{Name: "nvme0", Protocol: device.ProtocolNVMe, Node: "/dev/nvme0", Identity: ident, ID: blockdev.DiskID(&ident),
			Namespaces: []device.Namespace{{Name: "nvme0n1", NSID: 1}}},
		Pages: all,
	})
	return m
}

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
	m := nvmeMachine(t, controller(t, 0x1E0F, "OCP DC SSD", 0x00020000, 0, 15), map[string][]byte{
		devicetest.NVMeLog(nvme.LogSupportedLogs):       supportedLogs(0x00, 0x01, 0x02, 0x08, 0xC0, 0xC3),
		devicetest.NVMeLog(nvme.LogError):               errorLog(16, 12, 11),
		devicetest.NVMeLog(nvme.LogTelemetryController): tel,
		devicetest.NVMeLog(nvme.LogOCPSMART):            ocpC0(nvme.OCPSMARTVersion25, 5_000_000),
		devicetest.NVMeLog(nvme.LogOCPLatency):          ocpC3(),
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

// A drive gets no command for a log it does not advertise, even when it
// would answer one: vendor logs on a drive without the list, telemetry
// without the LPA bit, Amazon's log on a non-Amazon drive.
func TestUnadvertisedLogsAreNeverAsked(t *testing.T) {
	vendorPages := map[string][]byte{
		devicetest.NVMeLog(nvme.LogSupportedLogs):       supportedLogs(0x00, 0x01, 0x02, 0x08, 0xC0, 0xC3, 0xD0),
		devicetest.NVMeLog(nvme.LogError):               errorLog(4),
		devicetest.NVMeLog(nvme.LogTelemetryController): make([]byte, 512),
		devicetest.NVMeLog(nvme.LogOCPSMART):            ocpC0(nvme.OCPSMARTVersion20, 1),
		devicetest.NVMeLog(nvme.LogOCPLatency):          ocpC3(),
		devicetest.NVMeLog(nvme.LogAmazon):              make([]byte, nvme.AmazonLogSize),
	}
	for _, tc := range []struct {
		name string
		ctrl []byte
		want []string
	}{
		{"NVMe 1.4, no telemetry bit", controller(t, 0x1E0F, "OCP DC SSD", 0x00010400, 0x07, 3),
			logKeys(nvme.LogSMART, nvme.LogError)},
		{"NVMe 1.4 with the telemetry bit", controller(t, 0x1E0F, "OCP DC SSD", 0x00010400, 0x0F, 3),
			logKeys(nvme.LogSMART, nvme.LogError, nvme.LogTelemetryController)},
		{"Amazon vendor, other model", controller(t, nvme.VendorAmazon, "Amazon EC2 Something Else", 0x00010000, 0, 0),
			logKeys(nvme.LogSMART, nvme.LogError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := nvmeMachine(t, tc.ctrl, vendorPages)
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
	m := nvmeMachine(t, controller(t, 0x1E0F, "DC SSD", 0x00020000, 0x08, 3), map[string][]byte{
		devicetest.NVMeLog(nvme.LogSupportedLogs): supportedLogs(0x00, 0x01, 0x02),
		devicetest.NVMeLog(nvme.LogError):         errorLog(4),
		devicetest.NVMeLog(nvme.LogOCPSMART):      ocpC0(3, 1),
	})
	readOnce(t, newReader(t, m, nil))
	assert.Equal(t, append([]string{devicetest.NVMeIDCtrl, devicetest.NVMeIDNS(1)}, logKeys(nvme.LogSMART, nvme.LogSupportedLogs, nvme.LogError)...),
		m.Disk("nvme0").Sent(), "the list overrides the LPA telemetry bit")
}

// A C0h page without the OCP GUID: the drive is not OCP; neither OCP log
// is asked again, and the read is still ok.
func TestNotOCPAskedOnce(t *testing.T) {
	bad := ocpC0(3, 1)
	bad[500] ^= 0xFF
	m := nvmeMachine(t, controller(t, 0x1E0F, "DC SSD", 0x00020000, 0, 0), map[string][]byte{
		devicetest.NVMeLog(nvme.LogSupportedLogs): supportedLogs(0x00, 0x01, 0x02, 0xC0, 0xC3),
		devicetest.NVMeLog(nvme.LogError):         errorLog(1),
		devicetest.NVMeLog(nvme.LogOCPSMART):      bad,
		devicetest.NVMeLog(nvme.LogOCPLatency):    ocpC3(),
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
	readOnce(t, r)
	assert.Equal(t, logKeys(nvme.LogSMART, nvme.LogError), m.Disk("nvme0").Sent())
}

func TestAmazonEBSRead(t *testing.T) {
	page := make([]byte, nvme.AmazonLogSize)
	binary.LittleEndian.PutUint32(page, nvme.AmazonMagicEBS)
	binary.LittleEndian.PutUint64(page[8:], 4242)   // read ops
	binary.LittleEndian.PutUint64(page[56:], 1500)  // volume IOPS exceeded, µs
	binary.LittleEndian.PutUint64(page[512:], 1)    // one read bin
	binary.LittleEndian.PutUint64(page[512+16:], 1) // [0, 1) µs
	binary.LittleEndian.PutUint32(page[512+24:], 9)
	m := nvmeMachine(t, controller(t, nvme.VendorAmazon, nvme.AmazonModelEBS, 0x00010000, 0, 255), map[string][]byte{
		devicetest.NVMeLog(nvme.LogError):  errorLog(256),
		devicetest.NVMeLog(nvme.LogAmazon): page,
	})
	res := readOnce(t, newReader(t, m, nil))
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
	ctrl := controller(t, 0x1E0F, "DC SSD", 0x00010400, 0, 15)
	m := nvmeMachine(t, ctrl, map[string][]byte{devicetest.NVMeLog(nvme.LogError): errorLog(16, 7)})
	m.Disk("nvme0").RefuseLen = map[string][]int{devicetest.NVMeLog(nvme.LogError): {16 * nvme.ErrorEntrySize}}
	r := newReader(t, m, nil)
	res := readOnce(t, r)
	require.Len(t, res.Snapshot.NVMe.Errors, 1, "the one entry read")
	assert.Equal(t, uint64(7), res.Snapshot.NVMe.Errors[0].Count)
	assert.Equal(t, logKeys(nvme.LogSMART, nvme.LogError, nvme.LogError), m.Disk("nvme0").Sent()[2:], "16 refused, then 1")
	m.Disk("nvme0").ResetSent()
	readOnce(t, r)
	assert.Equal(t, logKeys(nvme.LogSMART, nvme.LogError), m.Disk("nvme0").Sent(), "the size that worked is kept")

	m = nvmeMachine(t, ctrl, map[string][]byte{devicetest.NVMeLog(nvme.LogError): errorLog(16, 7)})
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
	readOnce(t, r)
	assert.Equal(t, logKeys(nvme.LogSMART), m.Disk("nvme0").Sent(), "not asked again")
}

package qemu

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// TestSMARTAgainstSmartctlQEMU boots a Debian kernel under QEMU with an emulated NVMe controller (two
// namespaces of different block sizes, each compared with `nvme id-ns`), an IDE
// disk, an AHCI disk posing as a Seagate ST4000DM004 (drive database entry, WWN, 7200 rpm), a
// virtio-scsi disk and a scsi_debug disk, runs the disk_health receiver inside (real ioctls through
// the real kernel), and compares every value it reports with `smartctl -x --json` (7.3) and
// `nvme smart-log -o json` run on the same disks in the same boot. Midway the host raises the NVMe
// controller's critical warning to 4 (reliability degraded) over QMP: the receiver must report
// hw.status failed with the reason and send one state-change event. Then a fresh receiver reads the
// disks with no drivedb.h reachable: smart.go's built-in table must name every ATA attribute as
// smartctl does, so the health rules find their inputs by name on a host without smartmontools. Then
// the receiver runs as an
// unprivileged user: each disk must say permission_denied (SATA stays ATA), with the unprivileged
// fallbacks (NVMe hwmon temperature, SCSI log pages) still reported. Last, a fresh receiver reads every
// disk a thousand times (smart.interval 100 ms): every command stays on the read-only list (no vendor
// or unadvertised log), the NVMe error log does not grow, and every export has the first one's metrics.
func TestSMARTAgainstSmartctlQEMU(t *testing.T) {
	qmpErr := make(chan error, 1)
	asked := false
	_, run := bootGuest(t, "smartguest", 30*time.Minute, func(run *vmRun, line string) {
		if strings.TrimSpace(line) == vmproto.MarkerQMPReady && !asked {
			asked = true
			// Not inline: the poll loop times the window markers that follow.
			go func() {
				qmpErr <- qmp(run.qmp, map[string]any{"execute": "qom-set", "arguments": map[string]any{
					"path": "/machine/peripheral/nvme0", "property": "smart_critical_warning", "value": 4}})
			}()
		}
	}, smartNamespace2)
	log := run.log
	if p := os.Getenv("DISKHEALTH_VM_LOG"); p != "" {
		// For a person to read: the guest's whole output, tools' JSON and exports included.
		require.NoError(t, os.WriteFile(p, []byte(log), 0o644))
	}
	if p := os.Getenv("DISKHEALTH_VM_TRACE"); p != "" {
		// QEMU's trace of every command the emulated disks received.
		data, err := os.ReadFile(run.trace)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	if !asked {
		t.Fatalf("the guest never asked for the critical warning.\n%s", tail(log, 4000))
	}
	select {
	case err := <-qmpErr:
		require.NoError(t, err, "QMP qom-set smart_critical_warning")
	case <-time.After(20 * time.Second):
		t.Fatal("QMP qom-set smart_critical_warning did not answer")
	}

	var b vmproto.SMARTBundle
	run.bundle(t, vmproto.MarkerSMART, &b)
	t.Logf("guest: kernel %s, timing %v", b.Kernel, b.Timing)
	require.Contains(t, log, vmproto.MarkerExit+"0")

	p1 := smartDisks(t, b.Phase1.SMART)
	require.Len(t, p1, 5, "nvme0 and four SCSI-layer disks: %v", slices.Sorted(maps.Keys(p1)))
	tools := b.Phase1.Tools
	var sawATA, sawSeagate, sawNVMe, sawSCSIDebug, sawSCSIHD int
	for name, d := range p1 {
		proto := d.res["disk_health.disk.protocol"]
		switch proto {
		case "ata":
			sc := smartctlJSON(t, tools, "smartctl -x /dev/"+name)
			checkATA(t, d, sc)
			sawATA++
			if sc.ModelName == "ST4000DM004-2CV104" {
				sawSeagate++
			}
		case "nvme":
			checkNVMe(t, d, tools, b.SysNSID)
			sawNVMe++
		case "scsi":
			sc := smartctlJSON(t, tools, "smartctl -a /dev/"+name)
			if sc.ScsiProduct == "scsi_debug" {
				checkSCSIDebug(t, d, sc)
				sawSCSIDebug++
			} else {
				checkSCSIUnsupported(t, d, sc)
				sawSCSIHD++
			}
		default:
			t.Errorf("%s: protocol %v", name, proto)
		}
		checkReadTime(t, d, tools)
		d.requireAllChecked(t)
	}
	assert.Equal(t, []int{2, 1, 1, 1, 1}, []int{sawATA, sawSeagate, sawNVMe, sawSCSIDebug, sawSCSIHD},
		"two ATA disks (one the Seagate), one NVMe, one scsi_debug, one QEMU scsi-hd")

	checkIOJoin(t, p1, b.Phase1.IO)
	checkCriticalWarning(t, &b)
	checkUnprivileged(t, &b)
	checkBuiltInNames(t, &b)
	checkMany(t, &b, p1)
	t.Run("ReadOnlyAtTheDisk", func(t *testing.T) { checkDiskCommands(t, run) })
}

// smartPoint is one data point of a disk.
type smartPoint struct {
	value float64
	attrs map[string]string
	stale bool
}

// smartDisk is one disk's resource: its attributes and points by metric. Every metric a comparison
// reads is marked, so the test can tell whether any reported value went unchecked.
type smartDisk struct {
	name    string
	res     map[string]any
	points  map[string][]smartPoint
	checked map[string]bool
}

func smartDisks(t *testing.T, raw json.RawMessage) map[string]*smartDisk {
	t.Helper()
	md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(raw)
	require.NoError(t, err)
	out := map[string]*smartDisk{}
	pdatawalk.ForEachMetric(md, func(r pcommon.Resource, m pmetric.Metric) {
		res := r.Attributes().AsRaw()
		name, _ := res["hw.name"].(string)
		if name == "" {
			return
		}
		d := out[name]
		if d == nil {
			d = &smartDisk{name: name, res: res, points: map[string][]smartPoint{}, checked: map[string]bool{}}
			out[name] = d
		}
		dps := pdatawalk.NumberPoints(m)
		for l := range dps.Len() {
			dp := dps.At(l)
			p := smartPoint{attrs: map[string]string{}, stale: dp.Flags().NoRecordedValue()}
			if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
				p.value = float64(dp.IntValue())
			} else {
				p.value = dp.DoubleValue()
			}
			for k, v := range dp.Attributes().AsRaw() {
				p.attrs[k] = fmt.Sprint(v)
			}
			d.points[m.Name()] = append(d.points[m.Name()], p)
		}
	})
	return out
}

// get returns the value of a metric's point whose attributes include kv (key, value, ...).
func (d *smartDisk) get(metric string, kv ...string) (float64, bool) {
	d.checked[metric] = true
	for _, p := range d.points[metric] {
		match := true
		for i := 0; i+1 < len(kv); i += 2 {
			if p.attrs[kv[i]] != kv[i+1] {
				match = false
			}
		}
		if match {
			return p.value, true
		}
	}
	return 0, false
}

// expect asserts a metric's value.
func (d *smartDisk) expect(t *testing.T, want float64, metric string, kv ...string) {
	t.Helper()
	got, ok := d.get(metric, kv...)
	if assert.True(t, ok, "%s: no %s %v", d.name, metric, kv) {
		assert.InDelta(t, want, got, 1e-9, "%s: %s %v", d.name, metric, kv)
	}
}

// state returns the attribute value whose point is 1 in a state-set metric.
func (d *smartDisk) state(metric, attr string) string {
	d.checked[metric] = true
	for _, p := range d.points[metric] {
		if p.value == 1 {
			return p.attrs[attr]
		}
	}
	return ""
}

func (d *smartDisk) requireAllChecked(t *testing.T) {
	t.Helper()
	for m := range d.points {
		assert.True(t, d.checked[m], "%s: metric %s is reported but not compared with the tools", d.name, m)
	}
}

// smartctlOut is the part of smartctl's JSON the comparison reads.
type smartctlOut struct {
	LocalTime struct {
		TimeT int64 `json:"time_t"`
	} `json:"local_time"`
	ModelName       string `json:"model_name"`
	SerialNumber    string `json:"serial_number"`
	FirmwareVersion string `json:"firmware_version"`
	ScsiProduct     string `json:"scsi_product"`
	ScsiRevision    string `json:"scsi_revision"`
	WWN             *struct {
		NAA, OUI, ID uint64
	} `json:"wwn"`
	UserCapacity struct {
		Bytes uint64 `json:"bytes"`
	} `json:"user_capacity"`
	RotationRate *int64 `json:"rotation_rate"`
	SmartSupport struct {
		Available bool `json:"available"`
	} `json:"smart_support"`
	SmartStatus *struct {
		Passed bool `json:"passed"`
	} `json:"smart_status"`
	Temperature struct {
		Current   *int64 `json:"current"`
		DriveTrip *int64 `json:"drive_trip"`
	} `json:"temperature"`
	ScsiTemperature struct {
		DriveTrip *int64 `json:"drive_trip"`
	} `json:"scsi_temperature"`
	PowerOnTime struct {
		Hours   int64 `json:"hours"`
		Minutes int64 `json:"minutes"`
	} `json:"power_on_time"`
	PowerCycleCount *int64 `json:"power_cycle_count"`
	Attributes      struct {
		Table []struct {
			ID     int64  `json:"id"`
			Name   string `json:"name"`
			Value  int64  `json:"value"`
			Worst  int64  `json:"worst"`
			Thresh int64  `json:"thresh"`
			Raw    struct {
				Value  int64  `json:"value"`
				String string `json:"string"`
			} `json:"raw"`
		} `json:"table"`
	} `json:"ata_smart_attributes"`
	ErrorLog struct {
		Summary *struct {
			Count int64 `json:"count"`
		} `json:"summary"`
		Extended *struct {
			Count int64 `json:"count"`
		} `json:"extended"`
	} `json:"ata_smart_error_log"`
	NVMeLog struct {
		CriticalWarning int64 `json:"critical_warning"`
	} `json:"nvme_smart_health_information_log"`
}

func smartctlJSON(t *testing.T, tools map[string]json.RawMessage, key string) smartctlOut {
	t.Helper()
	raw, ok := tools[key]
	require.True(t, ok, "no %q among %v", key, slices.Sorted(maps.Keys(tools)))
	var sc smartctlOut
	require.NoError(t, json.Unmarshal(raw, &sc), key)
	return sc
}

// leadingInt is the first number of smartctl's raw.string: the decoded value ("31 (Min/Max 31/31)",
// "1h+00m+00.000s").
var leadingInt = regexp.MustCompile(`^-?\d+`)

func checkATA(t *testing.T, d *smartDisk, sc smartctlOut) {
	t.Helper()
	assert.Equal(t, "ok", d.state("disk_health.physical_disk.smart.read.status", "smart.read.status"), d.name)
	assert.Equal(t, sc.ModelName, d.res["hw.model"], d.name)
	assert.Equal(t, sc.SerialNumber, d.res["hw.serial_number"], d.name)
	assert.Equal(t, sc.FirmwareVersion, d.res["hw.firmware_version"], d.name)
	if sc.WWN != nil {
		assert.Equal(t, fmt.Sprintf("naa.%x%06x%09x", sc.WWN.NAA, sc.WWN.OUI, sc.WWN.ID), d.res["disk_health.disk.wwn"], d.name)
		assert.Equal(t, d.res["disk_health.disk.wwn"], d.res["hw.id"], "%s: the WWN is the stable id", d.name)
	}
	if sc.RotationRate != nil && *sc.RotationRate > 0 {
		assert.EqualValues(t, *sc.RotationRate, d.res["disk_health.disk.rotation_rate"], d.name)
		assert.Equal(t, "HDD", d.res["hw.physical_disk.type"], d.name)
	}
	d.expect(t, float64(sc.UserCapacity.Bytes), "hw.physical_disk.size")
	require.NotEmpty(t, sc.Attributes.Table, d.name)
	for _, a := range sc.Attributes.Table {
		kv := []string{"disk_health.smart.attribute.id", strconv.FormatInt(a.ID, 10), "hw.physical_disk.smart_attribute", a.Name}
		d.expect(t, float64(a.Value), "disk_health.physical_disk.smart.normalized", kv...)
		d.expect(t, float64(a.Worst), "disk_health.physical_disk.smart.worst", kv...)
		d.expect(t, float64(a.Thresh), "disk_health.physical_disk.smart.threshold", kv...)
		decoded, err := strconv.ParseInt(leadingInt.FindString(a.Raw.String), 10, 64)
		require.NoError(t, err, "%s: attribute %d raw %q", d.name, a.ID, a.Raw.String)
		d.expect(t, float64(decoded), "hw.physical_disk.smart", kv...)
	}
	assert.Len(t, d.points["hw.physical_disk.smart"], len(sc.Attributes.Table), "%s: one point per attribute", d.name)
	require.NotNil(t, sc.Temperature.Current, d.name)
	d.expect(t, float64(*sc.Temperature.Current), "hw.temperature")
	d.expect(t, float64(sc.PowerOnTime.Hours*3600+sc.PowerOnTime.Minutes*60), "disk_health.physical_disk.power_on_time")
	require.NotNil(t, sc.PowerCycleCount, d.name)
	d.expect(t, float64(*sc.PowerCycleCount), "disk_health.physical_disk.power_cycles")
	errCount := sc.ErrorLog.Summary
	if sc.ErrorLog.Extended != nil {
		errCount = sc.ErrorLog.Extended
	}
	require.NotNil(t, errCount, "%s: smartctl shows an error log", d.name)
	d.expect(t, float64(errCount.Count), "hw.errors", "error.type", "error_log_entry")
	// QEMU has none of 187/188/199; if it had, their decoded raw values are hw.errors too.
	assert.Len(t, d.points["hw.errors"], 1, d.name)
	require.NotNil(t, sc.SmartStatus, d.name)
	assert.Equal(t, sc.SmartStatus.Passed, d.state("hw.status", "hw.state") == "ok", "%s: smartctl's verdict", d.name)
}

// nvmeCLI reads nvme-cli's JSON numbers (128-bit counters come as strings).
func nvmeCLI(t *testing.T, tools map[string]json.RawMessage, key string) map[string]float64 {
	t.Helper()
	raw, ok := tools[key]
	require.True(t, ok, "no %q", key)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	out := map[string]float64{}
	for k, v := range m {
		switch v := v.(type) {
		case float64:
			out[k] = v
		case string:
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				out[k] = f
			}
		}
	}
	return out
}

var nvmeBits = []string{"spare_below_threshold", "temperature", "reliability_degraded", "read_only", "volatile_backup_failed", "pmr_unreliable"}

func checkNVMe(t *testing.T, d *smartDisk, tools map[string]json.RawMessage, nsids map[string]string) {
	t.Helper()
	assert.Equal(t, "ok", d.state("disk_health.physical_disk.smart.read.status", "smart.read.status"))
	// QEMU's controller (NVMe 1.4, LPA 07h, no OCP or Amazon identity) advertises one optional log,
	// the error log, which it answers: no other log has a status, so none was asked for.
	read := map[string]string{}
	d.checked["disk_health.physical_disk.smart.log.read.status"] = true
	for _, p := range d.points["disk_health.physical_disk.smart.log.read.status"] {
		if p.value == 1 {
			read[p.attrs["nvme.log"]] = p.attrs["smart.read.status"]
		}
	}
	assert.Equal(t, map[string]string{"error_information": "ok"}, read, "optional NVMe logs read")
	sc := smartctlJSON(t, tools, "smartctl -x /dev/nvme0n1")
	assert.Equal(t, sc.ModelName, d.res["hw.model"])
	assert.Equal(t, sc.SerialNumber, d.res["hw.serial_number"])
	assert.Equal(t, sc.FirmwareVersion, d.res["hw.firmware_version"])
	assert.Equal(t, "SSD", d.res["hw.physical_disk.type"])
	sizes := checkNamespaces(t, d, tools, nsids)
	assert.EqualValues(t, sc.UserCapacity.Bytes, sizes["nvme0n1"], "smartctl's capacity is namespace 1's")
	ctrl := nvmeCLI(t, tools, "nvme id-ctrl /dev/nvme0")
	// The controller's size is its TNVMCAP; QEMU reports none, and then it is its namespaces' sum.
	total := ctrl["tnvmcap"]
	if total == 0 {
		for _, size := range sizes {
			total += size
		}
	}
	d.expect(t, total, "hw.physical_disk.size")

	log := nvmeCLI(t, tools, "nvme smart-log /dev/nvme0")
	checkNVMeLog(t, d, log)
	d.expect(t, ctrl["wctemp"]-273, "hw.temperature.limit", "hw.limit_type", "high.degraded")
	d.expect(t, ctrl["cctemp"]-273, "hw.temperature.limit", "hw.limit_type", "high.critical")
	// smartctl reads the same log: the two tools agree with each other too.
	assert.EqualValues(t, log["critical_warning"], sc.NVMeLog.CriticalWarning)
	require.NotNil(t, sc.SmartStatus)
	assert.Equal(t, sc.SmartStatus.Passed, d.state("hw.status", "hw.state") == "ok")
}

// smartNamespace2 is the SMART guest's second NVMe namespace: another size and block size than the
// first (64 MiB of 512-byte blocks), so that a size taken from the wrong namespace or counted in the
// wrong block size shows.
var smartNamespace2 = nvmeNamespace{nsid: 2, size: "32M", blockSize: 4096}

// nvmeBlockSizes are the block sizes the guest's namespaces were given, by NSID.
var nvmeBlockSizes = map[string]uint64{"1": 512, strconv.Itoa(smartNamespace2.nsid): uint64(smartNamespace2.blockSize)}

// nvmeIDNS is the part of `nvme id-ns -o json` the comparison reads.
type nvmeIDNS struct {
	NSZE, NCAP, NUSE uint64
	NSFEAT, FLBAS    uint8
	LBAFs            []struct {
		DS uint8 `json:"ds"`
	} `json:"lbafs"`
}

// checkNamespaces: each namespace's size (NSZE), and for a thin provisioned one its capacity (NCAP) and
// usage (NUSE), in bytes, equal `nvme id-ns` on its block device, in the block size it was given; on a
// namespace that is not thin provisioned NUSE is NCAP is NSZE, and neither is exported. It returns the
// sizes by block device.
func checkNamespaces(t *testing.T, d *smartDisk, tools map[string]json.RawMessage, nsids map[string]string) map[string]float64 {
	t.Helper()
	require.Len(t, nsids, len(nvmeBlockSizes), "the namespaces' block devices: %v", nsids)
	sizes := map[string]float64{}
	for name, nsid := range nsids {
		key := "nvme id-ns /dev/" + name
		raw, ok := tools[key]
		require.True(t, ok, "no %q", key)
		var ns nvmeIDNS
		require.NoError(t, json.Unmarshal(raw, &ns), key)
		// FLBAS bits 3:0, and 6:5 above them, index the LBA format in use.
		f := int(ns.FLBAS&0x0F) | int(ns.FLBAS>>5&0x03)<<4
		require.Less(t, f, len(ns.LBAFs), key)
		bs := uint64(1) << ns.LBAFs[f].DS
		require.Equal(t, nvmeBlockSizes[nsid], bs, "%s (NSID %s): nvme-cli's block size is the one QEMU was given", name, nsid)
		kv := []string{"hw.name", name, "disk_health.nvme.namespace.id", nsid}
		d.expect(t, float64(ns.NSZE*bs), "disk_health.nvme.namespace.size", kv...)
		sizes[name] = float64(ns.NSZE * bs)
		capacity, hasCap := d.get("disk_health.nvme.namespace.capacity", kv...)
		usage, hasUse := d.get("disk_health.nvme.namespace.usage", kv...)
		t.Logf("%s (NSID %s, %d-byte blocks): nvme id-ns NSZE %d NCAP %d NUSE %d NSFEAT %#x; receiver size %.0f B, capacity %.0f B (%v), usage %.0f B (%v)",
			name, nsid, bs, ns.NSZE, ns.NCAP, ns.NUSE, ns.NSFEAT, sizes[name], capacity, hasCap, usage, hasUse)
		if ns.NSFEAT&0x01 != 0 {
			d.expect(t, float64(ns.NCAP*bs), "disk_health.nvme.namespace.capacity", kv...)
			d.expect(t, float64(ns.NUSE*bs), "disk_health.nvme.namespace.usage", kv...)
			continue
		}
		// QEMU 7.2 has no thin provisioning: what the receiver leaves out is the size again.
		assert.Equal(t, ns.NSZE, ns.NCAP, "%s: NCAP of a namespace without thin provisioning", name)
		assert.Equal(t, ns.NCAP, ns.NUSE, "%s: NUSE of a namespace without thin provisioning", name)
		assert.False(t, hasCap, "%s: a capacity for a namespace without thin provisioning", name)
		assert.False(t, hasUse, "%s: a usage for a namespace without thin provisioning", name)
	}
	assert.Len(t, d.points["disk_health.nvme.namespace.size"], len(nsids), "one size per namespace")
	return sizes
}

func checkNVMeLog(t *testing.T, d *smartDisk, log map[string]float64) {
	t.Helper()
	cw := int(log["critical_warning"])
	for i, bit := range nvmeBits {
		d.expect(t, float64(cw>>i&1), "disk_health.physical_disk.nvme.critical_warning", "nvme.critical_warning", bit)
	}
	d.expect(t, log["temperature"]-273, "hw.temperature")
	d.expect(t, log["avail_spare"]/100, "disk_health.physical_disk.spare.available")
	d.expect(t, log["spare_thresh"]/100, "disk_health.physical_disk.spare.threshold")
	d.expect(t, math.Max(0, 1-log["percent_used"]/100), "hw.physical_disk.endurance_utilization", "hw.physical_disk.state", "remaining")
	d.expect(t, log["data_units_read"]*512000, "disk_health.physical_disk.io", "disk.io.direction", "read")
	d.expect(t, log["data_units_written"]*512000, "disk_health.physical_disk.io", "disk.io.direction", "write")
	d.expect(t, log["power_cycles"], "disk_health.physical_disk.power_cycles")
	d.expect(t, log["power_on_hours"]*3600, "disk_health.physical_disk.power_on_time")
	d.expect(t, log["unsafe_shutdowns"], "disk_health.physical_disk.unsafe_shutdowns")
	d.expect(t, log["media_errors"], "hw.errors", "error.type", "media")
	d.expect(t, log["num_err_log_entries"], "hw.errors", "error.type", "error_log_entry")
}

func checkSCSIDebug(t *testing.T, d *smartDisk, sc smartctlOut) {
	t.Helper()
	assert.Equal(t, "ok", d.state("disk_health.physical_disk.smart.read.status", "smart.read.status"))
	assert.Equal(t, sc.SerialNumber, d.res["hw.serial_number"])
	assert.Equal(t, sc.ScsiProduct, d.res["hw.model"])
	assert.Equal(t, sc.ScsiRevision, d.res["hw.firmware_version"])
	d.expect(t, float64(sc.UserCapacity.Bytes), "hw.physical_disk.size")
	require.NotNil(t, sc.Temperature.Current, "smartctl -a shows the log page 0Dh temperature")
	d.expect(t, float64(*sc.Temperature.Current), "hw.temperature")
	trip := sc.Temperature.DriveTrip
	if trip == nil {
		trip = sc.ScsiTemperature.DriveTrip
	}
	require.NotNil(t, trip)
	d.expect(t, float64(*trip), "hw.temperature.limit", "hw.limit_type", "high.degraded")
	require.NotNil(t, sc.SmartStatus)
	assert.Equal(t, sc.SmartStatus.Passed, d.state("hw.status", "hw.state") == "ok")
}

func checkSCSIUnsupported(t *testing.T, d *smartDisk, sc smartctlOut) {
	t.Helper()
	assert.False(t, sc.SmartSupport.Available, "%s: smartctl finds no SMART either", d.name)
	assert.Equal(t, "unsupported", d.state("disk_health.physical_disk.smart.read.status", "smart.read.status"))
	assert.Equal(t, sc.SerialNumber, d.res["hw.serial_number"])
	assert.Equal(t, sc.ScsiProduct, d.res["hw.model"])
	d.expect(t, float64(sc.UserCapacity.Bytes), "hw.physical_disk.size")
	assert.Empty(t, d.points["hw.status"], "no health without SMART data")
}

// checkReadTime: the last successful read happened in this boot, when the tools ran (same clock).
func checkReadTime(t *testing.T, d *smartDisk, tools map[string]json.RawMessage) {
	t.Helper()
	at, ok := d.get("disk_health.physical_disk.smart.read.time")
	if d.state("disk_health.physical_disk.smart.read.status", "smart.read.status") != "ok" {
		assert.False(t, ok, "%s: never read successfully, so no read time", d.name)
		return
	}
	require.True(t, ok, d.name)
	sc := smartctlJSON(t, tools, "smartctl -x /dev/"+map[bool]string{true: "nvme0", false: d.name}[d.name == "nvme0"])
	assert.InDelta(t, float64(sc.LocalTime.TimeT), at, 120, "%s: read time vs smartctl's clock", d.name)
}

// checkIOJoin: the I/O metrics carry the same hw.id for the same disk.
func checkIOJoin(t *testing.T, smart map[string]*smartDisk, ioRaw json.RawMessage) {
	t.Helper()
	md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(ioRaw)
	require.NoError(t, err)
	ioIDs := map[string]string{}
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		attrs := rms.At(i).Resource().Attributes().AsRaw()
		if id, ok := attrs["hw.id"].(string); ok {
			sms := rms.At(i).ScopeMetrics()
			if sms.Len() > 0 && sms.At(0).Metrics().Len() > 0 {
				m := sms.At(0).Metrics().At(0)
				var dev any
				switch m.Type() {
				case pmetric.MetricTypeSum:
					dev = m.Sum().DataPoints().At(0).Attributes().AsRaw()["system.device"]
				case pmetric.MetricTypeGauge:
					dev = m.Gauge().DataPoints().At(0).Attributes().AsRaw()["system.device"]
				}
				ioIDs[fmt.Sprint(dev)] = id
			}
		}
	}
	for name, d := range smart {
		dev := name
		if name == "nvme0" {
			dev = "nvme0n1"
		}
		assert.Equal(t, ioIDs[dev], d.res["hw.id"], "%s: SMART and I/O metrics carry the same hw.id", name)
	}
}

// checkCriticalWarning: after qom-set smart_critical_warning=4 the controller is failed, with the
// reason in one state-change event, and the log values still agree with nvme-cli.
func checkCriticalWarning(t *testing.T, b *vmproto.SMARTBundle) {
	t.Helper()
	p2 := smartDisks(t, b.Phase2.SMART)
	nv := p2["nvme0"]
	require.NotNil(t, nv)
	log := nvmeCLI(t, b.Phase2.Tools, "nvme smart-log /dev/nvme0")
	require.EqualValues(t, 4, log["critical_warning"], "nvme-cli sees the injected warning")
	assert.Equal(t, "failed", nv.state("hw.status", "hw.state"))
	checkNVMeLog(t, nv, log)
	for name, d := range p2 {
		if name != "nvme0" && d.state("hw.status", "hw.state") != "" {
			assert.Equal(t, "ok", d.state("hw.status", "hw.state"), "%s is not affected", name)
		}
	}

	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(b.Events)
	require.NoError(t, err)
	type event struct{ disk, name, state, prev, rule, body, severity string }
	var events []event
	pdatawalk.ForEachLogRecord(ld, func(res pcommon.Resource, lr plog.LogRecord) {
		disk, _ := res.Attributes().Get("hw.name")
		a := lr.Attributes().AsRaw()
		events = append(events, event{disk.Str(), lr.EventName(), fmt.Sprint(a["hw.state"]),
			fmt.Sprint(a["disk_health.previous_state"]), fmt.Sprint(a["disk_health.rule"]), lr.Body().Str(), lr.SeverityText()})
	})
	require.Len(t, events, 2, "one state change and one new sign, over several reads: %+v", events)
	change, sign := events[0], events[1]
	assert.Equal(t, event{"nvme0", "disk_health.state_change", "failed", "ok", "<nil>",
		"nvme0 (QEMU NVMe Ctrl, serial DHNVME0): health changed from ok to failed: the controller reports its reliability is degraded by media or internal errors (critical warning bit 2)",
		"ERROR"}, change)
	assert.Equal(t, "disk_health.new_sign", sign.name)
	assert.Equal(t, "nvme_reliability_degraded", sign.rule)
}

// driveDBSource is the disk_health.drive_database.source of an export's drive database point.
func driveDBSource(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(raw)
	require.NoError(t, err)
	var sources []string
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		if m.Name() == "disk_health.smart.drive_database.entries" {
			s, _ := dp.Attributes().Get("disk_health.drive_database.source")
			sources = append(sources, s.Str())
		}
	})
	require.Len(t, sources, 1, "one drive database point per export")
	return sources[0]
}

// healthInputs are the attributes the health rules find by their drive database name (internal/smart/ata
// meanings), by the ID and name smartctl 7.3 gives them on every drive the guest has.
var healthInputs = map[int64]string{
	5:   "Reallocated_Sector_Ct",
	188: "Command_Timeout",
	197: "Current_Pending_Sector",
	198: "Offline_Uncorrectable",
}

// checkBuiltInNames: phase 1 named the ATA attributes from the host's drivedb.h; with none reachable
// a fresh receiver names them from smart.go's built-in table, and on both ATA disks every attribute's
// name and value (temperature, power-on time, cycles, error count, verdict) equal smartctl 7.3's from
// the same boot. smart.go's table is newer than 7.3's in one place these disks show: it reads the
// Seagate's attribute 1 as raw24/raw32 ("0/0" where smartctl prints "0", see the device layer's
// TestBuiltInNamesAgreeWithSmartctl); the value emitted is the same 0, so no attribute is exempt here.
func checkBuiltInNames(t *testing.T, b *vmproto.SMARTBundle) {
	t.Helper()
	assert.Equal(t, "host", driveDBSource(t, b.Phase1.SMART), "phase 1 read the guest's drivedb.h")
	require.NotEmpty(t, b.NoDriveDB, "the guest's no-drivedb.h phase")
	assert.Equal(t, "built_in", driveDBSource(t, b.NoDriveDB), "no drivedb.h reachable: smart.go's names")
	ata := 0
	for name, d := range smartDisks(t, b.NoDriveDB) {
		if d.res["disk_health.disk.protocol"] != "ata" {
			continue
		}
		ata++
		sc := smartctlJSON(t, b.Phase1.Tools, "smartctl -x /dev/"+name)
		checkATA(t, d, sc)
		checkReadTime(t, d, b.Phase1.Tools)
		d.requireAllChecked(t)
		// QEMU's ATA table has one of the health inputs, the reallocated sectors; the rules read it only
		// if it carries its name.
		seen := 0
		for _, a := range sc.Attributes.Table {
			if want, ok := healthInputs[a.ID]; ok {
				seen++
				_, named := d.get("hw.physical_disk.smart", "disk_health.smart.attribute.id", strconv.FormatInt(a.ID, 10), "hw.physical_disk.smart_attribute", want)
				assert.True(t, named, "%s: attribute %d is not named %s: the health rules do not read it", name, a.ID, want)
			}
		}
		assert.Positive(t, seen, "%s: no health input among smartctl's attributes", name)
	}
	assert.Equal(t, 2, ata, "both ATA disks read with no drivedb.h")
}

// checkUnprivileged: as nobody without capabilities, ATA and NVMe are refused (and say so), SCSI log
// pages and the NVMe hwmon temperature still work.
// checkMany: a thousand reads of every disk change nothing the drives keep and lose no metric.
func checkMany(t *testing.T, b *vmproto.SMARTBundle, p1 map[string]*smartDisk) {
	t.Helper()
	m := b.Many
	t.Logf("phase 5: %d SMART exports in %.0f s", m.Exports, m.Seconds)
	require.GreaterOrEqual(t, m.Exports, 1000)
	assert.Empty(t, m.Differing, "every export of the thousand has the first one's disks and metrics, but the unsupported read statuses the first said")
	var want []string
	for name, d := range p1 {
		for metric := range d.points {
			want = append(want, name+" "+metric)
		}
	}
	assert.ElementsMatch(t, want, m.First, "the thousand's first export has phase 1's disks and metrics")
	// nvme-cli writes 64-bit counters as strings.
	var before, after map[string]any
	require.NoError(t, json.Unmarshal(m.Before, &before), "%s", m.Before)
	require.NoError(t, json.Unmarshal(m.After, &after), "%s", m.After)
	require.Contains(t, before, "num_err_log_entries")
	assert.Equal(t, before["num_err_log_entries"], after["num_err_log_entries"],
		"the NVMe controller's error log did not grow over a thousand reads")
}

func checkUnprivileged(t *testing.T, b *vmproto.SMARTBundle) {
	t.Helper()
	up := smartDisks(t, b.Unpriv)
	require.Len(t, up, 5)
	for name, d := range up {
		status := d.state("disk_health.physical_disk.smart.read.status", "smart.read.status")
		switch d.res["disk_health.disk.protocol"] {
		case "ata":
			assert.Equal(t, "permission_denied", status, "%s: a SATA disk is never misreported as SCSI", name)
			assert.Empty(t, d.points["hw.physical_disk.smart"])
		case "nvme":
			assert.Equal(t, "permission_denied", status, name)
			input, err := strconv.ParseFloat(b.Hwmon["temp1_input"], 64)
			require.NoError(t, err, "hwmon %v", b.Hwmon)
			d.expect(t, input/1000, "hw.temperature")
			if _, identified := d.get("hw.physical_disk.size"); identified {
				// Linux 6.2+ lets Identify through unprivileged: the limits come from it.
				ctrl := nvmeCLI(t, b.Phase1.Tools, "nvme id-ctrl /dev/nvme0")
				d.expect(t, ctrl["cctemp"]-273, "hw.temperature.limit", "hw.limit_type", "high.critical")
			} else {
				crit, err := strconv.ParseFloat(b.Hwmon["temp1_crit"], 64)
				require.NoError(t, err, "hwmon %v", b.Hwmon)
				d.expect(t, crit/1000, "hw.temperature.limit", "hw.limit_type", "high.critical")
			}
		case "scsi":
			assert.Contains(t, []string{"ok", "unsupported"}, status, "%s: SCSI needs no privilege", name)
		default:
			t.Errorf("%s: protocol %v", name, d.res["disk_health.disk.protocol"])
		}
	}
}

// Package devicetest provides test doubles for the SMART device layer: a
// simulated machine whose disks answer the commands device.Conn sends with
// pages captured from real (QEMU-emulated) disks, and can be made to sleep,
// hang, refuse for lack of privilege or panic. Tests only.
package devicetest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/scsi"
)

// Page keys: what a Disk answers each command with.
const (
	ATAIdentify   = "ata/identify"
	ATASMARTData  = "ata/smart_data"
	ATAThresholds = "ata/thresholds"
	// ATACheckPowerMode is the key of CHECK POWER MODE (it reads no page).
	ATACheckPowerMode = "ata/check_power_mode"
	NVMeIDCtrl        = "nvme/identify_ctrl"
	SCSIInquiry       = "scsi/inquiry"
	SCSICapacity      = "scsi/capacity"
)

// ATALog is the key of a SMART log (SMART READ LOG and READ LOG EXT share
// it; page n of a multi-page log is at n*512).
func ATALog(addr uint8) string { return fmt.Sprintf("ata/log%02x", addr) }

// NVMeIDNS is the key of a namespace's Identify data.
func NVMeIDNS(nsid uint32) string { return fmt.Sprintf("nvme/identify_ns/%d", nsid) }

// NVMeLog is the key of an NVMe log page.
func NVMeLog(lid uint8) string { return fmt.Sprintf("nvme/log%02x", lid) }

// SCSILog is the key of a LOG SENSE page.
func SCSILog(page uint8) string { return fmt.Sprintf("scsi/log%02x", page) }

// Disk is a simulated disk. Its fields may be changed between reads (under
// Lock/Unlock when a read may be running).
type Disk struct {
	mu sync.Mutex
	// Info is what discovery reports for it.
	Info device.Disk
	// Pages answers the data-in commands; a missing page is rejected as
	// the device would (ATA abort, NVMe invalid field, ILLEGAL REQUEST).
	Pages map[string][]byte
	// Power is the ATA power mode CHECK POWER MODE reports.
	Power ata.PowerMode
	// Failing makes SMART RETURN STATUS report a threshold exceeded.
	Failing bool
	// Deny refuses ATA pass-through and NVMe admin commands with
	// EPERM/EACCES, as the kernel does without CAP_SYS_RAWIO/CAP_SYS_ADMIN.
	Deny bool
	// DenyCommands refuses only the commands with these keys (Linux 6.2+
	// lets NVMe Identify through without CAP_SYS_ADMIN, but not Get Log
	// Page).
	DenyCommands []string
	// Reject answers these commands as not implemented (ILLEGAL REQUEST),
	// as some USB bridges do for CHECK POWER MODE.
	Reject []string
	// RefuseLen answers NVMe reads of these keys with these byte counts
	// with an NVMe error (PRP Offset Invalid), as controllers that refuse
	// some log sizes they claim to keep do.
	RefuseLen map[string][]int
	// DenyOpen refuses the open itself (node permissions).
	DenyOpen bool
	// Hang, when set, blocks every command until it is closed.
	Hang chan struct{}
	// Panic makes the next command panic.
	Panic bool
	// PanicOn makes every command with these keys panic (smart.go choking on
	// a drive's answer, say).
	PanicOn []string
	// Latency is how long every command takes (a real disk's, for benchmarks).
	Latency time.Duration
	// SmartGoAttrs is what smart.go's ReadSMARTData named and typed each
	// attribute of this disk (recorded from smart.go, see Library).
	SmartGoAttrs map[uint8]RecordedAttr

	sent []string
	// libOpen counts the library devices open on this disk.
	libOpen int
}

// LibraryOpen is how many devices the library has open on the disk.
func (d *Disk) LibraryOpen() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.libOpen
}

// Lock and Unlock guard changes to a disk a read may be using.
func (d *Disk) Lock() { d.mu.Lock() }

// Unlock releases what Lock took.
func (d *Disk) Unlock() { d.mu.Unlock() }

// Sent returns the names of the commands the disk received, in order.
func (d *Disk) Sent() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.sent)
}

// ResetSent forgets the commands received so far.
func (d *Disk) ResetSent() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sent = nil
}

// Machine is a set of simulated disks with a Discover and an Opener for
// device.Config.
type Machine struct {
	mu    sync.Mutex
	disks []*Disk
}

// Add puts a disk in the machine.
func (m *Machine) Add(d *Disk) *Disk {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.disks = append(m.disks, d)
	return d
}

// Remove takes the disk with the given name out of the machine (unplugged).
func (m *Machine) Remove(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.disks = slices.DeleteFunc(m.disks, func(d *Disk) bool { return d.Info.Name == name })
}

// Disk returns the disk with the given name.
func (m *Machine) Disk(name string) *Disk {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range m.disks {
		if d.Info.Name == name {
			return d
		}
	}
	return nil
}

// Discover lists the disks, as device.Discover would.
func (m *Machine) Discover(string) ([]device.Disk, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]device.Disk, len(m.disks))
	for i, d := range m.disks {
		out[i] = d.Info
	}
	slices.SortFunc(out, func(a, b device.Disk) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out, nil
}

// Open opens a disk by its node.
func (m *Machine) Open(node string) (device.Transport, error) {
	d, err := m.open(node)
	if err != nil {
		return nil, err
	}
	return &transport{d: d}, nil
}

// open finds the disk at node as opening the node would: refused with
// DenyOpen, missing when no disk has that node.
func (m *Machine) open(node string) (*Disk, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range m.disks {
		if d.Info.Node == node {
			d.mu.Lock()
			deny := d.DenyOpen
			d.mu.Unlock()
			if deny {
				return nil, fmt.Errorf("open %s: %w", node, syscall.EACCES)
			}
			return d, nil
		}
	}
	return nil, fmt.Errorf("open %s: %w", node, syscall.ENOENT)
}

// transport answers commands from its Disk.
type transport struct{ d *Disk }

func (t *transport) Close() error { return nil }

// begin records a command and applies the disk's failure modes.
func (t *transport) begin(name string) (deny bool) {
	t.d.mu.Lock()
	t.d.sent = append(t.d.sent, name)
	hang, p, deny := t.d.Hang, t.d.Panic || slices.Contains(t.d.PanicOn, name), t.d.Deny || slices.Contains(t.d.DenyCommands, name)
	latency := t.d.Latency
	t.d.Panic = false
	t.d.mu.Unlock()
	time.Sleep(latency)
	if p {
		panic("devicetest: simulated panic in " + name)
	}
	if hang != nil {
		<-hang
	}
	return deny
}

func (t *transport) page(key string) ([]byte, bool) {
	t.d.mu.Lock()
	defer t.d.mu.Unlock()
	b, ok := t.d.Pages[key]
	return b, ok
}

func (t *transport) NVMeAdmin(cmd smart.NVMeAdmin, data []byte, _ time.Duration) error {
	var key string
	switch {
	case cmd.Opcode == nvme.AdminIdentify && uint8(cmd.CDW10) == nvme.CNSController:
		key = NVMeIDCtrl
	case cmd.Opcode == nvme.AdminIdentify && uint8(cmd.CDW10) == nvme.CNSNamespace:
		key = NVMeIDNS(cmd.NSID)
	case cmd.Opcode == nvme.AdminGetLogPage:
		key = NVMeLog(uint8(cmd.CDW10))
	default:
		key = fmt.Sprintf("nvme/opcode%02x", cmd.Opcode)
	}
	if t.begin(key) {
		return syscall.EACCES
	}
	t.d.mu.Lock()
	refuse := slices.Contains(t.d.RefuseLen[key], int(cmd.DataLen))
	t.d.mu.Unlock()
	if refuse {
		return &device.NVMeStatusError{Status: 0x0013} // PRP Offset Invalid
	}
	b, ok := t.page(key)
	if !ok {
		return &device.NVMeStatusError{Status: 0x4002} // DNR, invalid field in command
	}
	copy(data, b)
	return nil
}

func (t *transport) SCSI(cdb []byte, _ smart.Direction, data, sense []byte, _ time.Duration) (device.SCSIStatus, error) {
	switch cdb[0] {
	case scsi.OpATAPassThrough16:
		return t.ata16(cdb, data, sense)
	case scsi.OpInquiry:
		key := SCSIInquiry
		if cdb[1]&1 != 0 {
			key = fmt.Sprintf("scsi/vpd%02x", cdb[2])
		}
		return t.dataIn(key, data, sense)
	case scsi.OpLogSense:
		return t.dataIn(SCSILog(cdb[2]&0x3F), data, sense)
	case scsi.OpServiceActionIn16:
		return t.dataIn(SCSICapacity, data, sense)
	}
	t.begin(fmt.Sprintf("scsi/opcode%02x", cdb[0]))
	return checkCondition(sense, illegalRequest)
}

func (t *transport) dataIn(key string, data, sense []byte) (device.SCSIStatus, error) {
	t.begin(key)
	b, ok := t.page(key)
	if !ok {
		return checkCondition(sense, illegalRequest)
	}
	copy(data, b)
	return device.SCSIStatus{}, nil
}

func (t *transport) ata16(cdb, data, sense []byte) (device.SCSIStatus, error) {
	cmd, feature, lbaLow, lbaMid := cdb[14], cdb[4], cdb[8], cdb[10]
	var key string
	switch {
	case cmd == ata.CmdCheckPowerMode:
		key = ATACheckPowerMode
	case cmd == ata.CmdIdentifyDevice:
		key = ATAIdentify
	case cmd == ata.CmdSMART && feature == ata.SMARTReadData:
		key = ATASMARTData
	case cmd == ata.CmdSMART && feature == ata.SMARTReadThresholds:
		key = ATAThresholds
	case cmd == ata.CmdSMART && feature == ata.SMARTReturnStatus:
		key = "ata/return_status"
	case cmd == ata.CmdSMART && feature == ata.SMARTReadLog:
		key = ATALog(lbaLow)
	case cmd == ata.CmdReadLogExt:
		key = ATALog(lbaLow)
	default:
		key = fmt.Sprintf("ata/command%02x", cmd)
	}
	if t.begin(key) {
		return device.SCSIStatus{}, syscall.EPERM
	}
	t.d.mu.Lock()
	power, failing, reject := t.d.Power, t.d.Failing, slices.Contains(t.d.Reject, key)
	t.d.mu.Unlock()
	if reject {
		return checkCondition(sense, illegalRequest)
	}
	t.d.mu.Lock()
	_, isATA := t.d.Pages[ATAIdentify]
	t.d.mu.Unlock()
	if !isATA {
		// A SCSI device: the pass-through opcode itself is unknown.
		return checkCondition(sense, illegalRequest)
	}
	switch key {
	case ATACheckPowerMode:
		return checkCondition(sense, ataRegisters(uint8(power), 0, 0))
	case "ata/return_status":
		if failing {
			return checkCondition(sense, ataRegisters(0, 0xF4, 0x2C))
		}
		return checkCondition(sense, ataRegisters(0, ata.SMARTLBAMid, ata.SMARTLBAHigh))
	}
	b, ok := t.page(key)
	if cmd == ata.CmdReadLogExt || (cmd == ata.CmdSMART && feature == ata.SMARTReadLog) {
		off := 0
		if cmd == ata.CmdReadLogExt {
			off = int(lbaMid) * ata.PageSize
		}
		if ok && off+len(data) <= len(b) {
			copy(data, b[off:])
			return device.SCSIStatus{}, nil
		}
		ok = false
	}
	if !ok {
		return checkCondition(sense, ataAbort)
	}
	copy(data, b)
	return device.SCSIStatus{}, nil
}

var (
	// illegalRequest is fixed-format sense: ILLEGAL REQUEST, invalid
	// command operation code.
	illegalRequest = []byte{0x70, 0, 0x05, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x20, 0x00, 0, 0, 0, 0}
	// ataAbort is libata's answer to an aborted ATA command: ABORTED
	// COMMAND with the ATA status return descriptor (ERR set, ABRT).
	ataAbort = []byte{0x72, 0x0B, 0x00, 0x00, 0, 0, 0, 14,
		0x09, 0x0C, 0x00, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x51}
)

// ataRegisters is the CK_COND answer libata gives: RECOVERED ERROR, ATA
// PASS-THROUGH INFORMATION AVAILABLE, and the status return descriptor.
func ataRegisters(count, lbaMid, lbaHigh uint8) []byte {
	return []byte{0x72, 0x01, 0x00, 0x1D, 0, 0, 0, 14,
		0x09, 0x0C, 0x00, 0x00, 0, count, 0, 0, 0, lbaMid, 0, lbaHigh, 0x00, 0x50}
}

func checkCondition(sense, s []byte) (device.SCSIStatus, error) {
	n := copy(sense, s)
	return device.SCSIStatus{Status: 0x02, DriverStatus: 0x08, SenseLen: n}, nil
}

// QEMU returns a machine with the disks the project's QEMU fixtures were
// read from: sda an AHCI disk posing as a Seagate ST4000DM004 (drive
// database match, WWN, 7200 rpm), sdb a plain QEMU IDE disk, nvme0 a QEMU
// NVMe controller with one namespace, and sdc a scsi_debug-like SAS disk
// with temperature and informational-exceptions pages. dir selects the
// fixture set for NVMe ("k6.12" or "k6.12-critwarn4").
func QEMU(t testing.TB, nvmeDir string) *Machine {
	t.Helper()
	m := &Machine{}
	for _, name := range []string{"sda", "sdb"} {
		read := func(kind string) []byte { return fixture.Read(t, "qemu", "k6.12", name+"."+kind+".bin") }
		id, err := ata.ParseIdentify(read("ata_identify"))
		if err != nil {
			t.Fatalf("fixture %s: %v", name, err)
		}
		ident := blockdev.Identity{Name: name, Class: blockdev.ClassDisk, Model: id.Model, Serial: id.Serial, Firmware: id.Firmware, Rotational: 1}
		if id.WWN != 0 {
			ident.WWN = fmt.Sprintf("naa.%016x", id.WWN)
		}
		m.Add(&Disk{
			Info: device.Disk{Name: name, Protocol: device.ProtocolATA, Node: filepath.Join("/dev", name), Identity: ident, ID: blockdev.DiskID(&ident)},
			Pages: map[string][]byte{
				ATAIdentify:                 read("ata_identify"),
				ATASMARTData:                read("smart_read_data"),
				ATAThresholds:               read("smart_read_thresholds"),
				ATALog(ata.LogSummaryError): read("smart_read_log01"),
				ATALog(ata.LogSelfTest):     read("smart_read_log06"),
			},
			Power:        ata.PowerActiveOrIdle,
			SmartGoAttrs: recordedAttrs(t, "qemu", "k6.12", name+".smartgo_read_smart_data.json"),
		})
	}
	nread := func(kind string) []byte { return fixture.Read(t, "qemu", nvmeDir, "nvme0."+kind+".bin") }
	nsIdent := blockdev.Identity{Name: "nvme0n1", Class: blockdev.ClassDisk, Model: "QEMU NVMe Ctrl", Serial: "smarttest", Firmware: "7.2.22", Rotational: 0,
		WWN: "nvme.1b36-736d61727474657374-51454d55204e564d65204374726c-00000001"}
	m.Add(&Disk{
		Info: device.Disk{Name: "nvme0", Protocol: device.ProtocolNVMe, Node: "/dev/nvme0", Identity: nsIdent, ID: blockdev.DiskID(&nsIdent),
			Namespaces: []device.Namespace{{Name: "nvme0n1", NSID: 1, ID: blockdev.DiskID(&nsIdent)}}},
		Pages: map[string][]byte{
			NVMeIDCtrl:             nread("identify_ctrl"),
			NVMeIDNS(1):            nread("identify_ns1"),
			NVMeLog(nvme.LogSMART): nread("log02_smart_log"),
			// QEMU keeps no error entries: its one-entry log (ELPE 0) reads
			// as zeros.
			NVMeLog(nvme.LogError): make([]byte, nvme.ErrorEntrySize),
		},
	})
	scsiIdent := blockdev.Identity{Name: "sdc", Class: blockdev.ClassDisk, Model: "scsi_debug", Serial: "20000", Firmware: "0191", WWN: "naa.3333333000004e20", Rotational: 0}
	m.Add(&Disk{
		Info: device.Disk{Name: "sdc", Protocol: device.ProtocolSCSI, Node: "/dev/sdc", Identity: scsiIdent, ID: blockdev.DiskID(&scsiIdent)},
		Pages: map[string][]byte{
			SCSIInquiry: append([]byte{0x00, 0x00, 0x07, 0x02, 31, 0, 0, 0}, []byte("Linux   scsi_debug      0191")...),
			SCSICapacity: {0, 0, 0, 0, 0, 0, 0x3F, 0xFF, 0, 0, 2, 0, 0, 0, 0, 0,
				0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			SCSILog(scsi.PageSupported):               {0x00, 0, 0, 3, 0x00, 0x0D, 0x2F},
			SCSILog(scsi.PageTemperature):             {0x0D, 0, 0, 12, 0, 0, 0x03, 2, 0, 38, 0, 1, 0x03, 2, 0, 65},
			SCSILog(scsi.PageInformationalExceptions): {0x2F, 0, 0, 8, 0, 0, 0x03, 4, 0, 0, 38, 0},
		},
	})
	return m
}

// The GUIDs as the OCP specification's pages carry them, written out here
// rather than taken from the decoder.
var (
	ocpC0GUID = []byte{0xC5, 0xAF, 0x10, 0x28, 0xEA, 0xBF, 0xF2, 0xA4, 0x9C, 0x4F, 0x6F, 0x7C, 0xC9, 0x14, 0xD5, 0xAF}
	ocpC3GUID = []byte{0x92, 0x7A, 0xC0, 0x8C, 0xD0, 0x84, 0x6C, 0x9C, 0x70, 0x43, 0xE6, 0xD4, 0x58, 0x5E, 0xD4, 0x85}
)

// QEMUPage is one page of the QEMU fixtures (testdata/smart/qemu/<dir>/<file>), a copy the caller may change.
func QEMUPage(t testing.TB, dir, file string) []byte {
	t.Helper()
	return slices.Clone(fixture.Read(t, "qemu", dir, file))
}

// NVMeController is QEMU's Identify Controller with the fields that decide the
// plan replaced.
func NVMeController(t testing.TB, vid uint16, model string, version uint32, lpa, elpe uint8) []byte {
	t.Helper()
	b := slices.Clone(fixture.Read(t, "qemu", "k6.12", "nvme0.identify_ctrl.bin"))
	binary.LittleEndian.PutUint16(b[0:], vid)
	n := copy(b[24:64], model)
	for i := 24 + n; i < 64; i++ {
		b[i] = ' '
	}
	binary.LittleEndian.PutUint32(b[80:], version)
	b[261], b[262] = lpa, elpe
	return b
}

// SupportedLogs is a Supported Log Pages log listing lids.
func SupportedLogs(lids ...uint8) []byte {
	b := make([]byte, nvme.SupportedLogsSize)
	for _, l := range lids {
		b[4*int(l)] = 1
	}
	return b
}

// OCPSMART is an OCP C0h page of the given version with the media bytes written, a
// capacitor health of 93% and small distinct error counts.
func OCPSMART(version uint16, mediaWritten uint64) []byte {
	b := make([]byte, nvme.OCPLogSize)
	binary.LittleEndian.PutUint64(b[0:], mediaWritten)
	binary.LittleEndian.PutUint16(b[128:], 93) // capacitor health
	// A distinct small value per counter, so a swapped attribute shows.
	binary.LittleEndian.PutUint64(b[16:], 11*512000) // media read
	for off, v := range map[int]uint32{32: 12, 40: 2, 48: 3, 56: 4, 64: 5, 72: 6, 76: 7, 104: 9} {
		binary.LittleEndian.PutUint32(b[off:], v)
	}
	b[96] = 8 // thermal throttling events
	binary.LittleEndian.PutUint16(b[494:], version)
	copy(b[496:], ocpC0GUID)
	return b
}

// OCPLatency is an OCP C3h page, monitor enabled with nvme-cli's default settings (7-day windows,
// thresholds 30, 100, 155 and 235 ms), one day into its active window (288 steps of 5 minutes), whose
// active bucket i counts 10*(i+1) reads, 100*(i+1) writes and i+1 deallocates (77 reads in bucket 0).
func OCPLatency() []byte {
	b := make([]byte, nvme.OCPLogSize)
	b[0] = 1
	binary.LittleEndian.PutUint16(b[2:], 288)
	binary.LittleEndian.PutUint16(b[4:], 2016)
	copy(b[6:10], []byte{0x05, 0x13, 0x1E, 0x2E})
	for i := range 4 {
		g := b[32+16*i:]
		reads := uint32(10 * (i + 1))
		if i == 0 {
			reads = 77
		}
		binary.LittleEndian.PutUint32(g[12:], reads)
		binary.LittleEndian.PutUint32(g[8:], uint32(100*(i+1)))
		binary.LittleEndian.PutUint32(g[4:], uint32(i+1))
	}
	binary.LittleEndian.PutUint16(b[494:], 1)
	copy(b[496:], ocpC3GUID)
	return b
}

// ErrorLog is an Error Information log of capacity entries, the first ones with the given
// error counts (newest first), each an invalid-field error.
func ErrorLog(capacity int, counts ...uint64) []byte {
	b := make([]byte, capacity*nvme.ErrorEntrySize)
	for i, n := range counts {
		binary.LittleEndian.PutUint64(b[64*i:], n)
		binary.LittleEndian.PutUint16(b[64*i+12:], 0x0002<<1) // invalid field
		binary.LittleEndian.PutUint64(b[64*i+16:], 4096+n)
	}
	return b
}

// NVMeMachine is one NVMe controller, nvme0, with the given Identify Controller
// and pages, plus QEMU's namespace and SMART log.
func NVMeMachine(t testing.TB, ctrl []byte, pages map[string][]byte) *Machine {
	t.Helper()
	m := &Machine{}
	m.Add(NVMeDisk(t, "nvme0", ctrl, pages))
	return m
}

// NVMeDisk is an NVMe controller named name with the given Identify
// Controller and pages, plus QEMU's namespace and SMART log.
func NVMeDisk(t testing.TB, name string, ctrl []byte, pages map[string][]byte) *Disk {
	t.Helper()
	nread := func(kind string) []byte { return fixture.Read(t, "qemu", "k6.12", "nvme0."+kind+".bin") }
	all := map[string][]byte{
		NVMeIDCtrl:             ctrl,
		NVMeIDNS(1):            nread("identify_ns1"),
		NVMeLog(nvme.LogSMART): nread("log02_smart_log"),
	}
	for k, v := range pages {
		all[k] = v
	}
	ident := blockdev.Identity{Name: name + "n1", Class: blockdev.ClassDisk, Model: "test", Serial: "s-" + name}
	return &Disk{
		Info: device.Disk{Name: name, Protocol: device.ProtocolNVMe, Node: "/dev/" + name, Identity: ident, ID: blockdev.DiskID(&ident),
			Namespaces: []device.Namespace{{Name: name + "n1", NSID: 1, ID: blockdev.DiskID(&ident)}}},
		Pages: all,
	}
}

// AmazonEBSPage is the D0h page of an EBS volume with the values of s
// (durations in whole microseconds, as the page keeps them).
func AmazonEBSPage(s nvme.AmazonStats) []byte {
	b := make([]byte, nvme.AmazonLogSize)
	binary.LittleEndian.PutUint32(b, nvme.AmazonMagicEBS)
	us := func(d time.Duration) uint64 { return uint64(d / time.Microsecond) }
	for i, v := range []uint64{s.ReadOps, s.WriteOps, s.ReadBytes, s.WriteBytes, us(s.ReadTime), us(s.WriteTime),
		us(s.VolumeIOPSExceeded), us(s.VolumeThroughputExceeded), us(s.InstanceIOPSExceeded), us(s.InstanceThroughputExceeded), s.QueueLength} {
		binary.LittleEndian.PutUint64(b[8+8*i:], v)
	}
	for h, bins := range [][]nvme.LatencyBin{s.ReadLatency, s.WriteLatency} {
		base := 512 + 1544*h
		binary.LittleEndian.PutUint64(b[base:], uint64(len(bins)))
		for i, bin := range bins {
			e := b[base+8+24*i:]
			binary.LittleEndian.PutUint64(e, bin.Lower)
			binary.LittleEndian.PutUint64(e[8:], bin.Upper)
			binary.LittleEndian.PutUint32(e[16:], uint32(bin.Count))
		}
	}
	return b
}

// RecordedAttr is what smart.go's ReadSMARTData returned for one attribute
// beyond the page's bytes: its name, its AtaDeviceAttributeType and ValueRaw.
type RecordedAttr struct {
	Name     string `json:"name"`
	Type     int    `json:"type"`
	ValueRaw uint64 `json:"value_raw"`
}

// recordedAttrs loads what smart.go's ReadSMARTData returned for a fixture
// disk's SMART data page (testdata/smart/qemu/README.md says how it was
// recorded).
func recordedAttrs(t testing.TB, elems ...string) map[uint8]RecordedAttr {
	t.Helper()
	var rec struct {
		Attributes []struct {
			ID uint8 `json:"id"`
			RecordedAttr
		} `json:"attributes"`
	}
	if err := json.Unmarshal(fixture.Read(t, elems...), &rec); err != nil {
		t.Fatalf("fixture %v: %v", elems, err)
	}
	out := make(map[uint8]RecordedAttr, len(rec.Attributes))
	for _, a := range rec.Attributes {
		out[a.ID] = a.RecordedAttr
	}
	return out
}

// SysfsRoot copies the host root of a fixture set (testdata/smart/qemu/<dir>, a sys tree copied from a
// guest, links kept) into a temporary directory, for device.Discover and for changes a test makes
// (SetControllerState), and returns it.
func SysfsRoot(t testing.TB, dir string) string {
	t.Helper()
	src, dst := fixture.Path("qemu", dir), t.TempDir()
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case e.IsDir():
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatalf("fixture %s: %v", dir, err)
	}
	return dst
}

// SetControllerState writes an NVMe controller's sysfs state (live, connecting, ...) under root.
func SetControllerState(t testing.TB, root, ctrl, state string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, "sys", "class", "nvme", ctrl, "state"), []byte(state+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// NVMeTCPHeadID is the hw.id of NVMeTCP's namespace head nvme1n1 (its wwid), the subsystem's.
const NVMeTCPHeadID = "uuid.d9ccc9e5-8ef0-4fd1-98c8-b127d516f3e1"

// NVMeTCP is the QEMU guest's NVMe/TCP multipath setup (testdata/smart/qemu/k6.1-nvme-tcp, its sysfs):
// nvme0 a QEMU PCIe controller, and one Linux target subsystem reached through nvme1 and nvme2 (one
// namespace head, nvme1n1). It returns a copy of that root for device.Discover and a machine whose disks
// answer at its device nodes: nvme0 with QEMU's pages, nvme1 and nvme2 each with the Linux target's
// (k6.12-nvmet), so a test sees which controller a read went to.
func NVMeTCP(t testing.TB) (string, *Machine) {
	t.Helper()
	root := SysfsRoot(t, "k6.1-nvme-tcp")
	m := &Machine{}
	qemu := func(kind string) []byte { return fixture.Read(t, "qemu", "k6.12", "nvme0."+kind+".bin") }
	m.Add(&Disk{Info: device.Disk{Name: "nvme0", Protocol: device.ProtocolNVMe, Node: filepath.Join(root, "dev", "nvme0")},
		Pages: map[string][]byte{NVMeIDCtrl: qemu("identify_ctrl"), NVMeIDNS(1): qemu("identify_ns1"),
			NVMeLog(nvme.LogSMART): qemu("log02_smart_log"), NVMeLog(nvme.LogError): make([]byte, nvme.ErrorEntrySize)}})
	nvmet := func(kind string) []byte { return fixture.Read(t, "qemu", "k6.12-nvmet", "nvme1."+kind+".bin") }
	for _, c := range []string{"nvme1", "nvme2"} {
		m.Add(&Disk{Info: device.Disk{Name: c, Protocol: device.ProtocolNVMe, Node: filepath.Join(root, "dev", c)},
			Pages: map[string][]byte{NVMeIDCtrl: nvmet("identify_ctrl"), NVMeIDNS(1): nvmet("identify_ns1"),
				NVMeLog(nvme.LogSMART): nvmet("log02_smart_log"), NVMeLog(nvme.LogError): make([]byte, 128*nvme.ErrorEntrySize)}})
	}
	return root, m
}

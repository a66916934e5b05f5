package smart

import (
	"errors"
	"fmt"
	"slices"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/scsi"
)

// ErrNotAllowed is wrapped by every refusal of Allowed.
var ErrNotAllowed = errors.New("not on the read-only command allowlist")

// Direction is the data direction the device layer sets for a SCSI command
// (the SG_IO dxfer_direction).
type Direction uint8

// Data directions.
const (
	DirNone Direction = iota
	DirFromDevice
	DirToDevice
)

func (d Direction) String() string {
	switch d {
	case DirNone:
		return "none"
	case DirFromDevice:
		return "from-device"
	case DirToDevice:
		return "to-device"
	}
	return fmt.Sprintf("direction(%d)", uint8(d))
}

// Command is one command the device layer is about to send: SCSI or
// NVMeAdmin. Allowed checks the very values that go into the ioctl.
type Command interface {
	check() error
}

// SCSI is a CDB sent with SG_IO and the data direction of its header.
type SCSI struct {
	CDB []byte
	Dir Direction
}

// NVMeAdmin is an admin command sent with NVME_IOCTL_ADMIN64_CMD (or the
// 32-bit variant).
type NVMeAdmin struct {
	Opcode  uint8
	NSID    uint32
	CDW10   uint32
	DataLen uint32
}

// Allowed reports whether a command may be sent. The device layer must call
// it before every ioctl and send nothing it refuses: the receiver only ever
// reads, and a disk's firmware is no place for surprises (SMART ENABLE
// writes settings, EXECUTE OFFLINE starts a test, some log reads reset
// counters, STANDBY spins a disk down).
func Allowed(c Command) error {
	if c == nil {
		return fmt.Errorf("nil command: %w", ErrNotAllowed)
	}
	return c.check()
}

func refuse(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrNotAllowed)
}

// CommandInfo documents one allowed command.
type CommandInfo struct {
	Protocol string // "ATA" (inside ATA PASS-THROUGH), "NVMe admin" or "SCSI"
	Name     string
	Opcode   uint8
	// Feature is the SMART feature (ATA), the service action (SCSI) or
	// unused, per HasFeature.
	Feature    uint8
	HasFeature bool
	Dir        Direction
	// Targets lists the log addresses, log pages, VPD pages or CNS values
	// the command may ask for; nil when it takes none.
	Targets []uint8
}

// ATA protocols of the ATA PASS-THROUGH CDB.
const (
	protoNonData = 3
	protoPIOIn   = 4
)

// IDENTIFY DEVICE, SMART READ DATA and SMART READ THRESHOLDS are not here:
// github.com/anatol/smart.go sends them (LibraryCommands), and the device
// layer must not send them a second way.
var ataCommands = []CommandInfo{
	{Protocol: "ATA", Name: "CHECK POWER MODE", Opcode: ata.CmdCheckPowerMode, Dir: DirNone},
	{Protocol: "ATA", Name: "SMART RETURN STATUS", Opcode: ata.CmdSMART, Feature: ata.SMARTReturnStatus, HasFeature: true, Dir: DirNone},
	// Log lists are closed on purpose: reading some other logs has side
	// effects (the NCQ error log 10h clears the error, the SATA PHY counters
	// log 11h can reset its counters, the SCT log E0h is a command channel).
	{Protocol: "ATA", Name: "SMART READ LOG", Opcode: ata.CmdSMART, Feature: ata.SMARTReadLog, HasFeature: true, Dir: DirFromDevice,
		Targets: []uint8{ata.LogDirectory, ata.LogSummaryError, ata.LogComprehensiveError, ata.LogDeviceStatistics, ata.LogSelfTest}},
	{Protocol: "ATA", Name: "READ LOG EXT", Opcode: ata.CmdReadLogExt, Dir: DirFromDevice,
		Targets: []uint8{ata.LogDirectory, ata.LogExtComprehensiveErr, ata.LogDeviceStatistics, ata.LogExtSelfTest}},
}

var nvmeCommands = []CommandInfo{
	// Log pages whose reading changes nothing. Host-initiated telemetry
	// (07h) creates a snapshot and the persistent event log (0Dh) a context:
	// both are out. Controller-initiated telemetry (08h) is read with RAE
	// set, so the controller's "telemetry available" notice stays for the
	// operator's own tools. The vendor logs (OCP C0h/C3h, Amazon D0h) are
	// sent only to controllers that advertise them (nvme.PlanLogs). The
	// SMART / health log (02h) is smart.go's read (LibraryCommands).
	{Protocol: "NVMe admin", Name: "Get Log Page", Opcode: nvme.AdminGetLogPage, Dir: DirFromDevice,
		Targets: []uint8{nvme.LogSupportedLogs, nvme.LogError, nvme.LogFirmwareSlot, nvme.LogCommandsEffects,
			nvme.LogDeviceSelfTest, nvme.LogTelemetryController, nvme.LogOCPSMART, nvme.LogOCPLatency, nvme.LogAmazon}},
	{Protocol: "NVMe admin", Name: "Identify", Opcode: nvme.AdminIdentify, Dir: DirFromDevice,
		Targets: []uint8{nvme.CNSNamespace, nvme.CNSController, nvme.CNSActiveNamespaceList, nvme.CNSNamespaceDescriptors}},
}

var scsiCommands = []CommandInfo{
	{Protocol: "SCSI", Name: "INQUIRY", Opcode: scsi.OpInquiry, Dir: DirFromDevice,
		Targets: []uint8{scsi.VPDSupported, scsi.VPDUnitSerialNumber, scsi.VPDDeviceID, scsi.VPDBlockDeviceCharac}},
	{Protocol: "SCSI", Name: "LOG SENSE", Opcode: scsi.OpLogSense, Dir: DirFromDevice,
		Targets: []uint8{scsi.PageSupported, scsi.PageWriteErrors, scsi.PageReadErrors, scsi.PageVerifyErrors, scsi.PageTemperature, scsi.PageStartStop, scsi.PageSelfTest, scsi.PageInformationalExceptions}},
	{Protocol: "SCSI", Name: "READ CAPACITY(16)", Opcode: scsi.OpServiceActionIn16, Feature: scsi.SAReadCapacity16, HasFeature: true, Dir: DirFromDevice},
	{Protocol: "SCSI", Name: "ATA PASS-THROUGH(16), allowed ATA commands only", Opcode: scsi.OpATAPassThrough16},
	{Protocol: "SCSI", Name: "ATA PASS-THROUGH(12), allowed ATA commands only", Opcode: scsi.OpATAPassThrough12},
}

// LibraryCommands are the commands github.com/anatol/smart.go sends for the
// device layer (device.Library), besides its open's standard INQUIRY. They
// never pass through Allowed: Allowed refuses each of them, so the device
// layer's own Conn cannot send them too. Listed for the documentation of what
// the receiver sends a disk.
func LibraryCommands() []CommandInfo {
	return []CommandInfo{
		{Protocol: "ATA", Name: "IDENTIFY DEVICE", Opcode: ata.CmdIdentifyDevice, Dir: DirFromDevice},
		{Protocol: "ATA", Name: "SMART READ DATA", Opcode: ata.CmdSMART, Feature: ata.SMARTReadData, HasFeature: true, Dir: DirFromDevice},
		{Protocol: "ATA", Name: "SMART READ THRESHOLDS", Opcode: ata.CmdSMART, Feature: ata.SMARTReadThresholds, HasFeature: true, Dir: DirFromDevice},
		{Protocol: "NVMe admin", Name: "Get Log Page", Opcode: nvme.AdminGetLogPage, Dir: DirFromDevice, Targets: []uint8{nvme.LogSMART}},
	}
}

// AllowedCommands lists every command Allowed lets through. ATA PASS-THROUGH
// has no direction of its own: it takes the wrapped ATA command's.
func AllowedCommands() []CommandInfo {
	return slices.Concat(ataCommands, nvmeCommands, scsiCommands)
}

func findCommand(table []CommandInfo, opcode uint8) *CommandInfo {
	for i := range table {
		if table[i].Opcode == opcode {
			return &table[i]
		}
	}
	return nil
}

func (c NVMeAdmin) check() error {
	info := findCommand(nvmeCommands, c.Opcode)
	if info == nil {
		return refuse("NVMe admin opcode %#02x", c.Opcode)
	}
	switch c.Opcode {
	case nvme.AdminGetLogPage:
		lid := uint8(c.CDW10)
		if !slices.Contains(info.Targets, lid) {
			return refuse("NVMe Get Log Page for log %#02x", lid)
		}
		// Log-specific fields change what some logs do (create a telemetry
		// snapshot, establish an event-log context); none is needed here.
		if lsp := c.CDW10 >> 8 & 0x7F; lsp != 0 {
			return refuse("NVMe Get Log Page with log specific field %#x", lsp)
		}
		if lid == nvme.LogTelemetryController && c.CDW10&nvme.GetLogRAE == 0 {
			return refuse("NVMe Get Log Page %#02x without Retain Asynchronous Event", lid)
		}
		// NUMDL is dwords - 1; the controller must not write past the
		// buffer the kernel maps.
		if want := (c.CDW10>>16 + 1) * 4; c.DataLen < want {
			return refuse("NVMe Get Log Page of %d bytes into a %d-byte buffer", want, c.DataLen)
		}
	case nvme.AdminIdentify:
		cns := uint8(c.CDW10)
		if !slices.Contains(info.Targets, cns) {
			return refuse("NVMe Identify CNS %#02x", cns)
		}
		if c.DataLen < nvme.IdentifySize {
			return refuse("NVMe Identify into a %d-byte buffer", c.DataLen)
		}
	}
	return nil
}

func (c SCSI) check() error {
	if len(c.CDB) == 0 {
		return refuse("empty CDB")
	}
	op := c.CDB[0]
	if findCommand(scsiCommands, op) == nil {
		return refuse("SCSI opcode %#02x", op)
	}
	if c.Dir == DirToDevice {
		return refuse("SCSI opcode %#02x with data to the device", op)
	}
	if want := cdbLength(op); len(c.CDB) != want {
		return refuse("SCSI opcode %#02x with a %d-byte CDB (want %d)", op, len(c.CDB), want)
	}
	switch op {
	case scsi.OpInquiry:
		if c.CDB[1]&^0x01 != 0 {
			return refuse("INQUIRY with CMDDT or reserved bits set (%#02x)", c.CDB[1])
		}
		page := c.CDB[2]
		if c.CDB[1]&1 == 0 && page != 0 {
			return refuse("standard INQUIRY with page code %#02x", page)
		}
		if c.CDB[1]&1 == 1 && !slices.Contains(findCommand(scsiCommands, op).Targets, page) {
			return refuse("INQUIRY VPD page %#02x", page)
		}
	case scsi.OpLogSense:
		// SP=1 would make the device save its parameters: a write.
		if c.CDB[1]&0x03 != 0 {
			return refuse("LOG SENSE with SP/PPC set (%#02x)", c.CDB[1])
		}
		page, sub := c.CDB[2]&0x3F, c.CDB[3]
		if !slices.Contains(findCommand(scsiCommands, op).Targets, page) {
			return refuse("LOG SENSE page %#02x", page)
		}
		if sub != 0 && !(page == scsi.PageSupported && sub == 0xFF) {
			return refuse("LOG SENSE page %#02x subpage %#02x", page, sub)
		}
	case scsi.OpServiceActionIn16:
		if sa := c.CDB[1] & 0x1F; sa != scsi.SAReadCapacity16 {
			return refuse("SERVICE ACTION IN(16) action %#02x", sa)
		}
	case scsi.OpATAPassThrough16, scsi.OpATAPassThrough12:
		return checkATAPassThrough(c)
	}
	if c.Dir != DirFromDevice {
		return refuse("SCSI opcode %#02x must read data from the device, direction %s", op, c.Dir)
	}
	return nil
}

// cdbLength is the CDB size of each allowed SCSI opcode.
func cdbLength(op uint8) int {
	switch op {
	case scsi.OpInquiry:
		return 6
	case scsi.OpLogSense:
		return 10
	case scsi.OpATAPassThrough12:
		return 12
	}
	return 16 // SERVICE ACTION IN(16), ATA PASS-THROUGH(16)
}

// ataTaskfile is the ATA command an ATA PASS-THROUGH CDB carries.
type ataTaskfile struct {
	protocol, tDir, tLength uint8
	featuresHigh, features  uint8
	lbaLow, lbaMid, lbaHigh uint8
	command                 uint8
}

func decodePassThrough(cdb []byte) ataTaskfile {
	tf := ataTaskfile{protocol: cdb[1] >> 1 & 0x0F, tDir: cdb[2] >> 3 & 1, tLength: cdb[2] & 0x03}
	if cdb[0] == scsi.OpATAPassThrough16 {
		tf.featuresHigh, tf.features = cdb[3], cdb[4]
		tf.lbaLow, tf.lbaMid, tf.lbaHigh = cdb[8], cdb[10], cdb[12]
		tf.command = cdb[14]
	} else {
		tf.features = cdb[3]
		tf.lbaLow, tf.lbaMid, tf.lbaHigh = cdb[5], cdb[6], cdb[7]
		tf.command = cdb[9]
	}
	return tf
}

func checkATAPassThrough(c SCSI) error {
	tf := decodePassThrough(c.CDB)
	var info *CommandInfo
	for i := range ataCommands {
		a := &ataCommands[i]
		if a.Opcode == tf.command && (!a.HasFeature || a.Feature == tf.features) {
			info = a
			break
		}
	}
	if info == nil {
		if tf.command == ata.CmdSMART {
			return refuse("ATA SMART feature %#02x", tf.features)
		}
		return refuse("ATA command %#02x", tf.command)
	}
	if tf.featuresHigh != 0 || (!info.HasFeature && tf.features != 0) {
		return refuse("ATA %s with features %#02x%02x", info.Name, tf.featuresHigh, tf.features)
	}
	if info.Opcode == ata.CmdSMART && (tf.lbaMid != ata.SMARTLBAMid || tf.lbaHigh != ata.SMARTLBAHigh) {
		return refuse("ATA %s without the SMART key 4Fh/C2h", info.Name)
	}
	if info.Targets != nil && !slices.Contains(info.Targets, tf.lbaLow) {
		return refuse("ATA %s of log %#02x", info.Name, tf.lbaLow)
	}
	// The transfer must be what the command is: PIO in from the device, or
	// no data at all. Resets, DMA, data-out protocols are never used.
	switch info.Dir {
	case DirFromDevice:
		if tf.protocol != protoPIOIn || tf.tDir != 1 || tf.tLength == 0 || c.Dir != DirFromDevice {
			return refuse("ATA %s must be PIO data-in (protocol %d, t_dir %d, t_length %d, direction %s)", info.Name, tf.protocol, tf.tDir, tf.tLength, c.Dir)
		}
	case DirNone:
		if tf.protocol != protoNonData || tf.tLength != 0 || c.Dir != DirNone {
			return refuse("ATA %s must be non-data (protocol %d, t_length %d, direction %s)", info.Name, tf.protocol, tf.tLength, c.Dir)
		}
	}
	return nil
}

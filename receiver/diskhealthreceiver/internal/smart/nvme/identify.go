package nvme

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/ascii"
)

// Controller is the Identify Controller data structure, reduced to what the
// receiver reports or needs to decide which logs it may ask for.
type Controller struct {
	VendorID          uint16
	SubsystemVendorID uint16
	Serial            string
	Model             string
	Firmware          string
	IEEEOUI           uint32
	ControllerID      uint16
	// Version is VER: major in bits 31:16, minor 15:8, tertiary 7:0 (0 on
	// NVMe 1.0 controllers).
	Version uint32
	// OACS is the optional admin command support bit field.
	OACS uint16
	// LPA is the log page attributes bit field.
	LPA uint8
	// ErrorLogCapacity is ELPE + 1: entries the error log can hold.
	ErrorLogCapacity int
	// WarningTemp and CriticalTemp are WCTEMP and CCTEMP (0 = not
	// reported): the composite temperature at which the controller warns or
	// considers itself in danger.
	WarningTemp         Kelvin
	CriticalTemp        Kelvin
	TotalCapacity       Uint128 // TNVMCAP, bytes
	UnallocatedCapacity Uint128 // UNVMCAP, bytes
	// Namespaces is NN, the highest namespace ID the controller supports.
	Namespaces uint32
	SubNQN     string
}

// VersionString renders VER as "major.minor" (plus ".tertiary" when set).
func (c *Controller) VersionString() string {
	major, minor, ter := c.Version>>16, c.Version>>8&0xFF, c.Version&0xFF
	if ter != 0 {
		return fmt.Sprintf("%d.%d.%d", major, minor, ter)
	}
	return fmt.Sprintf("%d.%d", major, minor)
}

// OACS and LPA bits this package interprets.
const (
	oacsSelfTest         = 1 << 4
	lpaCommandsEffects   = 1 << 1
	lpaPerNamespaceSMART = 1 << 0
)

// SupportsLog reports whether the controller advertises log page lid. Asking
// for an unsupported log is not harmless: the failed command is counted in
// the SMART log's error-entry counter, which the health rules watch.
func (c *Controller) SupportsLog(lid uint8) bool {
	switch lid {
	case LogError, LogSMART, LogFirmwareSlot: // mandatory
		return true
	case LogCommandsEffects:
		return c.LPA&lpaCommandsEffects != 0
	case LogDeviceSelfTest:
		return c.OACS&oacsSelfTest != 0
	}
	return false
}

// PerNamespaceSMART reports whether the SMART log may be read per namespace
// (otherwise only controller-wide, NSID FFFFFFFFh).
func (c *Controller) PerNamespaceSMART() bool { return c.LPA&lpaPerNamespaceSMART != 0 }

// ParseIdentifyController decodes the 4096-byte Identify Controller data.
func ParseIdentifyController(b []byte) (*Controller, error) {
	if len(b) < IdentifySize {
		return nil, fmt.Errorf("nvme identify controller: %d bytes, want %d", len(b), IdentifySize)
	}
	c := &Controller{
		VendorID:            binary.LittleEndian.Uint16(b[0:]),
		SubsystemVendorID:   binary.LittleEndian.Uint16(b[2:]),
		Serial:              ascii.Clean(b[4:24]),
		Model:               ascii.Clean(b[24:64]),
		Firmware:            ascii.Clean(b[64:72]),
		IEEEOUI:             uint32(b[73]) | uint32(b[74])<<8 | uint32(b[75])<<16,
		ControllerID:        binary.LittleEndian.Uint16(b[78:]),
		Version:             binary.LittleEndian.Uint32(b[80:]),
		OACS:                binary.LittleEndian.Uint16(b[256:]),
		LPA:                 b[261],
		ErrorLogCapacity:    int(b[262]) + 1,
		WarningTemp:         Kelvin(binary.LittleEndian.Uint16(b[266:])),
		CriticalTemp:        Kelvin(binary.LittleEndian.Uint16(b[268:])),
		TotalCapacity:       uint128At(b[280:]),
		UnallocatedCapacity: uint128At(b[296:]),
		Namespaces:          binary.LittleEndian.Uint32(b[516:]),
		SubNQN:              ascii.Clean(b[768:1024]),
	}
	if c.Model == "" && c.Serial == "" && c.VendorID == 0 {
		return nil, errors.New("nvme identify controller: no model, serial or vendor (blank data)")
	}
	return c, nil
}

// Namespace is the Identify Namespace data structure, reduced.
type Namespace struct {
	// Size, Capacity and Utilization are NSZE, NCAP and NUSE in logical
	// blocks.
	Size        uint64
	Capacity    uint64
	Utilization uint64
	// Features is NSFEAT (byte 24); bit 0 says the namespace is thin provisioned (ThinProvisioned).
	Features uint8
	// LBASize is the formatted logical block size in bytes (0 for an
	// inactive namespace).
	LBASize      uint32
	MetadataSize uint16
	// NVMCapacity is NVMCAP in bytes (0 when not reported).
	NVMCapacity Uint128
	// NGUID and EUI64 are the namespace's globally unique identifiers; all
	// zero when not reported (QEMU, the Linux target).
	NGUID [16]byte
	EUI64 [8]byte
}

// SizeBytes is Size × LBASize, saturating at the largest uint64.
func (n *Namespace) SizeBytes() uint64 { return n.bytes(n.Size) }

// CapacityBytes is Capacity × LBASize (NCAP: what the namespace may allocate at most), saturating.
func (n *Namespace) CapacityBytes() uint64 { return n.bytes(n.Capacity) }

// UtilizationBytes is Utilization × LBASize (NUSE: what is allocated now), saturating. Only a thin
// provisioned namespace counts it; on any other the specification has NUSE equal NCAP.
func (n *Namespace) UtilizationBytes() uint64 { return n.bytes(n.Utilization) }

func (n *Namespace) bytes(blocks uint64) uint64 {
	v, _ := Uint128{Lo: blocks}.MulUint64(uint64(n.LBASize)).Uint64()
	return v
}

// nsfeatThin is NSFEAT bit 0: the namespace supports thin provisioning, and NUSE says what it uses.
const nsfeatThin = 1 << 0

// ThinProvisioned reports NSFEAT bit 0: the namespace supports thin provisioning, so NCAP may be below
// NSZE and NUSE is the blocks allocated now. Without it NUSE is NCAP by the specification, no usage.
func (n *Namespace) ThinProvisioned() bool { return n.Features&nsfeatThin != 0 }

// HasNGUID and HasEUI64 report whether the identifier was given.
func (n *Namespace) HasNGUID() bool { return n.NGUID != [16]byte{} }

// HasEUI64 reports whether the EUI64 was given.
func (n *Namespace) HasEUI64() bool { return n.EUI64 != [8]byte{} }

// ParseIdentifyNamespace decodes the 4096-byte Identify Namespace data. An
// inactive namespace (all zero) decodes to a zero Namespace.
func ParseIdentifyNamespace(b []byte) (*Namespace, error) {
	if len(b) < IdentifySize {
		return nil, fmt.Errorf("nvme identify namespace: %d bytes, want %d", len(b), IdentifySize)
	}
	n := &Namespace{
		Size:        binary.LittleEndian.Uint64(b[0:]),
		Capacity:    binary.LittleEndian.Uint64(b[8:]),
		Utilization: binary.LittleEndian.Uint64(b[16:]),
		Features:    b[24],
		NVMCapacity: uint128At(b[48:]),
	}
	copy(n.NGUID[:], b[104:120])
	copy(n.EUI64[:], b[120:128])
	if n.Size == 0 {
		return n, nil
	}
	// FLBAS bits 3:0 pick the format, bits 6:5 extend the index past 16.
	flbas := b[26]
	idx := int(flbas&0x0F) | int(flbas>>5&0x03)<<4
	if nlbaf := int(b[25]); idx > nlbaf {
		return nil, fmt.Errorf("nvme identify namespace: formatted LBA format %d beyond the %d formats listed", idx, nlbaf+1)
	}
	f := b[128+4*idx:]
	lbads := f[2]
	if lbads < 9 || lbads > 31 {
		return nil, fmt.Errorf("nvme identify namespace: LBA data size 2^%d bytes is not a block size", lbads)
	}
	n.LBASize = 1 << lbads
	n.MetadataSize = binary.LittleEndian.Uint16(f)
	return n, nil
}

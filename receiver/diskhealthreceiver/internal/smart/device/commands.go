package device

import (
	"encoding/binary"
	"fmt"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/scsi"
)

// ATA PASS-THROUGH(16) fields (SAT-5).
const (
	ataProtoNonData = 3
	ataProtoPIOIn   = 4

	ataCkCond    = 1 << 5
	ataTDirIn    = 1 << 3
	ataByteBlock = 1 << 2
	ataTLenCount = 2 // transfer length is in the COUNT field
)

// ataTask is an ATA command to wrap in ATA PASS-THROUGH(16).
type ataTask struct {
	command  uint8
	features uint16
	count    uint16
	lba      uint64 // 48 bits
	extend   bool   // 48-bit command
}

// smartTask is a SMART subcommand: the SMART key 4Fh/C2h sits in LBA
// bits 23:8, the log address (if any) in bits 7:0.
func smartTask(feature, lbaLow uint8, count uint16) ataTask {
	return ataTask{command: ata.CmdSMART, features: uint16(feature), count: count,
		lba: uint64(ata.SMARTLBAHigh)<<16 | uint64(ata.SMARTLBAMid)<<8 | uint64(lbaLow)}
}

func (t ataTask) cdb(protocol, flags uint8) []byte {
	cdb := make([]byte, 16)
	cdb[0] = scsi.OpATAPassThrough16
	cdb[1] = protocol << 1
	if t.extend {
		cdb[1] |= 1
	}
	cdb[2] = flags
	cdb[3], cdb[4] = uint8(t.features>>8), uint8(t.features)
	cdb[5], cdb[6] = uint8(t.count>>8), uint8(t.count)
	cdb[7], cdb[8] = uint8(t.lba>>24), uint8(t.lba)
	cdb[9], cdb[10] = uint8(t.lba>>32), uint8(t.lba>>8)
	cdb[11], cdb[12] = uint8(t.lba>>40), uint8(t.lba>>16)
	cdb[14] = t.command
	return cdb
}

// ataPIOIn runs a PIO data-in ATA command that reads len(data)/512 sectors.
func (c *Conn) ataPIOIn(name string, t ataTask, data []byte) error {
	return c.scsiIn(name, t.cdb(ataProtoPIOIn, ataTDirIn|ataByteBlock|ataTLenCount), data)
}

// ataNonData runs a non-data ATA command with CK_COND set, so the drive's
// output registers come back in the sense data (the only way to see the
// answer of CHECK POWER MODE and SMART RETURN STATUS).
func (c *Conn) ataNonData(name string, t ataTask) (scsi.ATARegisters, error) {
	s, err := c.sendSCSI(name, t.cdb(ataProtoNonData, ataCkCond), smart.DirNone, nil)
	if err != nil {
		return scsi.ATARegisters{}, err
	}
	if s == nil {
		return scsi.ATARegisters{}, &CommandError{Command: name, Err: fmt.Errorf("%w: no ATA registers returned", ErrUnsupported)}
	}
	regs, ok := s.ATA()
	if !ok {
		return scsi.ATARegisters{}, &CommandError{Command: name, Err: &SenseError{Sense: s}}
	}
	if regs.Status&0x01 != 0 { // ERR: the drive aborted the command
		return regs, &CommandError{Command: name, Err: fmt.Errorf("%w: ATA error %#02x, status %#02x", ErrUnsupported, regs.Error, regs.Status)}
	}
	return regs, nil
}

// CheckPowerMode asks an ATA drive its power state without waking it.
func (c *Conn) CheckPowerMode() (ata.PowerMode, error) {
	regs, err := c.ataNonData("CHECK POWER MODE", ataTask{command: ata.CmdCheckPowerMode})
	return ata.PowerMode(regs.Count), err
}

// SMARTReadLog reads sectors of a SMART log from its first page.
func (c *Conn) SMARTReadLog(log uint8, sectors uint16) ([]byte, error) {
	b := make([]byte, int(sectors)*ata.PageSize)
	return b, c.ataPIOIn(fmt.Sprintf("SMART READ LOG %02Xh", log), smartTask(ata.SMARTReadLog, log, sectors), b)
}

// ReadLogExt reads pages of a general purpose log from page.
func (c *Conn) ReadLogExt(log uint8, page, pages uint16) ([]byte, error) {
	b := make([]byte, int(pages)*ata.PageSize)
	t := ataTask{command: ata.CmdReadLogExt, count: pages, extend: true,
		lba: uint64(page>>8)<<40 | uint64(page&0xFF)<<8 | uint64(log)}
	return b, c.ataPIOIn(fmt.Sprintf("READ LOG EXT %02Xh page %d", log, page), t, b)
}

// SMARTReturnStatus asks the drive's own verdict.
func (c *Conn) SMARTReturnStatus() (ata.SMARTStatus, error) {
	regs, err := c.ataNonData("SMART RETURN STATUS", smartTask(ata.SMARTReturnStatus, 0, 0))
	if err != nil {
		return ata.SMARTStatusUnknown, err
	}
	st, err := ata.ParseReturnStatus(regs.LBAMid(), regs.LBAHigh())
	if err != nil {
		return st, &CommandError{Command: "SMART RETURN STATUS", Err: err}
	}
	return st, nil
}

// NVMeIdentify reads an Identify data structure.
func (c *Conn) NVMeIdentify(cns uint8, nsid uint32) ([]byte, error) {
	b := make([]byte, nvme.IdentifySize)
	cmd := smart.NVMeAdmin{Opcode: nvme.AdminIdentify, NSID: nsid, CDW10: uint32(cns), DataLen: uint32(len(b))}
	return b, c.nvmeAdmin(fmt.Sprintf("NVMe Identify CNS %02Xh", cns), cmd, b)
}

// NVMeGetLog reads size bytes of a log page.
func (c *Conn) NVMeGetLog(lid uint8, nsid uint32, size int) ([]byte, error) {
	return c.nvmeGetLog(lid, nsid, size, 0)
}

// NVMeGetLogRetain reads size bytes of a log page with Retain Asynchronous
// Event set: a pending event of that log (an error, telemetry saved) stays
// pending for the host's own tools.
func (c *Conn) NVMeGetLogRetain(lid uint8, nsid uint32, size int) ([]byte, error) {
	return c.nvmeGetLog(lid, nsid, size, nvme.GetLogRAE)
}

func (c *Conn) nvmeGetLog(lid uint8, nsid uint32, size int, flags uint32) ([]byte, error) {
	b := make([]byte, size)
	numdl := uint32(size/4 - 1)
	cmd := smart.NVMeAdmin{Opcode: nvme.AdminGetLogPage, NSID: nsid, CDW10: numdl<<16 | flags | uint32(lid), DataLen: uint32(size)}
	return b, c.nvmeAdmin(fmt.Sprintf("NVMe Get Log Page %02Xh", lid), cmd, b)
}

// Inquiry reads standard INQUIRY data (evpd false) or a VPD page.
func (c *Conn) Inquiry(evpd bool, page uint8, alloc uint16) ([]byte, error) {
	b := make([]byte, alloc)
	cdb := []byte{scsi.OpInquiry, 0, page, uint8(alloc >> 8), uint8(alloc), 0}
	name := "INQUIRY"
	if evpd {
		cdb[1] = 1
		name = fmt.Sprintf("INQUIRY VPD %02Xh", page)
	}
	return b, c.scsiIn(name, cdb, b)
}

// LogSense reads the cumulative values of a log page.
func (c *Conn) LogSense(page, subpage uint8, alloc uint16) ([]byte, error) {
	b := make([]byte, alloc)
	const pcCumulative = 1 << 6
	cdb := []byte{scsi.OpLogSense, 0, pcCumulative | page, subpage, 0, 0, 0, uint8(alloc >> 8), uint8(alloc), 0}
	return b, c.scsiIn(fmt.Sprintf("LOG SENSE %02Xh", page), cdb, b)
}

// ReadCapacity16 reads READ CAPACITY(16) parameter data.
func (c *Conn) ReadCapacity16() ([]byte, error) {
	b := make([]byte, 32)
	cdb := make([]byte, 16)
	cdb[0], cdb[1] = scsi.OpServiceActionIn16, scsi.SAReadCapacity16
	binary.BigEndian.PutUint32(cdb[10:14], uint32(len(b)))
	return b, c.scsiIn("READ CAPACITY(16)", cdb, b)
}

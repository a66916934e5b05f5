//go:build linux

package device

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart"
)

const (
	ioctlSGIO          = 0x2285     // SG_IO
	ioctlNVMeAdminCmd  = 0xC0484E41 // NVME_IOCTL_ADMIN_CMD: _IOWR('N', 0x41, struct nvme_admin_cmd)
	sgInterfaceID      = 'S'
	sgDxferNone        = -1
	sgDxferFromDev     = -3
	maxCommandTimeout  = time.Minute
	minCommandTimeoutM = 1
)

// sgIOHdr is struct sg_io_hdr (include/scsi/sg.h); Go lays it out as C does
// on every Linux architecture.
type sgIOHdr struct {
	interfaceID    int32
	dxferDirection int32
	cmdLen         uint8
	mxSbLen        uint8
	iovecCount     uint16
	dxferLen       uint32
	dxferp         unsafe.Pointer
	cmdp           unsafe.Pointer
	sbp            unsafe.Pointer
	timeout        uint32
	flags          uint32
	packID         int32
	usrPtr         unsafe.Pointer
	status         uint8
	maskedStatus   uint8
	msgStatus      uint8
	sbLenWr        uint8
	hostStatus     uint16
	driverStatus   uint16
	resid          int32
	duration       uint32
	info           uint32
}

// nvmeAdminCmd is struct nvme_admin_cmd (include/uapi/linux/nvme_ioctl.h).
type nvmeAdminCmd struct {
	opcode      uint8
	flags       uint8
	rsvd1       uint16
	nsid        uint32
	cdw2, cdw3  uint32
	metadata    uint64
	addr        uint64
	metadataLen uint32
	dataLen     uint32
	cdw10       uint32
	cdw11       uint32
	cdw12       uint32
	cdw13       uint32
	cdw14       uint32
	cdw15       uint32
	timeoutMs   uint32
	result      uint32
}

// nodeTransport is an open device node.
type nodeTransport struct{ fd int }

// OpenNode opens a device node read-only and non-blocking: O_RDONLY never
// makes udev see a "change" on close, and O_NONBLOCK opens a drive without
// media or a tray without waiting.
func OpenNode(node string) (Transport, error) {
	fd, err := unix.Open(node, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", node, classifyErrno(err))
	}
	return &nodeTransport{fd: fd}, nil
}

func millis(d time.Duration) uint32 {
	return uint32(max(min(d, maxCommandTimeout).Milliseconds(), minCommandTimeoutM))
}

func (t *nodeTransport) SCSI(cdb []byte, dir smart.Direction, data, sense []byte, timeout time.Duration) (SCSIStatus, error) {
	h := sgIOHdr{
		interfaceID:    sgInterfaceID,
		dxferDirection: sgDxferNone,
		cmdLen:         uint8(len(cdb)),
		mxSbLen:        uint8(min(len(sense), 255)),
		cmdp:           unsafe.Pointer(&cdb[0]),
		timeout:        millis(timeout),
	}
	if len(sense) > 0 {
		h.sbp = unsafe.Pointer(&sense[0])
	}
	if dir == smart.DirFromDevice && len(data) > 0 {
		h.dxferDirection = sgDxferFromDev
		h.dxferLen = uint32(len(data))
		h.dxferp = unsafe.Pointer(&data[0])
	}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(t.fd), ioctlSGIO, uintptr(unsafe.Pointer(&h)))
	runtime.KeepAlive(cdb)
	runtime.KeepAlive(data)
	runtime.KeepAlive(sense)
	if errno != 0 {
		return SCSIStatus{}, errno
	}
	return SCSIStatus{Status: h.status, HostStatus: h.hostStatus, DriverStatus: h.driverStatus, SenseLen: int(h.sbLenWr)}, nil
}

func (t *nodeTransport) NVMeAdmin(cmd smart.NVMeAdmin, data []byte, timeout time.Duration) error {
	if len(data) < int(cmd.DataLen) {
		return fmt.Errorf("NVMe admin buffer of %d bytes for %d", len(data), cmd.DataLen)
	}
	c := nvmeAdminCmd{opcode: cmd.Opcode, nsid: cmd.NSID, cdw10: cmd.CDW10, dataLen: cmd.DataLen, timeoutMs: millis(timeout)}
	if cmd.DataLen > 0 {
		c.addr = uint64(uintptr(unsafe.Pointer(&data[0])))
	}
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(t.fd), ioctlNVMeAdminCmd, uintptr(unsafe.Pointer(&c)))
	runtime.KeepAlive(data)
	if errno != 0 {
		return errno
	}
	if r != 0 {
		return &NVMeStatusError{Status: uint16(r)}
	}
	return nil
}

func (t *nodeTransport) Close() error { return unix.Close(t.fd) }

package dm

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

var (
	// ErrPermission is matched by every *PermissionError.
	ErrPermission = errors.New("device-mapper ioctls need CAP_SYS_ADMIN")
	// ErrUnsupported means not on Linux, or no device-mapper in the kernel.
	ErrUnsupported = errors.New("device-mapper is not available")
)

// PermissionError is an EACCES or EPERM from the control node's open or
// an ioctl: the collector lacks CAP_SYS_ADMIN (or read access to
// /dev/mapper/control).
type PermissionError struct {
	Op  string // "open /dev/mapper/control", "DM_LIST_DEVICES", ...
	Err error  // the errno
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("%s: %v (device-mapper status needs CAP_SYS_ADMIN)", e.Op, e.Err)
}

// Unwrap returns the errno the kernel answered.
func (e *PermissionError) Unwrap() error { return e.Err }

// Is makes every *PermissionError match ErrPermission.
func (e *PermissionError) Is(target error) bool { return target == ErrPermission }

// wrapErrno turns a permission errno into a *PermissionError.
func wrapErrno(op string, err error) error {
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		return &PermissionError{Op: op, Err: err}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// IoctlFunc performs one ioctl on the control node with buf as the
// argument; the Linux implementation is a plain system call, tests use a
// fake kernel.
type IoctlFunc func(number uint32, buf []byte) error

// Client speaks the dm ioctl protocol through an IoctlFunc, checking the
// allowlist before every call.
type Client struct {
	ioctl IoctlFunc
	// bufSize is the answer buffer to start with; it doubles (up to
	// maxBuffer) when the kernel says the answer did not fit.
	bufSize int
}

const (
	initialBuffer = 16 << 10
	maxBuffer     = 8 << 20
)

// NewClient returns a Client that sends ioctls through fn.
func NewClient(fn IoctlFunc) *Client { return &Client{ioctl: fn, bufSize: initialBuffer} }

// alignedBuffer returns n zeroed bytes at an 8-byte-aligned address, as
// the kernel's structs expect.
func alignedBuffer(n int) []byte {
	words := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
}

var ioctlNames = map[uint32]string{IoctlVersion: "DM_VERSION", IoctlListDevices: "DM_LIST_DEVICES", IoctlTableStatus: "DM_TABLE_STATUS"}

// call sends one allowed ioctl, growing the buffer while the kernel sets
// DM_BUFFER_FULL_FLAG, and returns the answer's header and bytes.
func (c *Client) call(number, flags uint32, dev uint64) (header, []byte, error) {
	name := ioctlNames[number]
	if err := Allowed(number, flags); err != nil {
		return header{}, nil, err
	}
	for size := c.bufSize; ; size *= 2 {
		buf := alignedBuffer(size)
		encodeRequest(buf, flags, dev)
		if err := c.ioctl(number, buf); err != nil {
			return header{}, nil, wrapErrno(name, err)
		}
		h, err := decodeHeader(buf)
		if err != nil {
			return h, nil, fmt.Errorf("%s: %w", name, err)
		}
		if h.Flags&flagBufferFull == 0 {
			c.bufSize = max(c.bufSize, size)
			return h, buf, nil
		}
		if size*2 > maxBuffer {
			return h, nil, fmt.Errorf("%s: answer larger than %d bytes", name, maxBuffer)
		}
	}
}

// Version returns the kernel's dm ioctl interface version.
func (c *Client) Version() ([3]uint32, error) {
	h, _, err := c.call(IoctlVersion, 0, 0)
	if err != nil {
		return [3]uint32{}, err
	}
	if h.Version[0] != requestVersion[0] {
		return h.Version, fmt.Errorf("device-mapper interface %d.%d.%d, want major %d: %w", h.Version[0], h.Version[1], h.Version[2], requestVersion[0], ErrUnsupported)
	}
	return h.Version, nil
}

// Device is one dm device with its active table's targets.
type Device struct {
	Name string // dm name: "vg-lv", "mpatha"
	UUID string // "LVM-<vg uuid><lv uuid>[-layer]", "mpath-<wwid>", "" when none
	// Major and Minor are the block device's numbers (dm-<Minor> in sysfs).
	Major, Minor uint32
	OpenCount    int32
	ReadOnly     bool
	Suspended    bool
	// Targets are the active table's lines with both Status and Table set;
	// empty when the device has no active table.
	Targets []Target
}

// KernelName is the device's sysfs and diskstats name, "dm-<minor>".
func (d Device) KernelName() string { return fmt.Sprintf("dm-%d", d.Minor) }

// List returns the names and numbers of every dm device.
func (c *Client) List() ([]Device, error) {
	h, buf, err := c.call(IoctlListDevices, 0, 0)
	if err != nil {
		return nil, err
	}
	data, err := h.data(buf)
	if err != nil {
		return nil, fmt.Errorf("DM_LIST_DEVICES: %w", err)
	}
	listed, err := decodeNameList(data)
	if err != nil {
		return nil, fmt.Errorf("DM_LIST_DEVICES: %w", err)
	}
	out := make([]Device, len(listed))
	for i, l := range listed {
		maj, mnr := DevMajorMinor(l.Dev)
		out[i] = Device{Name: l.Name, Major: maj, Minor: mnr}
	}
	return out, nil
}

// Status fills d (looked up by its device number) with its flags, UUID
// and targets: two DM_TABLE_STATUS calls, one for the status lines and one
// for the table lines.
func (c *Client) Status(d *Device) error {
	dev := uint64(d.Minor&0xFF) | uint64(d.Major&0xFFF)<<8 | uint64(d.Minor&^0xFF)<<12 | uint64(d.Major&^0xFFF)<<32
	var lines [2][]Target
	for i, flags := range []uint32{flagNoFlush, flagNoFlush | flagStatusTable} {
		h, buf, err := c.call(IoctlTableStatus, flags, dev)
		if err != nil {
			return fmt.Errorf("%s: %w", d.Name, err)
		}
		data, err := h.data(buf)
		if err != nil {
			return fmt.Errorf("%s: DM_TABLE_STATUS: %w", d.Name, err)
		}
		if lines[i], err = decodeTargets(data, h.TargetCount); err != nil {
			return fmt.Errorf("%s: DM_TABLE_STATUS: %w", d.Name, err)
		}
		if i == 0 {
			d.Name, d.UUID, d.OpenCount = h.Name, h.UUID, h.OpenCount
			d.ReadOnly, d.Suspended = h.Flags&flagReadOnly != 0, h.Flags&flagSuspend != 0
		}
	}
	if len(lines[0]) != len(lines[1]) {
		return fmt.Errorf("%s: table changed between status and table reads", d.Name)
	}
	d.Targets = lines[0]
	for i := range d.Targets {
		if lines[1][i].Type != d.Targets[i].Type || lines[1][i].Start != d.Targets[i].Start {
			return fmt.Errorf("%s: table changed between status and table reads", d.Name)
		}
		d.Targets[i].Table = lines[1][i].Status
	}
	return nil
}

//go:build linux

package dm

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ControlPath is the device-mapper control node.
const ControlPath = "/dev/mapper/control"

// Control is an open control node.
type Control struct {
	*Client
	fd int
}

// OpenControl opens the control node read-only. ENOENT (no dm module, or
// no /dev inside a container) is reported as ErrUnsupported; EACCES/EPERM
// as a *PermissionError.
func OpenControl(path string) (*Control, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENODEV) {
			return nil, errors.Join(wrapErrno("open "+path, err), ErrUnsupported)
		}
		return nil, wrapErrno("open "+path, err)
	}
	c := &Control{fd: fd}
	c.Client = NewClient(c.ioctl)
	return c, nil
}

// ioctl is the system call; Client.call has checked Allowed already, and
// it is checked again here, at the last point before the kernel.
func (c *Control) ioctl(number uint32, buf []byte) error {
	if len(buf) < headerSize {
		return errShort
	}
	flags := *(*uint32)(unsafe.Pointer(&buf[28]))
	if err := Allowed(number, flags); err != nil {
		return err
	}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(c.fd), uintptr(number), uintptr(unsafe.Pointer(&buf[0])))
	if errno != 0 {
		return errno
	}
	return nil
}

// Close closes the control node.
func (c *Control) Close() error { return unix.Close(c.fd) }

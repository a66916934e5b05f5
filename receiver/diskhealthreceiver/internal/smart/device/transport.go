package device

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/scsi"
)

// Transport sends commands to one open device node: the ioctl layer, or a
// test double. It checks nothing itself; Conn has asked smart.Allowed first.
type Transport interface {
	// SCSI sends cdb with SG_IO. data is the data-in buffer (nil for no
	// data); sense receives sense data on CHECK CONDITION.
	SCSI(cdb []byte, dir smart.Direction, data, sense []byte, timeout time.Duration) (SCSIStatus, error)
	// NVMeAdmin sends an admin command into data (len(data) == DataLen).
	// A non-zero NVMe completion status is returned as *NVMeStatusError.
	NVMeAdmin(cmd smart.NVMeAdmin, data []byte, timeout time.Duration) error
	Close() error
}

// Opener opens a device node read-only.
type Opener func(node string) (Transport, error)

// SCSIStatus is what SG_IO reports about one command.
type SCSIStatus struct {
	Status       uint8  // SCSI status: 0 GOOD, 2 CHECK CONDITION
	HostStatus   uint16 // DID_*: 0 ok
	DriverStatus uint16 // DRIVER_*: 0 ok, 8 sense
	SenseLen     int
}

// SCSI status and host status values the layer interprets.
const (
	statusGood           = 0x00
	statusCheckCondition = 0x02
	hostTimeout          = 0x03 // DID_TIME_OUT
	driverSense          = 0x08
	driverTimeout        = 0x06
)

// Error classes. Every command error wraps at most one of them.
var (
	// ErrPermission: the kernel refused the command or the open for lack
	// of a privilege (CAP_SYS_RAWIO for ATA pass-through, CAP_SYS_ADMIN for
	// NVMe admin commands) or of file permissions on the node.
	ErrPermission = errors.New("refused for lack of privilege")
	// ErrUnsupported: the device or the path to it does not implement the
	// command (ILLEGAL REQUEST, an aborted ATA command, an NVMe invalid
	// field or log page).
	ErrUnsupported = errors.New("not supported by the device")
	// ErrTimeout: the command or the whole read did not finish in time.
	ErrTimeout = errors.New("timed out")
)

// CommandError names the command that failed.
type CommandError struct {
	Command string
	Err     error
}

func (e *CommandError) Error() string { return e.Command + ": " + e.Err.Error() }
func (e *CommandError) Unwrap() error { return e.Err }

// NVMeStatusError is a non-zero NVMe completion status (status code type
// in bits 10:8, status code in bits 7:0 of the value the kernel returns).
type NVMeStatusError struct{ Status uint16 }

func (e *NVMeStatusError) Error() string {
	return fmt.Sprintf("NVMe status %#04x (type %d, code %#02x)", e.Status, e.Status>>8&7, e.Status&0xFF)
}

// Unwrap classifies the generic "invalid" statuses as unsupported: invalid
// opcode (01h), invalid field (02h), invalid log page (09h).
func (e *NVMeStatusError) Unwrap() error {
	if e.Status>>8&7 == 0 && (e.Status&0xFF == 0x01 || e.Status&0xFF == 0x02 || e.Status&0xFF == 0x09) {
		return ErrUnsupported
	}
	if e.Status>>8&7 == 1 && e.Status&0xFF == 0x09 {
		return ErrUnsupported
	}
	return nil
}

// SenseError is a CHECK CONDITION the command did not expect.
type SenseError struct{ Sense *scsi.Sense }

func (e *SenseError) Error() string { return "check condition: " + e.Sense.String() }

// Unwrap: ILLEGAL REQUEST means the command (or pass-through) is not
// implemented; ABORTED COMMAND on ATA pass-through is the ATA command's
// abort, the drive's way of saying the same.
func (e *SenseError) Unwrap() error {
	switch e.Sense.Key {
	case scsi.KeyIllegalRequest, scsi.KeyAbortedCommand:
		return ErrUnsupported
	}
	return nil
}

// classifyErrno maps an ioctl or open errno onto the error classes.
func classifyErrno(err error) error {
	switch {
	case errors.Is(err, ErrPermission), errors.Is(err, ErrUnsupported), errors.Is(err, ErrTimeout):
		return err
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return fmt.Errorf("%w: %w", ErrPermission, err)
	case errors.Is(err, syscall.ETIMEDOUT):
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	case errors.Is(err, syscall.ENOTTY), errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.EOPNOTSUPP):
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return err
}

// Conn is an open device with the allowlist in front of it. Every method
// asks smart.Allowed with the exact CDB or admin command before the
// Transport sees it.
type Conn struct {
	t Transport
	// deadline bounds every command: its timeout is the time left.
	deadline time.Time
}

// NewConn wraps an open transport; commands must finish by deadline.
func NewConn(t Transport, deadline time.Time) *Conn { return &Conn{t: t, deadline: deadline} }

func (c *Conn) timeout() (time.Duration, error) {
	left := time.Until(c.deadline)
	if left <= 0 {
		return 0, ErrTimeout
	}
	return left, nil
}

// sendSCSI checks and sends a CDB. A CHECK CONDITION comes back as its
// decoded sense with a nil error; the caller decides what it means.
func (c *Conn) sendSCSI(name string, cdb []byte, dir smart.Direction, data []byte) (*scsi.Sense, error) {
	if err := smart.Allowed(smart.SCSI{CDB: cdb, Dir: dir}); err != nil {
		return nil, &CommandError{Command: name, Err: err}
	}
	to, err := c.timeout()
	if err != nil {
		return nil, &CommandError{Command: name, Err: err}
	}
	sense := make([]byte, 64)
	st, err := c.t.SCSI(cdb, dir, data, sense, to)
	if err != nil {
		return nil, &CommandError{Command: name, Err: classifyErrno(err)}
	}
	switch {
	case st.HostStatus == hostTimeout || st.DriverStatus&0x0F == driverTimeout:
		return nil, &CommandError{Command: name, Err: ErrTimeout}
	case st.HostStatus != 0:
		return nil, &CommandError{Command: name, Err: fmt.Errorf("host status %#x", st.HostStatus)}
	case st.Status == statusGood:
		return nil, nil
	case st.Status == statusCheckCondition:
		n := min(max(st.SenseLen, 0), len(sense))
		s, err := scsi.ParseSense(sense[:n])
		if err != nil {
			return nil, &CommandError{Command: name, Err: fmt.Errorf("check condition with unreadable sense: %w", err)}
		}
		return s, nil
	}
	return nil, &CommandError{Command: name, Err: fmt.Errorf("SCSI status %#02x", st.Status)}
}

// scsiIn sends a data-in command that must succeed.
func (c *Conn) scsiIn(name string, cdb, data []byte) error {
	s, err := c.sendSCSI(name, cdb, smart.DirFromDevice, data)
	if err != nil {
		return err
	}
	if s != nil && s.Key != scsi.KeyRecoveredError && s.Key != scsi.KeyNoSense {
		return &CommandError{Command: name, Err: &SenseError{Sense: s}}
	}
	return nil
}

// nvmeAdmin checks and sends an admin command.
func (c *Conn) nvmeAdmin(name string, cmd smart.NVMeAdmin, data []byte) error {
	if err := smart.Allowed(cmd); err != nil {
		return &CommandError{Command: name, Err: err}
	}
	to, err := c.timeout()
	if err != nil {
		return &CommandError{Command: name, Err: err}
	}
	if err := c.t.NVMeAdmin(cmd, data, to); err != nil {
		var st *NVMeStatusError
		if errors.As(err, &st) {
			return &CommandError{Command: name, Err: err}
		}
		return &CommandError{Command: name, Err: classifyErrno(err)}
	}
	return nil
}

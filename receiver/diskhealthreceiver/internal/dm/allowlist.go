package dm

import (
	"errors"
	"fmt"
	"slices"
)

// ErrNotAllowed is wrapped by every refusal of Allowed.
var ErrNotAllowed = errors.New("not on the read-only device-mapper ioctl allowlist")

// The ioctl numbers: _IOWR(0xFD, cmd, struct dm_ioctl) with the 312-byte
// struct. The encoding is the same on every Linux architecture for this
// size (read|write direction bits are 0xC0000000 both in the generic
// 2-bit and in the 3-bit powerpc/mips/sparc layouts).
const (
	cmdVersion     = 0  // DM_VERSION_CMD
	cmdListDevices = 2  // DM_LIST_DEVICES_CMD
	cmdTableStatus = 12 // DM_TABLE_STATUS_CMD

	ioctlBase = 0xC0000000 | headerSize<<16 | 0xFD<<8

	IoctlVersion     = ioctlBase | cmdVersion
	IoctlListDevices = ioctlBase | cmdListDevices
	IoctlTableStatus = ioctlBase | cmdTableStatus
)

// dm_ioctl flags this package uses.
const (
	flagReadOnly     = 1 << 0  // DM_READONLY_FLAG (out)
	flagSuspend      = 1 << 1  // DM_SUSPEND_FLAG (out)
	flagStatusTable  = 1 << 4  // DM_STATUS_TABLE_FLAG: the table instead of the status
	flagActive       = 1 << 5  // DM_ACTIVE_PRESENT_FLAG (out)
	flagInactive     = 1 << 6  // DM_INACTIVE_PRESENT_FLAG (out)
	flagBufferFull   = 1 << 8  // DM_BUFFER_FULL_FLAG (out): retry with more room
	flagNoFlush      = 1 << 11 // DM_NOFLUSH_FLAG: status without committing metadata
	flagUEventOutput = 1 << 13 // DM_UEVENT_GENERATED_FLAG (out)
)

// IoctlInfo documents one allowed ioctl.
type IoctlInfo struct {
	Name   string
	Number uint32
	// Required are flags every call must carry; Optional may be added.
	Required, Optional uint32
	Why                string
}

var allowed = []IoctlInfo{
	{Name: "DM_VERSION", Number: IoctlVersion, Why: "the interface version; first call, checks major 4"},
	{Name: "DM_LIST_DEVICES", Number: IoctlListDevices, Why: "names and device numbers of all dm devices"},
	{Name: "DM_TABLE_STATUS", Number: IoctlTableStatus, Required: flagNoFlush, Optional: flagStatusTable,
		Why: "a device's target status lines, or with DM_STATUS_TABLE_FLAG its table; DM_NOFLUSH_FLAG is required so thin-pool status commits no metadata"},
}

// AllowedIoctls lists every ioctl Allowed lets through.
func AllowedIoctls() []IoctlInfo { return slices.Clone(allowed) }

// Allowed reports whether an ioctl with these input flags may be sent.
// Every call site checks it right before the system call.
func Allowed(number uint32, flags uint32) error {
	for _, a := range allowed {
		if a.Number != number {
			continue
		}
		if flags&a.Required != a.Required {
			return fmt.Errorf("%s without flags %#x: %w", a.Name, a.Required&^flags, ErrNotAllowed)
		}
		if extra := flags &^ (a.Required | a.Optional); extra != 0 {
			return fmt.Errorf("%s with flags %#x: %w", a.Name, extra, ErrNotAllowed)
		}
		return nil
	}
	return fmt.Errorf("ioctl %#x: %w", number, ErrNotAllowed)
}

package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

// Status is the outcome of a mount's statfs, a low-cardinality reason fit
// for an attribute value.
type Status uint8

const (
	// StatusUnknown means not probed yet. Only seen as StateChange.From.
	StatusUnknown Status = iota
	// StatusOK means statfs succeeded.
	StatusOK
	// StatusTimeout means statfs did not return within the timeout, or an
	// earlier call still has not, or the mount has not yet answered a
	// background re-probe in time (it is stuck).
	StatusTimeout
	// StatusPermission is EACCES, EPERM.
	StatusPermission
	// StatusNotFound is ENOENT, ENOTDIR; typically the mount went away
	// between reading the mount table and statfs, or root_path does not
	// show it.
	StatusNotFound
	// StatusIOError is EIO, ESTALE, ENOTCONN, and the network failures
	// ETIMEDOUT, EREMOTEIO, EHOSTDOWN that a remote filesystem returns
	// when its server is unreachable.
	StatusIOError
	// StatusError is any other error.
	StatusError
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusTimeout:
		return "timeout"
	case StatusPermission:
		return "permission"
	case StatusNotFound:
		return "not_found"
	case StatusIOError:
		return "io_error"
	case StatusError:
		return "error"
	}
	return "unknown"
}

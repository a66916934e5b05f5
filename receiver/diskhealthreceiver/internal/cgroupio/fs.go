package cgroupio

import (
	"errors"
	"io/fs"
	"syscall"
)

// FS is the Collector's view of a cgroup hierarchy. Names are slash-separated and relative to the
// hierarchy's root ("" is the root itself, "kubepods.slice/io.stat" a file).
type FS interface {
	// ReadFile returns the whole content of the file, in buf when it fits (buf may be grown and is
	// returned for reuse).
	ReadFile(name string, buf []byte) ([]byte, error)
	// SubDirs appends the names of the directory's subdirectories (child cgroups) to dst.
	SubDirs(name string, dst []string) ([]string, error)
}

// isGone reports an error that means the cgroup was removed while it was being read: a normal event on a
// busy node (a container exits), not a failure.
func isGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENODEV)
}

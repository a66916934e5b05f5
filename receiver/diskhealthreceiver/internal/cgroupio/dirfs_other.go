//go:build !linux

package cgroupio

import "errors"

// errNeedsLinux: cgroup hierarchies are Linux's cgroupfs.
var errNeedsLinux = errors.New("cgroupio: cgroup files need Linux")

// DirFS reads nothing off Linux: every call fails.
type DirFS struct{}

// NewDirFS returns an FS whose reads fail off Linux.
func NewDirFS(string) *DirFS { return &DirFS{} }

// ReadFile fails off Linux.
func (*DirFS) ReadFile(_ string, buf []byte) ([]byte, error) { return buf[:0], errNeedsLinux }

// SubDirs fails off Linux.
func (*DirFS) SubDirs(_ string, dst []string) ([]string, error) { return dst, errNeedsLinux }

//go:build !linux

package cgroupio

// IDs fails off Linux: cgroup hierarchies are Linux's cgroupfs.
func IDs(string) (map[uint64]string, error) { return nil, errNeedsLinux }

//go:build unix

package diskstats

import "syscall"

// unlinked reports whether f's file lost its last name: renamed over or removed. fstat into a value on
// the stack allocates nothing, so it runs every read.
func unlinked(f File) bool {
	osf, ok := f.(interface{ Fd() uintptr })
	if !ok {
		return false // a test's file: never renamed
	}
	var st syscall.Stat_t
	return syscall.Fstat(int(osf.Fd()), &st) == nil && st.Nlink == 0
}

package testkit

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// ThreadCPU runs fn on one locked OS thread and returns the CPU time that thread spent: a cost bound a
// loaded machine cannot fail, unlike wall time (the garbage collector's other threads are not counted).
func ThreadCPU(tb testing.TB, fn func()) time.Duration {
	tb.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Rusage
	require.NoError(tb, unix.Getrusage(unix.RUSAGE_THREAD, &before))
	fn()
	require.NoError(tb, unix.Getrusage(unix.RUSAGE_THREAD, &after))
	return time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
}

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
	return cpuOf(tb, unix.RUSAGE_THREAD, fn)
}

// ProcessCPU returns the CPU time the whole process spent while fn ran: for work fn spreads over
// goroutines, which ThreadCPU does not see. Other goroutines of the process count too (the garbage
// collector's, a parallel test's), so a test using it must not run in parallel with others.
func ProcessCPU(tb testing.TB, fn func()) time.Duration {
	tb.Helper()
	return cpuOf(tb, unix.RUSAGE_SELF, fn)
}

func cpuOf(tb testing.TB, who int, fn func()) time.Duration {
	tb.Helper()
	var before, after unix.Rusage
	require.NoError(tb, unix.Getrusage(who, &before))
	fn()
	require.NoError(tb, unix.Getrusage(who, &after))
	return time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
}

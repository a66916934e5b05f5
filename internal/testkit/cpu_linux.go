package testkit

import (
	"runtime"
	"runtime/debug"
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
	return cpuOf(tb, unix.CLOCK_THREAD_CPUTIME_ID, fn)
}

// ProcessCPU returns the CPU time the whole process spent while fn ran: for work fn spreads over
// goroutines, which ThreadCPU does not see. Other goroutines of the process count too (the garbage
// collector's, a parallel test's), so a test using it must not run in parallel with others.
func ProcessCPU(tb testing.TB, fn func()) time.Duration {
	tb.Helper()
	return cpuOf(tb, unix.CLOCK_PROCESS_CPUTIME_ID, fn)
}

// cpuOf reads a CPU-time clock around fn: the scheduler's exact runtime, where getrusage's split into
// user and system time is sampled at the timer tick and can read 0 for a few milliseconds.
func cpuOf(tb testing.TB, clock int32, fn func()) time.Duration {
	tb.Helper()
	var before, after unix.Timespec
	require.NoError(tb, unix.ClockGettime(clock, &before))
	fn()
	require.NoError(tb, unix.ClockGettime(clock, &after))
	return time.Duration(after.Nano() - before.Nano())
}

// RequireLinear fails if the cost of an input grows faster than its size: it builds the input at n and
// at 10×n with setup (not measured), runs each five times, in turns so that both meet the same load,
// with the garbage collector paused (its cost follows the heap, not the algorithm), and compares the
// least CPU time of each, so that a preemption or a neighbour's burst does not count. Linear code costs
// ~10× at 10×n (up to ~16× once the larger input no longer fits the caches, or with a sort's log
// factor); the bound is 20×, and quadratic code pays 100×. measure is ThreadCPU for work on the calling
// goroutine, ProcessCPU for work spread over goroutines.
func RequireLinear(tb testing.TB, what string, n int, measure func(testing.TB, func()) time.Duration, setup func(n int) func()) {
	tb.Helper()
	runs := [2]func(){setup(n), setup(10 * n)}
	best := [2]time.Duration{-1, -1}
	for range 5 {
		for i, run := range runs {
			runtime.GC()
			gc := debug.SetGCPercent(-1)
			d := measure(tb, run)
			debug.SetGCPercent(gc)
			if best[i] < 0 || d < best[i] {
				best[i] = d
			}
		}
	}
	small, large := best[0], best[1]
	ratio := float64(large) / float64(max(small, time.Microsecond))
	tb.Logf("%s: %d → %v CPU, %d → %v CPU (%.1f×)", what, n, small, 10*n, large, ratio)
	require.Less(tb, ratio, 20.0, "%s: 10× the input costs %.1f× the CPU", what, ratio)
}

package testkit

// UncountedCompletions is how many of n block-layer completions the latency probe may miss with no drop
// or skipped program run to show for it. Under heavy load (a load average of 18 on 2 CPUs) one read of
// 2 389 was in no histogram and no counter, in 1 run of 30; on a quiet machine none was in hundreds of
// runs. The cause is not found (README, latency source); the bound, 1 per 1 000 begun, keeps the tests
// that compare the probe with /proc/diskstats exact to 0.1 %.
func UncountedCompletions(n uint64) uint64 {
	return (n + 999) / 1000
}

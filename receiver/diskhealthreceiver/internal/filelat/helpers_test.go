package filelat

import (
	"testing"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// requireRoot is the test kit's, with what this package's tests need root for.
func requireRoot(t testing.TB) {
	t.Helper()
	testkit.RequireRoot(t, "loads BPF, creates loop devices and mounts")
}

// roomy sizes a probe's tables for the whole machine. The probe counts every process's calls, and on a
// shared test host other tests (the filelat source's churn of 2 000 mounts and 5 000 cgroups, run in
// parallel by go test) would fill the default tables before the test's own calls come: stop 46's CI
// saw a busy host's cgroups fill the 1 024 per-cgroup entries. The tests hold their own series' counts.
func roomy(o Options) Options {
	o.MaxMounts, o.MaxCgroupSeries = 4096, 16384
	return o
}

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
)

// TestCgroupWritebackQEMU (issue 22, "done when" 1): the per-cgroup latency probe's
// TestCgroupWritebackChargedToOwner in the QEMU guest, the only cgroup v2 hierarchy with the io
// controller here (Debian's 6.1 kernel, so the probe's block_rq_issue owner path): buffered writes from
// cgroup A, flushed by writeback, are ≥ 99 % A's by the bio's owner, the histograms agree with io.stat
// within 1 %, and the PID-based attribution of the same writes, logged beside it, has them on the
// flusher's root cgroup. The guest program cgwbguest prepares the guest and runs the package's test
// binary, built here.
func TestCgroupWritebackQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED QEMU TEST (cgwbguest): -short")
	}
	kit := prepareVM(t)
	dir := t.TempDir()
	bins := map[string]string{"biolat.test": "../receiver/diskhealthreceiver/internal/biolat", "cgwbguest": "./internal/cgwbguest"}
	for bin, pkg := range bins {
		args := []string{"build", "-o", filepath.Join(dir, bin), pkg}
		if strings.HasSuffix(bin, ".test") {
			args = []string{"test", "-c", "-o", filepath.Join(dir, bin), pkg}
		}
		build := exec.Command("go", args...)
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "building %s: %s", pkg, out)
	}

	run := kit.bootWith(t, filepath.Join(dir, "cgwbguest"), map[string]string{"biolat.test": filepath.Join(dir, "biolat.test")}, 5*time.Minute, nil)
	t.Logf("VM run (kernel %s, boot to power-off): %v", kit.kver, run.took.Round(100*time.Millisecond))
	for line := range strings.Lines(run.log) {
		if strings.Contains(line, "io.stat") || strings.Contains(line, "write completions") || strings.Contains(line, "--- ") {
			t.Log(strings.TrimSpace(line))
		}
	}
	require.Contains(t, run.log, vmproto.MarkerExit+"0", "the test failed in the guest:\n%s", tail(run.log, 8000))
	require.Contains(t, run.log, "--- PASS: TestCgroupWritebackChargedToOwner", "the test did not run in the guest:\n%s", tail(run.log, 8000))
}

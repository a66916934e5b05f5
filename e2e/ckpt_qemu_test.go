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

// TestCheckpointProjectQuotaQEMU (issue 21, "done when" 1, project quotas): the filesystem source's
// TestFSScraperCheckpointSeededProjectQuota in the QEMU guest, whose Debian kernel has the XFS and ext4
// project quotas the CI host's kernel lacks: seeded checkpoint jobs saving into a directory under a
// project quota, on a loop-mounted XFS (-o prjquota) and ext4 (-O quota,project), the writer in its own
// cgroup v2; the project directory's will_fail comes at least one cadence before the quota refuses a
// write (XFS: ENOSPC, ext4: EDQUOT) in at least 19 of 20 runs. The guest program ckptguest prepares the
// guest and runs the package's test binary, built here.
func TestCheckpointProjectQuotaQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED QEMU TEST (ckptguest): -short")
	}
	kit := prepareVM(t)
	dir := t.TempDir()
	testBin := filepath.Join(dir, "fs.test")
	build := exec.Command("go", "test", "-c", "-o", testBin, "../receiver/diskhealthreceiver/internal/scraper/filesystemscraper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the filesystem source's tests: %s", out)
	guest := filepath.Join(dir, "ckptguest")
	build = exec.Command("go", "build", "-o", guest, "./internal/ckptguest")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	out, err = build.CombinedOutput()
	require.NoError(t, err, "building the guest program: %s", out)

	run := kit.bootWith(t, guest, map[string]string{"fs.test": testBin}, 20*time.Minute, nil)
	t.Logf("VM run (kernel %s, boot to power-off): %v", kit.kver, run.took.Round(100*time.Millisecond))
	for line := range strings.Lines(run.log) {
		if strings.Contains(line, "seed") || strings.Contains(line, "in time") {
			t.Log(strings.TrimSpace(line))
		}
	}
	require.Contains(t, run.log, vmproto.MarkerExit+"0", "the test failed in the guest:\n%s", tail(run.log, 8000))
	require.Contains(t, run.log, "--- PASS: TestFSScraperCheckpointSeededProjectQuota", "the test did not run in the guest:\n%s", tail(run.log, 8000))
}

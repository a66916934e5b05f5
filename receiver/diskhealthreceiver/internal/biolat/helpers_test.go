package biolat

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// inCI is how CI runs the tests (as root): there a missing peer fails the test instead of skipping it.
var inCI = os.Getenv("CI") == "true"

// skipOrFail skips loudly outside CI and fails in CI.
func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if inCI {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf("SKIPPED: "+format, args...)
}

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root (loads BPF, creates loop devices)")
	}
}

// requireTool returns the path of tool (a command, or a file when it has a slash), installing Debian's
// pkg when it is missing and we are root.
func requireTool(t testing.TB, pkg, tool string) string {
	t.Helper()
	if p, err := lookTool(tool); err == nil {
		return p
	}
	if os.Geteuid() != 0 {
		skipOrFail(t, "%s is not installed and installing %s needs root", tool, pkg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"apt-get", "update"}, {"apt-get", "install", "-y", "--no-install-recommends", pkg}} {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			skipOrFail(t, "cannot install %s: %s: %v\n%s", pkg, strings.Join(args, " "), err, out)
		}
	}
	p, err := lookTool(tool)
	if err != nil {
		skipOrFail(t, "%s installed but %s is not on PATH: %v", pkg, tool, err)
	}
	return p
}

func lookTool(tool string) (string, error) {
	if strings.Contains(tool, "/") {
		_, err := os.Stat(tool)
		return tool, err
	}
	return exec.LookPath(tool)
}

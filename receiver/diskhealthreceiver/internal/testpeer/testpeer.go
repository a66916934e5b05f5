// Package testpeer is what the receiver's own tests use to get the real peers they compare against
// (fio, btrfs-progs, e2fsprogs, clang-14 …): install a Debian package on demand, or end the test saying
// why not. With CI=true a peer that cannot be had fails the test; elsewhere the test skips loudly.
// Only _test files import it (TestLayout checks that nothing the receiver is built from does): it runs
// apt-get, which the receiver never may.
package testpeer // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/testpeer"

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// InCI is how CI runs the tests (as root, CI=true).
var InCI = os.Getenv("CI") == "true"

// Unavailable ends a test that cannot have what it needs: a failure in CI, a loud skip elsewhere.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf("SKIPPED: "+format, args...)
}

// RequireRoot ends the test through Unavailable unless it runs as root; what says what needs it.
func RequireRoot(t testing.TB, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "needs root (%s)", what)
	}
}

// updated runs apt-get update once per test binary.
var updated = sync.OnceValues(func() ([]byte, error) { return apt("update") })

func apt(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"-o", "DPkg::Lock::Timeout=300"}, args...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	return cmd.CombinedOutput()
}

// Tool returns the path of tool (a command, or a file when it has a slash), installing Debian's pkg
// when it is missing and the test runs as root.
func Tool(t testing.TB, pkg, tool string) string {
	t.Helper()
	if p, err := look(tool); err == nil {
		return p
	}
	if os.Geteuid() != 0 {
		Unavailable(t, "%s is not installed and installing %s needs root", tool, pkg)
	}
	if out, err := updated(); err != nil {
		Unavailable(t, "cannot install %s: apt-get update: %v\n%s", pkg, err, out)
	}
	if out, err := apt("install", "-y", "--no-install-recommends", pkg); err != nil {
		Unavailable(t, "cannot install %s: apt-get install: %v\n%s", pkg, err, out)
	}
	p, err := look(tool)
	if err != nil {
		Unavailable(t, "%s installed but %s is not found: %v", pkg, tool, err)
	}
	return p
}

func look(tool string) (string, error) {
	if strings.Contains(tool, "/") {
		_, err := os.Stat(tool)
		return tool, err
	}
	if p, err := exec.LookPath(tool); err == nil {
		return p, nil
	}
	// root's tools (mkfs.*, losetup) live in sbin, which a test's PATH may lack
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if _, err := os.Stat(dir + "/" + tool); err == nil {
			return dir + "/" + tool, nil
		}
	}
	return "", exec.ErrNotFound
}

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// Peers that Debian does not have (or has too old: its victoria-metrics 1.79 drops native histograms)
// are built from source with the Go toolchain, pinned like ocb, and kept in the checkout's .tools as
// <name>-<version>, so a machine builds each once. The test that needs one builds it on first use.
type goPeer struct{ name, pkg, version string }

var (
	victoriaMetrics = goPeer{"victoria-metrics", "github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics", "v1.151.0"}
	victoriaLogs    = goPeer{"victoria-logs", "github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs", "v1.52.1"}
)

// toolsDir is the checkout's .tools (ocb and golangci-lint live there too).
const toolsDir = "../.tools"

// path returns the peer's binary, building it the first time. A lock file keeps two test binaries
// (two packages, or a second checkout sharing .tools) from building it at once.
func (p goPeer) path(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(toolsDir)
	if err != nil {
		testkit.Unavailable(t, "%v", err)
	}
	bin := filepath.Join(dir, p.name+"-"+p.version)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		testkit.Unavailable(t, "cannot build %s: %v", p.name, err)
	}
	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		testkit.Unavailable(t, "cannot build %s: %v", p.name, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		testkit.Unavailable(t, "cannot build %s: lock: %v", p.name, err)
	}
	// Closing the file releases the lock. Whoever held it before may have built the peer meanwhile.
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	gobin, err := os.MkdirTemp(dir, "."+p.name+"-")
	if err != nil {
		testkit.Unavailable(t, "cannot build %s: %v", p.name, err)
	}
	defer func() { _ = os.RemoveAll(gobin) }()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "install", p.pkg+"@"+p.version)
	// -mod=mod: `go install pkg@version` ignores this module's go.mod; the flag keeps a GOFLAGS=-mod=vendor
	// or readonly from the environment from refusing the download.
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		testkit.Unavailable(t, "cannot build %s %s: go install: %v\n%s", p.name, p.version, err, out)
	}
	if err := os.Rename(filepath.Join(gobin, p.name), bin); err != nil {
		testkit.Unavailable(t, "cannot build %s: %v", p.name, err)
	}
	t.Logf("built %s %s into %s in %v", p.name, p.version, bin, time.Since(start).Round(time.Second))
	return bin
}

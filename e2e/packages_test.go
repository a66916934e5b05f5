package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The one way the tests get the peers they compare with (sysstat, df, mkfs, Prometheus, QEMU, a Debian
// kernel ...): a tool already on PATH is used, a missing one is installed from its Debian package.
// A peer that cannot be had ends the test through unavailable: in CI a failure, since CI must never go
// green with a comparison gone; elsewhere a loud skip, for a developer without root or apt-get.

// inCI says whether the tests run in CI (CI=true, as CI services set it).
func inCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// unavailable ends a test that cannot have what it needs: it fails in CI and skips, saying why, elsewhere.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if inCI() {
		t.Fatalf("%s (with CI=true a peer that cannot be had fails the test)", msg)
	}
	t.Skipf("SKIPPED: %s", msg)
}

// requireRoot ends the test through unavailable unless it runs as root.
func requireRoot(t testing.TB, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "%s needs root; run `make test` as root (CI does)", what)
	}
}

// aptInstaller runs apt-get for the tests: update at most once per test binary, install on demand.
type aptInstaller struct {
	euid      func() int // os.Geteuid; the installer's own test pretends not to be root
	once      sync.Once
	updateErr error
}

// debian is the installer every test uses.
var debian = &aptInstaller{euid: os.Geteuid}

// aptGet runs apt-get non-interactively in dir ("" for the current one).
func aptGet(dir string, timeout time.Duration, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// update refreshes the package lists the first time it is called; later calls return its result.
func (a *aptInstaller) update() error {
	a.once.Do(func() { a.updateErr = aptGet("", 10*time.Minute, "update") })
	return a.updateErr
}

// install installs Debian packages.
func (a *aptInstaller) install(pkgs ...string) error {
	if a.euid() != 0 {
		return fmt.Errorf("installing %s needs root", strings.Join(pkgs, " "))
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("no apt-get to install %s: %w", strings.Join(pkgs, " "), err)
	}
	if err := a.update(); err != nil {
		return err
	}
	// Another apt (a test binary of another checkout on the same machine) may hold the dpkg lock:
	// wait for it instead of failing.
	args := append([]string{"-o", "DPkg::Lock::Timeout=300", "install", "-y", "--no-install-recommends"}, pkgs...)
	return aptGet("", 15*time.Minute, args...)
}

// download fetches a package's .deb into dir without installing it and returns its path.
func (a *aptInstaller) download(pkg, dir string) (string, error) {
	if err := aptGet(dir, 10*time.Minute, "download", pkg); err != nil {
		return "", err
	}
	debs, err := filepath.Glob(filepath.Join(dir, "*.deb"))
	if err != nil || len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s left %v in %s (%v)", pkg, debs, dir, err)
	}
	return debs[0], nil
}

// tools returns the path of each tool (command → the Debian package that provides it), installing
// the packages of the missing ones in one apt-get run. A tool it cannot have ends the test through
// unavailable.
func (a *aptInstaller) tools(t testing.TB, want map[string]string) map[string]string {
	t.Helper()
	paths := map[string]string{}
	var missing []string
	for tool, pkg := range want {
		if p, err := lookCommand(tool); err == nil {
			paths[tool] = p
		} else if !slices.Contains(missing, pkg) {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return paths
	}
	slices.Sort(missing)
	if err := a.install(missing...); err != nil {
		unavailable(t, "cannot install %s: %v", strings.Join(missing, " "), err)
	}
	for tool, pkg := range want {
		if paths[tool] != "" {
			continue
		}
		p, err := lookCommand(tool)
		if err != nil {
			unavailable(t, "%s is installed but %v", pkg, err)
		}
		paths[tool] = p
	}
	return paths
}

// needTool returns the path of one tool, installed from pkg if it is missing.
func needTool(t testing.TB, tool, pkg string) string {
	t.Helper()
	return debian.tools(t, map[string]string{tool: pkg})[tool]
}

// sbinDirs hold system tools (losetup, mkfs.*, modprobe) that a non-login PATH may lack.
var sbinDirs = []string{"/usr/sbin", "/sbin"}

// toolPath is a PATH= entry for a child that runs the tools by name: PATH and sbinDirs.
func toolPath() string {
	return "PATH=" + strings.Join(append([]string{os.Getenv("PATH")}, sbinDirs...), ":")
}

// lookCommand finds a command on PATH or in sbinDirs.
func lookCommand(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range sbinDirs {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found on PATH, /usr/sbin or /sbin", name)
}

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
		unavailable(t, "%v", err)
	}
	bin := filepath.Join(dir, p.name+"-"+p.version)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		unavailable(t, "cannot build %s: %v", p.name, err)
	}
	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		unavailable(t, "cannot build %s: %v", p.name, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		unavailable(t, "cannot build %s: lock: %v", p.name, err)
	}
	// Closing the file releases the lock. Whoever held it before may have built the peer meanwhile.
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	gobin, err := os.MkdirTemp(dir, "."+p.name+"-")
	if err != nil {
		unavailable(t, "cannot build %s: %v", p.name, err)
	}
	defer os.RemoveAll(gobin)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "install", p.pkg+"@"+p.version)
	// -mod=mod: `go install pkg@version` ignores this module's go.mod; the flag keeps a GOFLAGS=-mod=vendor
	// or readonly from the environment from refusing the download.
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable(t, "cannot build %s %s: go install: %v\n%s", p.name, p.version, err, out)
	}
	if err := os.Rename(filepath.Join(gobin, p.name), bin); err != nil {
		unavailable(t, "cannot build %s: %v", p.name, err)
	}
	t.Logf("built %s %s into %s in %v", p.name, p.version, bin, time.Since(start).Round(time.Second))
	return bin
}

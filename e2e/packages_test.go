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

package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The one way the tests get the peers they compare with (sysstat, df, mkfs, fio, clang, Prometheus,
// QEMU, a Debian kernel …): a tool already there is used, a missing one is installed from its Debian
// package. A peer that cannot be had ends the test through Unavailable.

// Installer runs apt-get for the tests: update at most once per test binary, install on demand.
type Installer struct {
	euid      func() int // os.Geteuid; the installer's own test pretends not to be root
	once      sync.Once
	updateErr error
}

// Debian is the installer every test uses.
var Debian = &Installer{euid: os.Geteuid}

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

// Update refreshes the package lists the first time it is called; later calls return its result.
func (a *Installer) Update() error {
	a.once.Do(func() { a.updateErr = aptGet("", 10*time.Minute, "update") })
	return a.updateErr
}

// Install installs Debian packages.
func (a *Installer) Install(pkgs ...string) error {
	if a.euid() != 0 {
		return fmt.Errorf("installing %s needs root", strings.Join(pkgs, " "))
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("no apt-get to install %s: %w", strings.Join(pkgs, " "), err)
	}
	if err := a.Update(); err != nil {
		return err
	}
	// Another apt (a test binary of another checkout on the same machine) may hold the dpkg lock:
	// wait for it instead of failing.
	args := append([]string{"-o", "DPkg::Lock::Timeout=300", "install", "-y", "--no-install-recommends"}, pkgs...)
	return aptGet("", 15*time.Minute, args...)
}

// Download fetches a package's .deb into dir without installing it and returns its path.
func (a *Installer) Download(pkg, dir string) (string, error) {
	if err := aptGet(dir, 10*time.Minute, "download", pkg); err != nil {
		return "", err
	}
	debs, err := filepath.Glob(filepath.Join(dir, "*.deb"))
	if err != nil {
		return "", fmt.Errorf("apt-get download %s: %w", pkg, err)
	}
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download %s left %v in %s", pkg, debs, dir)
	}
	return debs[0], nil
}

// Tools returns the path of each tool (a command, or a file when it has a slash → the Debian package
// that provides it), installing the packages of the missing ones in one apt-get run. A tool it cannot
// have ends the test through Unavailable.
func (a *Installer) Tools(t testing.TB, want map[string]string) map[string]string {
	t.Helper()
	paths := map[string]string{}
	var missing []string
	for tool, pkg := range want {
		if p, err := LookCommand(tool); err == nil {
			paths[tool] = p
		} else if !slices.Contains(missing, pkg) {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return paths
	}
	slices.Sort(missing)
	if err := a.Install(missing...); err != nil {
		Unavailable(t, "cannot install %s: %v", strings.Join(missing, " "), err)
	}
	for tool, pkg := range want {
		if paths[tool] != "" {
			continue
		}
		p, err := LookCommand(tool)
		if err != nil {
			Unavailable(t, "%s is installed but %v", pkg, err)
		}
		paths[tool] = p
	}
	return paths
}

// Tool returns the path of one tool, installed from Debian's pkg if it is missing.
func Tool(t testing.TB, tool, pkg string) string {
	t.Helper()
	return Debian.Tools(t, map[string]string{tool: pkg})[tool]
}

// sbinDirs hold system tools (losetup, mkfs.*, modprobe) that a non-login PATH may lack.
var sbinDirs = []string{"/usr/sbin", "/sbin"}

// ToolPath is a PATH= entry for a child that runs the tools by name: PATH and the sbin directories.
func ToolPath() string {
	return "PATH=" + strings.Join(append([]string{os.Getenv("PATH")}, sbinDirs...), ":")
}

// LookCommand finds a command on PATH or in the sbin directories; a name with a slash is a file (a
// header, a data file) that must exist.
func LookCommand(name string) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return name, nil
	}
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

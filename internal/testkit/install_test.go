package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Unit tests of the package installer, against an apt-get of their own on PATH; they need no root and
// install nothing.

// fakeAptGet writes an apt-get into dir that appends its arguments to the returned log and then
// runs install (shell) for `apt-get ... install ...`; every other subcommand succeeds.
func fakeAptGet(t *testing.T, dir, install string) string {
	t.Helper()
	log := filepath.Join(dir, "apt-get.log")
	script := fmt.Sprintf(`#!/bin/sh
echo "$*" >>%q
for a; do [ "$a" = install ] && { %s; }; done
exit 0
`, log, install)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "apt-get"), []byte(script), 0o755))
	return log
}

func TestPeerThatCannotBeInstalledFailsInCI(t *testing.T) {
	const tool, pkg = "diskhealth-no-such-tool", "diskhealth-no-such-package"
	cases := []struct {
		name    string
		root    bool
		install string // the fake apt-get's install; "" for no apt-get on PATH
		reason  string
	}{
		{"not root", false, "exit 0", "installing " + pkg + " needs root"},
		{"no apt-get", true, "", "no apt-get to install " + pkg},
		{"install fails", true, `echo "E: Unable to locate package ` + pkg + `" >&2; exit 100`, "Unable to locate package " + pkg},
		{"tool missing after install", true, "exit 0", pkg + " is installed but " + tool + ": not found"},
	}
	for _, c := range cases {
		for _, ci := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/CI=%t", c.name, ci), func(t *testing.T) {
				t.Setenv("CI", strconv.FormatBool(ci))
				dir := t.TempDir()
				log := filepath.Join(dir, "apt-get.log")
				if c.install != "" {
					log = fakeAptGet(t, dir, c.install)
				}
				t.Setenv("PATH", dir)
				a := &Installer{euid: func() int {
					if c.root {
						return 0
					}
					return 1000
				}}

				got := runTB(t, func(tb testing.TB) { a.Tools(tb, map[string]string{tool: pkg}) })
				if ci {
					assert.Equal(t, "fatal", got.ended, "with CI=true the test fails: %s", got.msg)
				} else {
					assert.Equal(t, "skip", got.ended, "without CI the test skips: %s", got.msg)
					assert.True(t, strings.HasPrefix(got.msg, "SKIPPED: "), "a loud skip: %q", got.msg)
				}
				assert.Contains(t, got.msg, c.reason)
				if !c.root {
					_, err := os.Stat(log)
					assert.ErrorIs(t, err, os.ErrNotExist, "apt-get ran without root")
				}
			})
		}
	}
}

func TestInstallerUpdatesOnceAndInstallsWhatIsMissing(t *testing.T) {
	t.Setenv("CI", "true")
	dir := t.TempDir()
	// Installing a package puts its tools into dir, as dpkg would into /usr/bin.
	mk := func(name string) string {
		return fmt.Sprintf(`printf '#!/bin/sh\n' >%q; chmod +x %q`, filepath.Join(dir, name), filepath.Join(dir, name))
	}
	log := fakeAptGet(t, dir, fmt.Sprintf(`for p; do case $p in pkg-ab) %s; %s;; pkg-c) %s;; esac; done`,
		mk("diskhealth-a"), mk("diskhealth-b"), mk("diskhealth-c")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "diskhealth-present"), []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", dir+":/usr/bin:/bin")
	a := &Installer{euid: func() int { return 0 }}

	var first, second map[string]string
	got := runTB(t, func(tb testing.TB) {
		first = a.Tools(tb, map[string]string{"diskhealth-present": "pkg-present", "diskhealth-a": "pkg-ab", "diskhealth-b": "pkg-ab"})
		second = a.Tools(tb, map[string]string{"diskhealth-c": "pkg-c", "diskhealth-a": "pkg-ab"})
	})
	require.Empty(t, got.ended, got.msg)
	in := func(name string) string { return filepath.Join(dir, name) }
	assert.Equal(t, map[string]string{"diskhealth-present": in("diskhealth-present"), "diskhealth-a": in("diskhealth-a"),
		"diskhealth-b": in("diskhealth-b")}, first)
	assert.Equal(t, map[string]string{"diskhealth-c": in("diskhealth-c"), "diskhealth-a": in("diskhealth-a")}, second)

	// One update for the installer's life; each install only the packages of tools not there yet.
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	const install = "-o DPkg::Lock::Timeout=300 install -y --no-install-recommends "
	assert.Equal(t, "update\n"+install+"pkg-ab\n"+install+"pkg-c\n", string(data))
}

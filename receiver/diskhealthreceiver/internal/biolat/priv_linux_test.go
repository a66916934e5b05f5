//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package biolat

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// openAs runs Open in a copy of this test binary under setpriv as uid/gid 65534 (nobody).
func openAs(t *testing.T, caps ...string) childReport {
	t.Helper()
	requireRoot(t)
	setpriv := requireTool(t, "util-linux", "setpriv")
	// The go test build directory is root's alone: nobody needs a copy it can execute.
	dir, err := os.MkdirTemp("", "biolat-priv-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	self, err := os.Executable()
	require.NoError(t, err)
	bin := filepath.Join(dir, "biolat.test")
	copyFile(t, self, bin)

	args := []string{"--reuid", "65534", "--regid", "65534", "--clear-groups"}
	if len(caps) > 0 {
		set := ""
		for i, c := range caps {
			if i > 0 {
				set += ","
			}
			set += "+" + c
		}
		args = append(args, "--inh-caps", set, "--ambient-caps", set)
	}
	cmd := exec.Command(setpriv, append(args, bin)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var r childReport
	require.NoError(t, json.Unmarshal(out, &r), "%s", out)
	t.Logf("as nobody with %v: %+v", caps, r)
	return r
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
}

// CAP_BPF + CAP_PERFMON is all it takes: no root, no CAP_SYS_ADMIN, no tracefs.
func TestOpenAsNobodyWithBPFAndPerfmon(t *testing.T) {
	r := openAs(t, "bpf", "perfmon")
	require.Empty(t, r.Message)
	require.Equal(t, "block_io_done", r.Hook)
}

func TestOpenWithoutCapabilities(t *testing.T) {
	r := openAs(t)
	require.Equal(t, CauseMissingCapabilities, r.Cause)
	require.Equal(t, []string{"CAP_BPF", "CAP_PERFMON"}, r.Missing)
	require.Contains(t, r.Message, "lacks CAP_BPF, CAP_PERFMON: grant it")
}

func TestOpenWithBPFOnly(t *testing.T) {
	r := openAs(t, "bpf")
	require.Equal(t, CauseMissingCapabilities, r.Cause)
	require.Equal(t, []string{"CAP_PERFMON"}, r.Missing)
}

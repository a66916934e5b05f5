package testkit

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// RunTestBinaryAsNobody runs a copy of this test binary under setpriv as uid/gid 65534 (nobody) with
// only caps (setpriv's names: "bpf", "perfmon"; none: no capabilities), with env=1 in its environment
// so that its TestMain does the privileged thing and reports on stdout, and returns that stdout.
func RunTestBinaryAsNobody(t *testing.T, env string, caps ...string) []byte {
	t.Helper()
	RequireRoot(t, "running a test binary as nobody with chosen capabilities")
	setpriv := Tool(t, "setpriv", "util-linux")
	// The go test build directory is root's alone: nobody needs a copy it can execute.
	dir, err := os.MkdirTemp("", "nobody-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	self, err := os.Executable()
	require.NoError(t, err)
	bin := filepath.Join(dir, filepath.Base(self))
	copyExecutable(t, self, bin)

	args := []string{"--reuid", "65534", "--regid", "65534", "--clear-groups"}
	if len(caps) > 0 {
		set := "+" + strings.Join(caps, ",+")
		args = append(args, "--inh-caps", set, "--ambient-caps", set)
	}
	cmd := exec.Command(setpriv, append(args, bin)...)
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	return out
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	require.NoError(t, err)
	defer func() { _ = src.Close() }() // read-only: nothing to lose on close
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
}

package biolat

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The committed object must be what its sources build to. Without clang the sources are compared with
// the hashes `go generate` recorded; with Debian's clang-14 (installed in CI) the object and bindings are
// rebuilt and compared byte for byte.
func TestObjectMatchesSources(t *testing.T) {
	manifest, err := os.ReadFile("bpf/sources.sha256")
	require.NoError(t, err)
	sc := bufio.NewScanner(bytes.NewReader(manifest))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		require.True(t, ok, sc.Text())
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		got := sha256.Sum256(b)
		require.Equal(t, sum, hex.EncodeToString(got[:]), "%s changed since the object was generated: run make bpf", name)
	}

	if runtime.GOOS != "linux" {
		t.Skipf("SKIPPED: the rebuild needs Debian's clang-14 on Linux")
	}
	requireTool(t, "clang-14", "clang-14")
	requireTool(t, "llvm-14", "llvm-strip-14")
	requireTool(t, "libbpf-dev", "/usr/include/bpf/bpf_helpers.h")
	out := t.TempDir()
	gen, args := generateLine(t)
	cmd := exec.Command("sh", "-c", gen+" -output-dir "+out+" "+args)
	cmd.Env = append(os.Environ(), "GOPACKAGE=biolat", "GOFILE=gen.go")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	for _, name := range []string{"biolat_bpfel.o", "biolat_bpfel.go"} {
		want, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		got, err := os.ReadFile(name)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "%s differs from what bpf/ builds to: run make bpf and commit", name)
	}
}

// generateLine is gen.go's bpf2go directive, split before bpf2go's own arguments so that a flag can
// be put in front of them.
func generateLine(t *testing.T) (cmd, args string) {
	t.Helper()
	src, err := os.ReadFile("gen.go")
	require.NoError(t, err)
	for line := range strings.Lines(string(src)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "//go:generate "); ok && strings.Contains(rest, " bpf2go ") {
			cmd, args, _ = strings.Cut(rest, " bpf2go ")
			return cmd + " bpf2go", args
		}
	}
	t.Fatal("gen.go has no bpf2go directive")
	return "", ""
}

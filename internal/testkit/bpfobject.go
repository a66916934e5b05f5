package testkit

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

// BPFObjectsMatchSources checks, in the package directory of a BPF library (the test's working
// directory), that its committed objects are what its sources build to. Without clang the sources are
// compared with the hashes `go generate` recorded in bpf/sources.sha256; with Debian's clang-14
// (installed in CI) every bpf2go directive of gen.go (objects, one per directive, for Go package pkg)
// is rebuilt and the object and bindings compared byte for byte.
func BPFObjectsMatchSources(t *testing.T, pkg string, objects ...string) {
	t.Helper()
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
	Tool(t, "clang-14", "clang-14")
	Tool(t, "llvm-strip-14", "llvm-14")
	Tool(t, "/usr/include/bpf/bpf_helpers.h", "libbpf-dev")
	out := t.TempDir()
	gens := generateLines(t, pkg)
	idents := make([]string, len(gens))
	for i, gen := range gens {
		idents[i] = gen.ident
		cmd := exec.Command("sh", "-c", gen.cmd+" -output-dir "+out+" "+gen.args)
		cmd.Env = append(os.Environ(), "GOPACKAGE="+pkg, "GOFILE=gen.go")
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
		for _, name := range []string{gen.ident + "_bpfel.o", gen.ident + "_bpfel.go"} {
			want, err := os.ReadFile(filepath.Join(out, name))
			require.NoError(t, err)
			got, err := os.ReadFile(name)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, got), "%s differs from what bpf/ builds to: run make bpf and commit", name)
		}
	}
	require.Equal(t, objects, idents, "gen.go's bpf2go directives")
}

// directive is one of gen.go's bpf2go directives, split before bpf2go's own arguments so that a flag
// can be put in front of them; ident names the object (<ident>_bpfel.o).
type directive struct{ cmd, args, ident string }

func generateLines(t *testing.T, pkg string) []directive {
	t.Helper()
	src, err := os.ReadFile("gen.go")
	require.NoError(t, err)
	var out []directive
	for line := range strings.Lines(string(src)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "//go:generate "); ok && strings.Contains(rest, " bpf2go ") {
			cmd, args, _ := strings.Cut(rest, " bpf2go ")
			_, after, ok := strings.Cut(args, "-go-package "+pkg+" ")
			require.True(t, ok, line)
			ident, _, _ := strings.Cut(after, " ")
			out = append(out, directive{cmd: cmd + " bpf2go", args: args, ident: ident})
		}
	}
	return out
}

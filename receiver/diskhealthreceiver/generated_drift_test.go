package diskhealthreceiver

import (
	"go/format"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// otelSemconv is the semantic conventions package mdatagen and emitgen import for sem_conv_version
// 1.44.0; go.opentelemetry.io/otel (v1.47.0) has none yet, so `make generate` points the generated code at
// localSemconv instead (its SchemaURL). Drop both, here and in the Makefile, when otel ships it.
const (
	otelSemconv  = "go.opentelemetry.io/otel/semconv/v1.44.0"
	localSemconv = "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/semconv/v1.44.0"
)

// components are the folders mdatagen generates into: the receiver and every source's scraper.
func components(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("internal", "scraper", "*", "metadata.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	out := []string{"."}
	for _, d := range dirs {
		out = append(out, filepath.Dir(d))
	}
	return out
}

// TestGeneratedCodeUpToDate regenerates every component's internal/metadata and documentation.md from
// its metadata.yaml in a scratch copy of the module and fails when the committed files differ:
// metadata.yaml is the single truth. What mdatagen cannot express (a source's log events) is kept in
// documentation-extra.md and must follow the generated part of documentation.md verbatim, as `make
// generate` appends it. A source whose doc.go runs emitgen also gets its generated emitter regenerated
// (after mdatagen, from the same metadata.yaml) and compared.
func TestGeneratedCodeUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("regenerating with mdatagen is skipped in -short mode")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	for _, comp := range components(t) {
		t.Run(comp, func(t *testing.T) {
			scratch := t.TempDir()
			pkgRel := filepath.Join("receiver", "diskhealthreceiver", comp)
			for _, rel := range []string{
				"go.mod", "go.sum",
				filepath.Join("internal", "tools", "go.mod"), filepath.Join("internal", "tools", "go.sum"),
				filepath.Join(pkgRel, "metadata.yaml"), filepath.Join(pkgRel, "doc.go"),
				filepath.Join("internal", "tools", "emitgen", "main.go"),
			} {
				copyFile(t, filepath.Join(repo, rel), filepath.Join(scratch, rel))
			}
			mdatagen := func(file string) *exec.Cmd {
				cmd := exec.Command("go", "tool", "-modfile="+filepath.Join(scratch, "internal", "tools", "go.mod"), "mdatagen", file)
				cmd.Dir = filepath.Join(scratch, pkgRel)
				return cmd
			}
			// The hostmetrics-compatible set first, as `make generate` does: its documentation.md is kept
			// as documentation-hostmetrics.md before the source's own is written.
			if _, err := os.Stat(filepath.Join(comp, "hostmetrics.yaml")); err == nil {
				copyFile(t, filepath.Join(comp, "hostmetrics.yaml"), filepath.Join(scratch, pkgRel, "hostmetrics.yaml"))
				cmd := mdatagen("hostmetrics.yaml")
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "mdatagen hostmetrics.yaml: %s", out)
				require.NoError(t, os.Rename(filepath.Join(cmd.Dir, "documentation.md"), filepath.Join(cmd.Dir, "documentation-hostmetrics.md")))
			}
			cmd := mdatagen("metadata.yaml")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "mdatagen: %s", out)
			doc, err := os.ReadFile(filepath.Join(comp, "doc.go"))
			require.NoError(t, err)
			if strings.Contains(string(doc), "emitgen") {
				gen := exec.Command("go", "run", "./emitgen", cmd.Dir)
				gen.Dir = filepath.Join(scratch, "internal", "tools")
				out, err := gen.CombinedOutput()
				require.NoError(t, err, "emitgen: %s", out)
			}
			if extra, err := os.ReadFile(filepath.Join(comp, "documentation-extra.md")); err == nil {
				doc := filepath.Join(cmd.Dir, "documentation.md")
				gen, err := os.ReadFile(doc)
				require.NoError(t, err, "documentation-extra.md needs a generated documentation.md to follow")
				require.NoError(t, os.WriteFile(doc, append(append(gen, '\n'), extra...), 0o644))
			}

			generated := map[string]bool{}
			err = filepath.WalkDir(cmd.Dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(cmd.Dir, path)
				if rel == "metadata.yaml" || rel == "hostmetrics.yaml" || rel == "doc.go" {
					return nil
				}
				generated[rel] = true
				want, err := os.ReadFile(path)
				require.NoError(t, err)
				if strings.HasSuffix(rel, ".go") {
					// As `make generate` does: the generated code imports internal/semconv/v1.44.0, which
					// stands in for the go.opentelemetry.io/otel/semconv/v1.44.0 package otel has not shipped.
					want, err = format.Source([]byte(strings.ReplaceAll(string(want), `"`+otelSemconv+`"`, `"`+localSemconv+`"`)))
					require.NoError(t, err)
				}
				got, err := os.ReadFile(filepath.Join(comp, rel))
				require.NoError(t, err, "%s is generated (mdatagen, emitgen) but missing: run `make generate`", rel)
				if line, ok := firstDifference(string(want), string(got)); !ok {
					t.Errorf("%s differs from the generators' output at line %d: run `make generate`", filepath.Join(comp, rel), line)
				}
				return nil
			})
			require.NoError(t, err)
			// A generated file that mdatagen no longer writes is stale (internal/hostmetrics: the
			// hostmetrics-compatible set's package, where a source has one).
			for _, pkg := range []string{"metadata", "hostmetrics"} {
				dir := filepath.Join(comp, "internal", pkg)
				if _, err := os.Stat(dir); pkg != "metadata" && os.IsNotExist(err) {
					continue
				}
				err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					rel, _ := filepath.Rel(comp, path)
					require.True(t, generated[rel], "%s is not produced by mdatagen or emitgen any more: remove it", path)
					return nil
				})
				require.NoError(t, err)
			}
		})
	}
}

// firstDifference returns the 1-based line where a and b first differ, and whether they are equal.
func firstDifference(a, b string) (int, bool) {
	if a == b {
		return 0, true
	}
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1, false
		}
	}
	return min(len(al), len(bl)) + 1, false
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
	require.NoError(t, os.WriteFile(to, data, 0o644))
}

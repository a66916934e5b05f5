package diskhealthreceiver

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/semconvcheck"
)

// semconvModel is the semantic conventions' model the output is held to, relative to the repository
// root: shared/ sits beside the clone (beside /work/main here; CI puts a copy there too).
var semconvModel = filepath.Join("..", "shared", "reference", "semconv-v1.44.0", "model")

// emitted is everything the receiver can emit: every metadata.yaml (the receiver's and each source's),
// the histograms the sources build by hand as their documentation-extra.md declares them (mdatagen's
// layout; TestHistogramsDocumented in each of those sources holds the page to the code's table), and
// every attribute key the code puts by hand (log events, histogram points, resources), read from the
// code itself so that none can be left out (semconvcheck.ScanCode).
func emitted(t *testing.T) semconvcheck.Emitted {
	t.Helper()
	var e semconvcheck.Emitted
	files, err := filepath.Glob(filepath.Join("internal", "scraper", "*", "metadata.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range append(files, "metadata.yaml") {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		md, err := semconvcheck.ParseMetadata(data, f)
		require.NoError(t, err)
		e.Metrics = append(e.Metrics, md.Metrics...)
		e.Attributes = append(e.Attributes, md.Attributes...)
	}
	extras, err := filepath.Glob(filepath.Join("internal", "scraper", "*", "documentation-extra.md"))
	require.NoError(t, err)
	for _, f := range extras {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		ms, err := semconvcheck.ParseDocumentedMetrics(data, f)
		require.NoError(t, err)
		e.Metrics = append(e.Metrics, ms...)
	}
	byCode, err := semconvcheck.ScanCode(".")
	require.NoError(t, err)
	require.NotEmpty(t, byCode)
	e.Attributes = append(e.Attributes, byCode...)
	return e
}

// TestSemanticConventions holds everything the receiver can emit to the semantic conventions model
// v1.44.0: a metric or attribute the model defines matches it (instrument, unit, attributes, type,
// enum members), no name of ours sits in a namespace the model owns, no metric or attribute name is
// the namespace of another, nothing deprecated is emitted. What breaks a rule today is listed, with
// its reason, in testdata/semconv-exceptions.yaml; a violation not listed fails, and so does an entry
// that no longer violates anything (remove it: the table only shrinks).
func TestSemanticConventions(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	dir := filepath.Join(root, semconvModel)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the semantic conventions model is not at %s: shared/ must sit beside the repository "+
			"(../shared from its root, as /work/shared beside /work/main); this test never skips", dir)
	}
	model, err := semconvcheck.LoadModel(dir)
	require.NoError(t, err)

	data, err := os.ReadFile(filepath.Join("testdata", "semconv-exceptions.yaml"))
	require.NoError(t, err)
	table, err := semconvcheck.ParseExceptions(data)
	require.NoError(t, err)

	e := emitted(t)
	violations := semconvcheck.Check(model, e)
	unlisted, stale := semconvcheck.Reconcile(violations, table)
	for _, v := range unlisted {
		entry, err := yaml.Marshal([]semconvcheck.Exception{{Rule: v.Rule, Metric: v.Metric, Attribute: v.Attribute, Value: v.Value, Reason: "…"}})
		require.NoError(t, err)
		t.Errorf("%s\n  not in testdata/semconv-exceptions.yaml: follow the model, or list it with its reason:\n%s", v, indent(string(entry)))
	}
	for _, x := range stale {
		t.Errorf("testdata/semconv-exceptions.yaml lists %s %s%s%s, which no longer breaks it: remove the entry",
			x.Rule, x.Metric, prefixed(" attribute ", x.Attribute), prefixed(" value ", x.Value))
	}
	counts := map[string]int{}
	for _, x := range table {
		counts[x.Rule]++
	}
	var summary []string
	for _, r := range semconvcheck.Rules {
		summary = append(summary, r+"="+strconv.Itoa(counts[r]))
	}
	keys := map[string]bool{}
	for _, a := range e.Attributes {
		keys[a.Key] = true
	}
	for _, m := range e.Metrics {
		for _, a := range m.Attributes {
			keys[a.Key] = true
		}
	}
	t.Logf("%d metrics and %d attribute keys checked; %d known exceptions: %s",
		len(e.Metrics), len(keys), len(table), strings.Join(summary, " "))
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

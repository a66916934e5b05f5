package diskhealthreceiver

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

const (
	modulePrefix = "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/"
	// testKit is the project's test kit: it runs apt-get, so only tests may import it.
	testKit = "github.com/diskhealth/diskhealth/internal/testkit"
)

// goList returns the import paths `go list` prints for args.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	require.NoError(t, err, "go list %v", args)
	return strings.Fields(string(out))
}

// TestLayout: every source of the receiver's table is a scraper component in its own folder; a scraper
// never imports another scraper; a library (everything under internal/ that is not a scraper) imports
// neither a scraper nor pdata, so it stays testable with values alone.
func TestLayout(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	srcs := cfg.sources(nil, nil, nil, nil)
	require.NotEmpty(t, srcs)
	scrapers := map[string]bool{}
	for _, src := range srcs {
		pkg := src.name + "scraper"
		_, err := os.Stat(filepath.Join("internal", "scraper", pkg, "metadata.yaml"))
		require.NoError(t, err, "source %s has no scraper component", src.name)
		assert.Equal(t, src.name, src.factory.Type().String(), "the section and the scraper's type are one name")
		scrapers[modulePrefix+"scraper/"+pkg] = true
	}

	for pkg := range scrapers {
		for _, dep := range goList(t, "-deps", pkg) {
			if dep != pkg && scrapers[dep] {
				t.Errorf("scraper %s imports scraper %s", pkg, dep)
			}
		}
	}
	for _, dep := range goList(t, "-deps", ".") {
		assert.False(t, strings.HasPrefix(dep, testKit), "the receiver depends on the test kit (%s)", dep)
	}

	var libs []string
	for _, p := range goList(t, "./internal/...") {
		if !strings.HasPrefix(p, modulePrefix+"scraper/") && !strings.HasSuffix(p, "/internal/metadata") {
			libs = append(libs, p)
		}
	}
	require.NotEmpty(t, libs)
	for _, lib := range libs {
		for _, dep := range goList(t, "-deps", lib) {
			if strings.HasPrefix(dep, modulePrefix+"scraper/") || strings.HasPrefix(dep, "go.opentelemetry.io/collector/pdata") ||
				strings.HasPrefix(dep, testKit) {
				t.Errorf("library %s depends on %s", lib, dep)
			}
		}
	}
}

// TestRegistry: every source of the registry has a unique name and a section that follows the
// convention the receiver fills by field name (config.go): Enabled, RootPath, its metrics config, a
// Validate naming its keys, and a Signs field exactly when it needs the signs board.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range registry {
		assert.False(t, seen[r.name], "source %s registered twice", r.name)
		seen[r.name] = true
		section := r.factory(nil).CreateDefaultConfig()
		_, ok := field(section, enabledField).(*bool)
		assert.True(t, ok, "%s: no Enabled bool", r.name)
		_, ok = field(section, rootPathField).(*string)
		assert.True(t, ok, "%s: no RootPath string", r.name)
		assert.NotNil(t, sharedPart(section, metricsKey), "%s: no metrics config", r.name)
		_, ok = section.(sectionValidator)
		assert.True(t, ok, "%s: no Validate(key string) error", r.name)
		_, hasSigns := field(section, signsField).(**signs.Board)
		assert.Equal(t, slices.Contains(r.needs, signsBoard), hasSigns, "%s: a Signs field exactly when it needs the signs board", r.name)
		_, hasTick := field(section, tickField).(**tick.Reader)
		assert.Equal(t, slices.Contains(r.needs, diskstatsSnapshot), hasTick, "%s: a Tick field exactly when it needs the diskstats snapshot", r.name)
	}
}

// sourceListForms are the ways a list of the sources has been written by hand: switching each on or
// off (YAML, --set flags, a Go map, a Config field), naming each in a list of strings, or a type switch
// over their configs. %s is one source's name.
var sourceListForms = []string{
	`(?m)\b%s(::|\.|:\s*\{\s*|:\s*\n\s*)enabled\b`,
	`"%s"\]?\s*[:=]\s*map\[string\]any\{"enabled"`,
	`(?i)\.%s\.Enabled\b`,
	`"%s"\s*[,}]`,
	`case \*%sscraper\.`,
}

// listForms compiles sourceListForms for each name: form i*len(names)+j is form i for names[j].
func listForms(names []string) []*regexp.Regexp {
	var forms []*regexp.Regexp
	for _, f := range sourceListForms {
		for _, n := range names {
			forms = append(forms, regexp.MustCompile(fmt.Sprintf(f, regexp.QuoteMeta(n))))
		}
	}
	return forms
}

// TestNoHandWrittenSourceList: the sources are listed in the registry only. Anywhere else in the
// receiver, its tests, bench/ and e2e/, three or more sources named together in one of the forms a hand
// list takes (or a non-test file importing three scrapers) fail this test: derive the list from
// Sources(), Only() or the registry instead.
func TestNoHandWrittenSourceList(t *testing.T) {
	names := Sources()
	forms := listForms(names)
	const window = 12 // lines: a list is written together
	for _, dir := range []string{".", filepath.Join("..", "..", "bench"), filepath.Join("..", "..", "e2e")} {
		require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			base := d.Name()
			// The registry, and this file's samples of what a hand list looks like.
			if path == "registry.go" || path == "layout_test.go" || strings.HasPrefix(base, "generated_") || base == "metadata.yaml" ||
				strings.Contains(path, string(filepath.Separator)+"metadata"+string(filepath.Separator)) ||
				!slices.Contains([]string{".go", ".yaml", ".yml", ".sh"}, filepath.Ext(base)) {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if list := handList(string(data), names, forms, window, !strings.HasSuffix(base, "_test.go") && filepath.Ext(base) == ".go"); list != "" {
				t.Errorf("%s names the sources by hand (%s): derive the list from the registry", path, list)
			}
			return nil
		}))
	}
}

// handList returns the first place in text where three or more sources are named together in a hand
// list's form within window lines (with imports: or imported as scrapers), "" if none.
func handList(text string, names []string, forms []*regexp.Regexp, window int, imports bool) string {
	lines := strings.Split(text, "\n")
	at := map[int]map[string]bool{} // line → names in a list form starting there
	for i, re := range forms {
		name := names[i%len(names)]
		for _, m := range re.FindAllStringIndex(text, -1) {
			line := strings.Count(text[:m[0]], "\n")
			if at[line] == nil {
				at[line] = map[string]bool{}
			}
			at[line][name] = true
		}
	}
	for start := range lines {
		found := map[string]bool{}
		for l := start; l < start+window && l < len(lines); l++ {
			for n := range at[l] {
				found[n] = true
			}
		}
		if len(found) >= 3 {
			return fmt.Sprintf("line %d: %s", start+1, strings.Join(slices.Sorted(maps.Keys(found)), ", "))
		}
	}
	if imports {
		var imported []string
		for _, n := range names {
			if strings.Contains(text, "/"+n+"scraper\"") {
				imported = append(imported, n)
			}
		}
		if len(imported) >= 3 {
			return "imports " + strings.Join(imported, ", ")
		}
	}
	return ""
}

// TestHandListDetector: the forms above catch the lists this repository once had.
func TestHandListDetector(t *testing.T) {
	names := Sources()
	forms := listForms(names)
	for _, list := range []string{
		"    filesystem: {enabled: false}\n    smart: {enabled: false}\n    cgroups: {enabled: false}\n",
		"    iostat:\n      enabled: false\n    filesystem:\n      enabled: true\n    smart:\n      enabled: false\n",
		`"--set=receivers::disk_health::smart::enabled=false", "--set=receivers::disk_health::filesystem::enabled=false", "--set=receivers::disk_health::cgroups::enabled=false"`,
		"cfg.IOStat.Enabled = false\ncfg.Filesystem.Enabled = false\ncfg.SMART.Enabled = false\n",
		`for _, s := range []string{"iostat", "filesystem", "smart", "pressure"} {`,
		`m["iostat"] = map[string]any{"enabled": false}; m["pressure"] = 1` + "\n" + `x := map[string]any{"smart": map[string]any{"enabled": true}, "stack": map[string]any{"enabled": true}}`,
		"switch c.(type) {\ncase *iostatscraper.Config:\ncase *smartscraper.Config:\ncase *stackscraper.Config:\n}",
	} {
		assert.NotEmpty(t, handList(list, names, forms, 12, false), list)
	}
	assert.Empty(t, handList("filesystem:\n  include_remote_filesystems: true\nsmart:\n  enabled: false\nlatency:\n  enabled: false\n", names, forms, 12, false),
		"settings of a few sources are no list")
}

// TestDocsNameEverySource: CONTRIBUTING's "Layout" names every source of the registry and README's "Sources
// at a glance" links each one's documentation.md, so that none goes stale when a source is added. The
// package doc and this receiver's README point there instead of keeping lists of their own, so adding a
// source edits only its folder, its registry line, README, CONTRIBUTING and CHANGELOG.
func TestDocsNameEverySource(t *testing.T) {
	section := func(file, title string) string {
		text, err := os.ReadFile(filepath.Join("..", "..", file))
		require.NoError(t, err)
		_, body, ok := strings.Cut(string(text), "\n## "+title+"\n")
		require.True(t, ok, "%s has no %s section", file, title)
		body, _, _ = strings.Cut(body, "\n## ")
		return body
	}
	layout, sources := section("CONTRIBUTING.md", "Layout"), section("README.md", "Sources at a glance")
	for _, name := range Sources() {
		assert.Regexp(t, `(?m)^\s+`+regexp.QuoteMeta(name)+`\s{2,}\S`, layout, "CONTRIBUTING's Layout does not list source %s", name)
		assert.Contains(t, sources, "["+name+"](receiver/diskhealthreceiver/internal/scraper/"+name+"scraper/documentation.md)",
			"README's Sources at a glance does not link the documentation of source %s", name)
	}
	for _, file := range []string{"doc.go", "README.md"} {
		text, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, name := range Sources() {
			assert.NotContains(t, string(text), name+"scraper/", "%s lists source %s by hand; README is the one list", file, name)
		}
	}
}

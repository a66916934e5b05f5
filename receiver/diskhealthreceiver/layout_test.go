package diskhealthreceiver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const modulePrefix = "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/"

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
	srcs := cfg.sources(nil, nil, nil)
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
	// testpeer runs apt-get: only tests may import it, never what the receiver is built from.
	for _, dep := range goList(t, "-deps", ".") {
		assert.NotEqual(t, modulePrefix+"testpeer", dep, "the receiver depends on testpeer")
	}

	var libs []string
	for _, p := range goList(t, "./internal/...") {
		if !strings.HasPrefix(p, modulePrefix+"scraper/") && !strings.HasSuffix(p, "/internal/metadata") && p != modulePrefix+"testpeer" {
			libs = append(libs, p)
		}
	}
	require.NotEmpty(t, libs)
	for _, lib := range libs {
		for _, dep := range goList(t, "-deps", lib) {
			if strings.HasPrefix(dep, modulePrefix+"scraper/") || strings.HasPrefix(dep, "go.opentelemetry.io/collector/pdata") ||
				dep == modulePrefix+"testpeer" {
				t.Errorf("library %s depends on %s", lib, dep)
			}
		}
	}
}

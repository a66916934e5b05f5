package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// sourceMetrics maps each documented metric to the config key of the source that emits it (iostat,
// smart ...) and says whether it is on by default (mdatagen's "Default Metrics" section).
func sourceMetrics(t *testing.T) (source map[string][]string, byDefault map[string]bool) {
	t.Helper()
	docs, err := filepath.Glob(documentationGlob)
	require.NoError(t, err)
	source, byDefault = map[string][]string{}, map[string]bool{}
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		require.NoError(t, err)
		key := strings.TrimSuffix(filepath.Base(filepath.Dir(doc)), "scraper")
		defaults, _, _ := strings.Cut(string(data), "\n## Optional Metrics")
		ms, err := parseDocumentation(data)
		require.NoError(t, err)
		for _, m := range ms {
			source[m.Name] = append(source[m.Name], key)
			if strings.Contains(defaults, "\n### "+m.Name+"\n") {
				byDefault[m.Name] = true
			}
		}
	}
	return source, byDefault
}

// TestEssentialsFeedsDashboardsAndRules: config/essentials.yaml keeps every metric a Grafana panel or an
// alert rule reads, and switches off every other one (metric by metric, or its whole source).
func TestEssentialsFeedsDashboardsAndRules(t *testing.T) {
	var cfg struct {
		Receivers struct {
			DiskHealth map[string]any `yaml:"disk_health"`
		} `yaml:"receivers"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(shippedConfig(t, "essentials.yaml")), &cfg))
	dh := cfg.Receivers.DiskHealth
	switches, _ := dh["metrics"].(map[string]any)
	sourceOff := func(key string) bool {
		s, _ := dh[key].(map[string]any)
		on, set := s["enabled"].(bool)
		return set && !on
	}
	source, byDefault := sourceMetrics(t)
	enabled := func(name string) bool {
		on := byDefault[name]
		if s, ok := switches[name].(map[string]any); ok {
			if v, ok := s["enabled"].(bool); ok {
				on = v
			}
		}
		if !on {
			return false
		}
		for _, key := range source[name] {
			if !sourceOff(key) {
				return true
			}
		}
		return false
	}

	prom := promNames(t, loadDocumentation(t))
	used := map[string]bool{}
	panels, templating := grafanaQueries(t)
	var exprs []string
	for _, p := range panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	exprs = append(exprs, templating...)
	for _, e := range ruleExprs(t) {
		exprs = append(exprs, e)
	}
	for _, e := range exprs {
		for _, n := range promqlMetricNames(e) {
			require.Contains(t, prom, n)
			used[prom[n]] = true
		}
	}
	// The latency histograms have no switch of their own: they come with the latency source (the
	// discard and flush ones too; the device-time one only with latency.device_time).
	histograms := map[string]bool{}
	for _, m := range loadDocumentation(t) {
		histograms[m.Name] = m.Type == "ExponentialHistogram"
	}
	var starved, extra []string
	for name := range source {
		switch {
		case used[name] && !enabled(name):
			starved = append(starved, name)
		case !used[name] && enabled(name) && !histograms[name]:
			extra = append(extra, name)
		}
	}
	sort.Strings(starved)
	sort.Strings(extra)
	assert.Empty(t, starved, "read by a panel or rule but off in essentials.yaml")
	assert.Empty(t, extra, "on in essentials.yaml but read by no panel or rule")
	for name := range switches {
		assert.Contains(t, source, name, "essentials.yaml switches an undocumented metric")
	}
}

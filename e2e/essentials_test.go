package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/diskhealth/diskhealth/internal/testkit"
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

// TestEssentialsSeriesCount: config/essentials.yaml beside config/default.yaml on one GPU-node-shaped
// fixture root (gpuNodeRoot), both pushing with config/prometheus-remote-write.yaml's exporter into one
// VictoriaMetrics, each as its own host: essentials' series are a subset of the default's, and fewer.
// The counts go to BENCHMARKS.md and docs/routes.md. (No latency source on a fixture root: on a real host each
// config adds the same latency histograms.)
func TestEssentialsSeriesCount(t *testing.T) {
	bin := collectorBinary(t)
	const interval = 5 * time.Second
	root := gpuNodeRoot(t)
	vm := startVictoriaMetrics(t, filepath.Join(t.TempDir(), "vm"), "")
	rw, err := filepath.Abs(filepath.Join("..", "config", "prometheus-remote-write.yaml"))
	require.NoError(t, err)
	start := time.Now()
	configs := []string{"default.yaml", "essentials.yaml"}
	cols := make([]*collector, len(configs))
	for i, name := range configs {
		cols[i] = startCollectorEnv(t, bin, []string{"OTEL_RESOURCE_ATTRIBUTES=host.name=" + name,
			"DISKHEALTH_REMOTE_WRITE_ENDPOINT=http://" + vm.addr + "/api/v1/write"},
			shippedConfig(t, name), append([]string{"--config=" + rw}, append(routeArgs(root),
				"--set=receivers.disk_health.collection_interval="+interval.String())...)...)
	}
	// Both counts unchanged over a collection: every source has had its second read.
	var got, prev map[string]map[string]bool
	deadline := time.Now().Add(2 * time.Minute)
	for {
		requireRunning(t, cols)
		got = vm.seriesByHost(t, `{host_name=~".+[.]yaml"}`, start)
		stable := prev != nil
		for _, name := range configs {
			stable = stable && len(got[name]) > 0 && len(got[name]) == len(prev[name])
		}
		if stable {
			break
		}
		require.False(t, time.Now().After(deadline), "the series counts did not settle within 2 minutes")
		prev = got
		time.Sleep(interval)
	}
	def, ess := got["default.yaml"], got["essentials.yaml"]
	var notInDefault []string
	for k := range ess {
		// disk_health.source.status says what the config switched off (state off, not_configured): its
		// labels are the config's, one series per source in both.
		if !def[k] && !strings.HasPrefix(k, "disk_health_source_status") {
			notInDefault = append(notInDefault, k)
		}
	}
	sort.Strings(notInDefault)
	assert.Empty(t, notInDefault, "essentials.yaml series the default does not have")
	assert.Less(t, len(ess), len(def))
	t.Logf("GPU node (%d NVMe, %d mounts, %d pods): default.yaml %d series, essentials.yaml %d (%.0f %%)",
		testkit.GPUNVMe, testkit.GPUMounts, testkit.GPUPods, len(def), len(ess), 100*float64(len(ess))/float64(len(def)))
	t.Logf("essentials.yaml by metric: %v", byMetric(ess))
}

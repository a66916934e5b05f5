package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	grafanaDashboard = "../deploy/dashboards/grafana-diskhealth.json"
	kibanaDashboard  = "../deploy/dashboards/kibana-diskhealth.ndjson"
	alertingDoc      = "../docs/alerting.md"
)

// grafanaPanel is the part of a Grafana panel the tests read.
type grafanaPanel struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

// grafanaQueries returns the dashboard's panels (rows flattened) and its templating queries.
func grafanaQueries(t *testing.T) (panels []grafanaPanel, templating []string) {
	t.Helper()
	data, err := os.ReadFile(grafanaDashboard)
	require.NoError(t, err)
	var d struct {
		Title      string         `json:"title"`
		UID        string         `json:"uid"`
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(data, &d))
	require.NotEmpty(t, d.Title)
	require.NotEmpty(t, d.UID)
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			panels = append(panels, p)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) != nil {
			require.NoError(t, json.Unmarshal(v.Query, &q.Query))
		}
		templating = append(templating, q.Query)
	}
	return panels, templating
}

// kibanaObject is one saved object of the NDJSON export.
type kibanaObject struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Attributes json.RawMessage `json:"attributes"`
	References []struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"references"`
}

func kibanaObjects(t *testing.T) []kibanaObject {
	t.Helper()
	data, err := os.ReadFile(kibanaDashboard)
	require.NoError(t, err)
	var out []kibanaObject
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var o kibanaObject
		require.NoError(t, json.Unmarshal(sc.Bytes(), &o), "line %d", n)
		require.NotEmpty(t, o.Type, "line %d", n)
		require.NotEmpty(t, o.ID, "line %d", n)
		out = append(out, o)
	}
	require.NoError(t, sc.Err())
	return out
}

// documentedNames is the set of metric names documentation.md lists.
func documentedNames(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, m := range loadDocumentation(t) {
		out[m.Name] = true
	}
	return out
}

func TestGrafanaDashboardNames(t *testing.T) {
	documented := promNames(t, loadDocumentation(t))
	panels, templating := grafanaQueries(t)
	require.NotEmpty(t, panels)
	var all []string
	for _, p := range panels {
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			names := promqlMetricNames(tg.Expr)
			assert.NotEmpty(t, names, "panel %q: %s selects no metric", p.Title, tg.Expr)
			checkNames(t, grafanaDashboard, names, func(n string) bool { _, ok := documented[n]; return ok })
			all = append(all, names...)
		}
	}
	require.NotEmpty(t, templating, "the dashboard has no query variable ($host)")
	for _, q := range templating {
		checkNames(t, grafanaDashboard, promqlMetricNames(q), func(n string) bool { _, ok := documented[n]; return ok })
	}
	// Device I/O, filesystems and health are all covered.
	for _, n := range []string{"disk_health_disk_utilization_ratio", "system_filesystem_utilization_ratio", "disk_health_filesystem_status", "hw_status"} {
		assert.Contains(t, all, n)
	}
}

func TestKibanaDashboardNames(t *testing.T) {
	documented := documentedNames(t)
	objs := kibanaObjects(t)
	byID := map[string]kibanaObject{}
	for _, o := range objs {
		byID[o.Type+"/"+o.ID] = o
	}
	// Every reference resolves inside the file, so the import needs nothing else.
	var dashboards int
	for _, o := range objs {
		for _, r := range o.References {
			assert.Contains(t, byID, r.Type+"/"+r.ID, "%s %s references a missing %s %s", o.Type, o.ID, r.Type, r.ID)
		}
		if o.Type == "dashboard" {
			dashboards++
		}
	}
	assert.Equal(t, 1, dashboards)

	var all []string
	for _, o := range objs {
		if o.Type != "lens" {
			continue
		}
		names := esMetricNames(string(o.Attributes))
		assert.NotEmpty(t, names, "lens %s uses no metric", o.ID)
		checkNames(t, kibanaDashboard, names, func(n string) bool { return documented[n] })
		all = append(all, names...)
	}
	for _, n := range []string{"disk_health.disk.utilization", "system.filesystem.utilization", "disk_health.filesystem.status", "hw.status"} {
		assert.Contains(t, all, n)
	}
	// The data view is the data stream the elasticsearch exporter writes (TestElasticsearchExporter).
	var view struct {
		Title string `json:"title"`
	}
	require.Contains(t, byID, "index-pattern/otelcol-diskhealth-metrics")
	require.NoError(t, json.Unmarshal(byID["index-pattern/otelcol-diskhealth-metrics"].Attributes, &view))
	assert.Equal(t, "metrics-diskhealthreceiver.otel-*", view.Title)
}

func TestDashboardsHaveTheSamePanels(t *testing.T) {
	panels, _ := grafanaQueries(t)
	var grafana []string
	for _, p := range panels {
		grafana = append(grafana, p.Title)
	}
	var kibana []string
	objs := kibanaObjects(t)
	titles := map[string]string{}
	for _, o := range objs {
		var a struct {
			Title string `json:"title"`
		}
		require.NoError(t, json.Unmarshal(o.Attributes, &a))
		titles[o.Type+"/"+o.ID] = a.Title
	}
	for _, o := range objs {
		if o.Type == "dashboard" {
			for _, r := range o.References {
				kibana = append(kibana, titles[r.Type+"/"+r.ID])
			}
		}
	}
	assert.Equal(t, grafana, kibana, "the Grafana and Kibana dashboards show the same panels, in the same order")
}

func TestAlertRuleNames(t *testing.T) {
	documented := promNames(t, loadDocumentation(t))
	var all []string
	for name, expr := range ruleExprs(t) {
		names := promqlMetricNames(expr)
		assert.NotEmpty(t, names, "rule %s selects no metric", name)
		checkNames(t, rulesFile, names, func(n string) bool { _, ok := documented[n]; return ok })
		all = append(all, names...)
	}
	// The GPU rules join DCGM's exporter (DCGM_*): every other name in them is the receiver's.
	for name, expr := range ruleExprsOf(t, gpuRulesFile) {
		var ours []string
		for _, n := range promqlMetricNames(expr) {
			if !strings.HasPrefix(n, "DCGM_") {
				ours = append(ours, n)
			}
		}
		assert.NotEmpty(t, ours, "rule %s selects none of the receiver's metrics", name)
		checkNames(t, gpuRulesFile, ours, func(n string) bool { _, ok := documented[n]; return ok })
	}
	// The seed's five alerts, each on the receiver's own metric.
	for _, n := range []string{"disk_health_disk_utilization_ratio", "disk_health_disk_operation_average_time_seconds",
		"system_filesystem_utilization_ratio", "disk_health_filesystem_time_to_full_seconds", "hw_status"} {
		assert.Contains(t, all, n)
	}
}

// TestAlertingExamplesNames: every metric the alerting examples of docs/alerting.md name, for each
// backend, is one the documentation lists (under that backend's names).
func TestAlertingExamplesNames(t *testing.T) {
	documented := documentedNames(t)
	prom := promNames(t, loadDocumentation(t))
	doc, err := os.ReadFile(alertingDoc)
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```([a-z]+)\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	langs := map[string]int{}
	for _, b := range blocks {
		lang, text := b[1], b[2]
		langs[lang]++
		var names []string
		allowed := func(n string) bool { return documented[n] }
		switch lang {
		case "esql":
			names = esMetricNames(text)
		case "datadog":
			names = datadogMetricNames(text)
		case "promql":
			names = promqlMetricNames(text)
			allowed = func(n string) bool { _, ok := prom[n]; return ok }
		default:
			continue
		}
		assert.NotEmpty(t, names, "a %s block selects no metric:\n%s", lang, text)
		checkNames(t, alertingDoc, names, allowed)
	}
	assert.Positive(t, langs["esql"], "no Elasticsearch example")
	assert.Positive(t, langs["datadog"], "no Datadog example")
}

// TestRulesReadMetricsOnByDefault: every metric of the receiver's that an alert rule reads (both rule
// files) is on by default in its source's metadata, so a rule fires as shipped once its source runs
// (sources that are opt-in, as filelat, say so in the rule). PodGPUIdleWaitingOnIO read the pod's 10 s
// stall gauge, which is off by default and on in no shipped config: as shipped it never fired.
func TestRulesReadMetricsOnByDefault(t *testing.T) {
	prom := promNames(t, loadDocumentation(t))
	_, byDefault := sourceMetrics(t)
	// The receiver's own metric (disk_health.source.status) is documented beside the sources'.
	data, err := os.ReadFile(receiverDocumentation)
	require.NoError(t, err)
	defaults, _, _ := strings.Cut(string(data), "\n## Optional Metrics")
	ms, err := parseDocumentation(data)
	require.NoError(t, err)
	for _, m := range ms {
		byDefault[m.Name] = strings.Contains(defaults, "\n### "+m.Name+"\n")
	}
	for _, file := range []string{rulesFile, gpuRulesFile} {
		for rule, expr := range ruleExprsOf(t, file) {
			for _, n := range promqlMetricNames(expr) {
				if strings.HasPrefix(n, "DCGM_") {
					continue
				}
				require.Contains(t, prom, n, "%s: %s", file, rule)
				assert.True(t, byDefault[prom[n]], "%s: %s reads %s (%s), off by default", file, rule, n, prom[n])
			}
		}
	}
}

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The metric names that dashboards, alert rules and backend queries may use come from one place: the
// generated documentation.md of each source. These helpers read them and translate their names the way
// each backend spells them.

// docMetric is one metric of documentation.md: its `### name` heading and the first table below it.
type docMetric struct {
	Name      string
	Unit      string
	Type      string // Sum, Gauge, Histogram
	Monotonic bool
}

// documentationGlob finds the generated documentation.md of every source.
const documentationGlob = "../receiver/diskhealthreceiver/internal/scraper/*/documentation.md"

// receiverDocumentation is the receiver's own documentation.md: the metric it emits about its sources
// (disk_health.source.status).
const receiverDocumentation = "../receiver/diskhealthreceiver/documentation.md"

// parseDocumentation reads the metric sections of an mdatagen documentation.md: each `### name`
// heading up to the resource attributes, with Unit, Metric Type and Monotonic from its table.
func parseDocumentation(data []byte) ([]docMetric, error) {
	var out []docMetric
	var cur *docMetric
	var header []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "## ") && strings.Contains(line, "Attributes"):
			// Resource attributes (and anything after) are not metrics.
			return out, finish(cur)
		case strings.HasPrefix(line, "### "):
			if err := finish(cur); err != nil {
				return nil, err
			}
			out = append(out, docMetric{Name: strings.TrimSpace(strings.TrimPrefix(line, "### "))})
			cur, header = &out[len(out)-1], nil
		case cur != nil && cur.Type == "" && strings.HasPrefix(line, "|"):
			cells := splitRow(line)
			switch {
			case header == nil:
				header = cells
			case strings.HasPrefix(cells[0], "---"):
			default:
				if len(cells) != len(header) {
					return nil, fmt.Errorf("line %d (%s): %d cells under a %d-column header", n, cur.Name, len(cells), len(header))
				}
				for i, h := range header {
					switch h {
					case "Unit":
						cur.Unit = cells[i]
					case "Metric Type":
						cur.Type = cells[i]
					case "Monotonic":
						cur.Monotonic = cells[i] == "true"
					}
				}
				if cur.Type == "" {
					return nil, fmt.Errorf("line %d (%s): no Metric Type column", n, cur.Name)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, finish(cur)
}

func finish(m *docMetric) error {
	if m != nil && m.Type == "" {
		return fmt.Errorf("metric %s has no table", m.Name)
	}
	return nil
}

func splitRow(line string) []string {
	cells := strings.Split(strings.Trim(line, "|"), "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

func loadDocumentation(t *testing.T) []docMetric {
	t.Helper()
	docs, err := filepath.Glob(documentationGlob)
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	docs = append(docs, receiverDocumentation)
	var all []docMetric
	seen := map[string]docMetric{}
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		require.NoError(t, err)
		ms, err := parseDocumentation(data)
		require.NoError(t, err, doc)
		require.NotEmpty(t, ms, doc)
		for _, m := range ms {
			// hw.status and hw.errors are emitted by two sources (SMART: physical disks; stack: logical
			// disks and kernel counters): one name, so one unit and type.
			if prev, dup := seen[m.Name]; dup {
				require.Equal(t, prev, m, "%s is documented twice with different units or types (%s)", m.Name, doc)
				continue
			}
			seen[m.Name] = m
			all = append(all, m)
		}
	}
	return all
}

// promUnits are the unit suffixes of the Prometheus exporter's UnderscoreEscapingWithSuffixes
// translation for the units the receiver uses; an unknown unit fails the test, so a new one is looked
// up instead of guessed.
var promUnits = map[string]string{
	"By": "bytes", "s": "seconds", "ms": "milliseconds", "Cel": "celsius", "%": "percent", "1": "",
}

var promPerUnits = map[string]string{"s": "second", "m": "minute", "h": "hour", "d": "day"}

// promName is the name the Prometheus exporter gives a metric: dots to underscores, the unit as a
// suffix ({annotations} dropped, "/s" as _per_second), _ratio for unit-1 gauges, _total for
// monotonic sums.
func promName(m docMetric) (string, error) {
	name := regexp.MustCompile(`[^a-zA-Z0-9_:]+`).ReplaceAllString(m.Name, "_")
	main, per, _ := strings.Cut(m.Unit, "/")
	var suffix []string
	if !strings.HasPrefix(main, "{") {
		s, ok := promUnits[main]
		if !ok {
			return "", fmt.Errorf("%s: unit %q has no known Prometheus suffix", m.Name, m.Unit)
		}
		if s != "" {
			suffix = append(suffix, s)
		}
	}
	if per != "" {
		s, ok := promPerUnits[per]
		if !ok {
			return "", fmt.Errorf("%s: unit %q has no known Prometheus suffix", m.Name, m.Unit)
		}
		suffix = append(suffix, "per", s)
	}
	for _, s := range suffix {
		if !slices.Contains(strings.Split(name, "_"), s) {
			name += "_" + s
		}
	}
	// _total (counters) and _ratio (unit-1 gauges) move to the end: the translator drops the word
	// wherever the name has it and appends it (disk_health.io.linux.pressure.total in s ->
	// disk_health_io_linux_pressure_seconds_total).
	if m.Type == "Sum" && m.Monotonic {
		name = moveToEnd(name, "total")
	}
	if m.Unit == "1" && m.Type == "Gauge" {
		name = moveToEnd(name, "ratio")
	}
	return name, nil
}

func moveToEnd(name, word string) string {
	tokens := slices.DeleteFunc(strings.Split(name, "_"), func(s string) bool { return s == word })
	return strings.Join(append(tokens, word), "_")
}

// promNames maps each Prometheus name of the documented metrics to its OTel name.
func promNames(t *testing.T, ms []docMetric) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range ms {
		p, err := promName(m)
		require.NoError(t, err)
		require.NotContains(t, out, p, "two metrics translate to %s", p)
		out[p] = m.Name
		if m.Type == "ExponentialHistogram" {
			// A native histogram; a Prometheus without --enable-feature=native-histograms scrapes the
			// text format, where it is a classic histogram with only the +Inf bucket.
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				out[p+suffix] = m.Name
			}
		}
	}
	return out
}

var (
	promStringRe   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promVariableRe = regexp.MustCompile(`\$\{[^}]*\}|\[\[[^\]]*\]\]|\$[A-Za-z_][A-Za-z0-9_]*`)
	promLabelsRe   = regexp.MustCompile(`\{[^{}]*\}`)
	promRangeRe    = regexp.MustCompile(`\[[^\[\]]*\]`)
	promGroupingRe = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promNumberRe   = regexp.MustCompile(`\b[0-9][0-9a-zA-Z.]*`)
	promIdentRe    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	grafanaLabelRe = regexp.MustCompile(`\blabel_values\s*\(([^,()]*(?:\{[^}]*\})?)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)`)
)

var promKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true,
	"on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true,
	"Inf": true, "NaN": true,
}

// promqlMetricNames returns the metric names a PromQL expression selects (Grafana's $variables and
// label_values(metric, label) allowed): what remains after strings, # comments, label matchers,
// ranges, grouping clauses, numbers, functions and keywords are taken out.
func promqlMetricNames(expr string) []string {
	s := grafanaLabelRe.ReplaceAllString(expr, "($1)")
	s = promStringRe.ReplaceAllString(s, `""`)
	s = regexp.MustCompile(`#[^\n]*`).ReplaceAllString(s, " ")
	s = promVariableRe.ReplaceAllString(s, "1")
	s = promLabelsRe.ReplaceAllString(s, " ")
	s = promRangeRe.ReplaceAllString(s, " ")
	s = promGroupingRe.ReplaceAllString(s, " ")
	s = promNumberRe.ReplaceAllString(s, " ")
	var out []string
	for _, m := range promIdentRe.FindAllString(s, -1) {
		if strings.HasSuffix(m, "(") || promKeywords[m] || slices.Contains(out, m) {
			continue // a function or aggregation call, or a keyword
		}
		out = append(out, m)
	}
	return out
}

// esMetricNames returns the metric names an Elasticsearch/Kibana text refers to through otel-mode
// fields (metrics.<name>).
func esMetricNames(text string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\bmetrics\.([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)`).FindAllStringSubmatch(text, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// datadogMetricNames returns the OTel names a Datadog query refers to: otel.<name> (the Datadog
// mapping prefixes system.*), hw.* and disk_health.* (not prefixed) and system.disk.in_use (its copy of
// system.filesystem.utilization). Tag filters and groupings ({...}) are not names.
func datadogMetricNames(text string) []string {
	text = regexp.MustCompile(`\{[^{}]*\}`).ReplaceAllString(text, " ")
	var out []string
	for _, m := range regexp.MustCompile(`\botel\.([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)|\b((?:hw|disk_health)(?:\.[a-z0-9_]+)+)|\bsystem\.disk\.in_use\b`).FindAllStringSubmatch(text, -1) {
		name := m[1] + m[2]
		if name == "" {
			name = "system.filesystem.utilization"
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func TestParseDocumentation(t *testing.T) {
	doc := "# x\n## Default Metrics\n### a.b\n\ntext | not a table\n\n| Unit | Metric Type | Value Type | Aggregation Temporality | Monotonic | Stability |\n" +
		"| ---- | --- | --- | --- | --- | --- |\n| By | Sum | Int | Cumulative | true | Development |\n\n#### Attributes\n\n| Name | Description |\n| --- | --- |\n| d | e |\n" +
		"### c\n| Unit | Metric Type | Value Type | Stability |\n| --- | --- | --- | --- |\n| 1 | Gauge | Double | Development |\n" +
		"## Resource Attributes\n### not.a.metric\n"
	ms, err := parseDocumentation([]byte(doc))
	require.NoError(t, err)
	assert.Equal(t, []docMetric{{Name: "a.b", Unit: "By", Type: "Sum", Monotonic: true}, {Name: "c", Unit: "1", Type: "Gauge"}}, ms)

	_, err = parseDocumentation([]byte("### lonely\n"))
	require.ErrorContains(t, err, "lonely has no table")
	_, err = parseDocumentation([]byte("### x\n| Unit | Metric Type |\n| --- | --- |\n| By |\n"))
	require.ErrorContains(t, err, "1 cells under a 2-column header")

	// The real file: every metric has a unit Prometheus can translate.
	real := loadDocumentation(t)
	assert.NotEmpty(t, promNames(t, real))
}

func TestPromName(t *testing.T) {
	// Expected values are the names prometheusexporter v0.165.1 served for these metrics (checked
	// again against the live exporter in TestPrometheusServer).
	tests := []struct {
		m    docMetric
		want string
	}{
		{docMetric{"system.disk.io", "By", "Sum", true}, "system_disk_io_bytes_total"},
		{docMetric{"system.disk.operations", "{operation}", "Sum", true}, "system_disk_operations_total"},
		{docMetric{"system.disk.io_time", "s", "Sum", true}, "system_disk_io_time_seconds_total"},
		{docMetric{"disk_health.disk.utilization", "1", "Gauge", false}, "disk_health_disk_utilization_ratio"},
		{docMetric{"disk_health.disk.throughput", "By/s", "Gauge", false}, "disk_health_disk_throughput_bytes_per_second"},
		{docMetric{"disk_health.disk.merge.rate", "{operation}/s", "Gauge", false}, "disk_health_disk_merge_rate_per_second"},
		{docMetric{"disk_health.disk.queue.length", "{operation}", "Gauge", false}, "disk_health_disk_queue_length"},
		{docMetric{"disk_health.filesystem.status", "1", "Sum", false}, "disk_health_filesystem_status"},
		{docMetric{"system.filesystem.limit", "By", "Sum", false}, "system_filesystem_limit_bytes"},
		{docMetric{"disk_health.filesystem.time_to_full", "s", "Gauge", false}, "disk_health_filesystem_time_to_full_seconds"},
		{docMetric{"hw.temperature", "Cel", "Gauge", false}, "hw_temperature_celsius"},
		{docMetric{"disk_health.disk.merge.ratio", "1", "Gauge", false}, "disk_health_disk_merge_ratio"},
		{docMetric{"x.seconds", "s", "Gauge", false}, "x_seconds"},
		{docMetric{"x.total", "1", "Sum", true}, "x_total"},
		{docMetric{"disk_health.io.linux.pressure.total", "s", "Sum", true}, "disk_health_io_linux_pressure_seconds_total"},
		{docMetric{"disk_health.io.linux.pressure.10s", "1", "Gauge", false}, "disk_health_io_linux_pressure_10s_ratio"},
		{docMetric{"a.ratio.b", "1", "Gauge", false}, "a_b_ratio"},
	}
	for _, tt := range tests {
		got, err := promName(tt.m)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, tt.m.Name)
	}
	_, err := promName(docMetric{"x", "furlong", "Gauge", false})
	assert.ErrorContains(t, err, `unit "furlong"`)
}

func TestPromqlMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`disk_health_disk_utilization_ratio > 0.9`, []string{"disk_health_disk_utilization_ratio"}},
		{`sum by (host_name, system_device) (rate(system_disk_io_bytes_total{disk_io_direction="read", host_name=~"$host"}[$__rate_interval]))`,
			[]string{"system_disk_io_bytes_total"}},
		{`topk(5, max without(a) (x_total offset 5m)) / on(host_name) group_left(hw_model) y and z unless bool_thing`,
			[]string{"x_total", "y", "z", "bool_thing"}},
		{`label_values(system_disk_io_bytes_total{host_name="$host"}, system_device)`, []string{"system_disk_io_bytes_total"}},
		{`label_replace(a, "dst", "$1", "src", "(.*)") * 1e3 + histogram_quantile(0.9, b[5m:1m])`, []string{"a", "b"}},
		{`max_over_time(m{l="}"}[1h]) > Inf`, []string{"m"}},
		{`${metric}` + ` + [[legacy]]`, nil},
		{"a > 1 # for: 10m\nb{l=\"#x\"} # c d", []string{"a", "b"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, promqlMetricNames(tt.expr), tt.expr)
	}
}

func TestESAndDatadogMetricNames(t *testing.T) {
	assert.Equal(t, []string{"disk_health.disk.utilization", "system.filesystem.usage"},
		esMetricNames(`FROM metrics-* | WHERE metrics.disk_health.disk.utilization > 0.9 | STATS MAX(metrics.system.filesystem.usage), x.metrics_y BY metrics.disk_health.disk.utilization`))
	assert.Equal(t, []string{"disk_health.disk.utilization", "system.filesystem.utilization", "hw.status"},
		datadogMetricNames(`avg(last_10m):max:disk_health.disk.utilization{*} by {host} > 0.9 || max:system.disk.in_use{*}
max(last_5m):max:hw.status{hw.state:predicted_failure} by {host,hw.id} >= 1`))
}

// checkNames fails for every name in names that is not in allowed, naming the file it came from.
func checkNames(t *testing.T, file string, names []string, allowed func(string) bool) {
	t.Helper()
	for _, n := range names {
		assert.True(t, allowed(n), "%s: %s is not a metric documentation.md lists", filepath.Base(file), n)
	}
}

package semconvcheck

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Metric is one metric the receiver can emit.
type Metric struct {
	Name       string
	Type       string // gauge, sum, histogram, exponential_histogram
	Monotonic  bool   // sums only
	Unit       string
	Attributes []Attribute
	Source     string // where it is declared, for messages
}

// Attribute is one attribute key the receiver can emit, on a metric, a resource or a log record.
type Attribute struct {
	Key string
	// Type is mdatagen's word: string, int, double, bool, slice, map, bytes; "" when unknown.
	Type string
	// Values are its enum values where the declaration lists them.
	Values []string
	Source string
}

// Emitted is everything the receiver can emit: its metrics, and the attributes it sets outside any
// metric's declaration (resource attributes, log record attributes, attributes put by hand).
type Emitted struct {
	Metrics    []Metric
	Attributes []Attribute
}

// Instrument is the conventions' instrument for a metric of this shape.
func (m Metric) Instrument() string {
	switch m.Type {
	case "sum":
		if m.Monotonic {
			return "counter"
		}
		return "updowncounter"
	case "exponential_histogram":
		return "histogram"
	}
	return m.Type
}

// ParseMetadata reads one mdatagen metadata.yaml: its metrics with their attributes (name_override
// applied) and its resource attributes.
func ParseMetadata(data []byte, source string) (Emitted, error) {
	type attr struct {
		NameOverride string   `yaml:"name_override"`
		Type         string   `yaml:"type"`
		Enum         []string `yaml:"enum"`
	}
	var md struct {
		Attributes         map[string]attr `yaml:"attributes"`
		ResourceAttributes map[string]attr `yaml:"resource_attributes"`
		Metrics            map[string]struct {
			Unit  string `yaml:"unit"`
			Gauge *struct {
				ValueType string `yaml:"value_type"`
			} `yaml:"gauge"`
			Sum *struct {
				Monotonic bool `yaml:"monotonic"`
			} `yaml:"sum"`
			Histogram  *struct{} `yaml:"histogram"`
			Attributes []string  `yaml:"attributes"`
		} `yaml:"metrics"`
	}
	if err := yaml.Unmarshal(data, &md); err != nil {
		return Emitted{}, fmt.Errorf("%s: %w", source, err)
	}
	toAttr := func(id string, a attr) Attribute {
		key := id
		if a.NameOverride != "" {
			key = a.NameOverride
		}
		return Attribute{Key: key, Type: a.Type, Values: a.Enum, Source: source}
	}
	var out Emitted
	for _, id := range sortedKeys(md.ResourceAttributes) {
		out.Attributes = append(out.Attributes, toAttr(id, md.ResourceAttributes[id]))
	}
	for _, name := range sortedKeys(md.Metrics) {
		mm := md.Metrics[name]
		m := Metric{Name: name, Unit: mm.Unit, Source: source}
		switch {
		case mm.Gauge != nil:
			m.Type = "gauge"
		case mm.Sum != nil:
			m.Type, m.Monotonic = "sum", mm.Sum.Monotonic
		case mm.Histogram != nil:
			m.Type = "histogram"
		default:
			return Emitted{}, fmt.Errorf("%s: metric %s has no type", source, name)
		}
		for _, id := range mm.Attributes {
			a, ok := md.Attributes[id]
			if !ok {
				return Emitted{}, fmt.Errorf("%s: metric %s: unknown attribute %s", source, name, id)
			}
			m.Attributes = append(m.Attributes, toAttr(id, a))
		}
		out.Metrics = append(out.Metrics, m)
	}
	return out, nil
}

// ParseDocumentedMetrics reads the metrics a documentation page describes in mdatagen's layout
// ("### <name>", the unit/type table, "#### Attributes"): how the metrics mdatagen cannot render
// (histograms) are declared, in the sources' documentation-extra.md. Other sections are skipped.
func ParseDocumentedMetrics(data []byte, source string) ([]Metric, error) {
	var out []Metric
	var cur *Metric
	var section string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "### "):
			out = appendMetric(out, cur)
			cur, section = &Metric{Name: strings.TrimPrefix(line, "### "), Source: source}, "metric"
		case strings.HasPrefix(line, "## "):
			out, cur = appendMetric(out, cur), nil
		case strings.HasPrefix(line, "#### Attributes"):
			section = "attributes"
		case cur != nil && strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| Unit") &&
			!strings.HasPrefix(line, "| Name") && !strings.HasPrefix(line, "| ---"):
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			if section == "metric" && cur.Type == "" && len(cells) >= 5 {
				cur.Unit = cells[0]
				cur.Type, cur.Monotonic = docType(cells[1]), cells[4] == "true"
			} else if section == "attributes" && len(cells) >= 3 {
				typ, values := docValues(cells[2])
				cur.Attributes = append(cur.Attributes, Attribute{Key: cells[0], Type: typ, Values: values, Source: source})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return appendMetric(out, cur), nil
}

// appendMetric keeps m if its section was a metric's (it had the unit/type table).
func appendMetric(out []Metric, m *Metric) []Metric {
	if m != nil && m.Type != "" {
		out = append(out, *m)
	}
	return out
}

func docType(s string) string {
	switch s {
	case "ExponentialHistogram":
		return "exponential_histogram"
	case "Histogram":
		return "histogram"
	case "Sum":
		return "sum"
	}
	return "gauge"
}

// docValues reads mdatagen's values cell: "Any Str", "Any Int" …, or "Str: “a“, “b“".
func docValues(cell string) (string, []string) {
	kind, list, enum := strings.Cut(cell, ": ")
	kind = strings.TrimPrefix(kind, "Any ")
	typ := map[string]string{"Str": "string", "Int": "int", "Double": "double", "Bool": "bool", "Slice": "slice", "Map": "map", "Bytes": "bytes"}[kind]
	if !enum {
		return typ, nil
	}
	var values []string
	for _, v := range strings.Split(list, ", ") {
		values = append(values, strings.Trim(v, "`"))
	}
	return typ, values
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

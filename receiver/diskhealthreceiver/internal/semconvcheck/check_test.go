package semconvcheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A small model in both of the conventions' file formats: v1 groups (a registry, a metric that
// extends a group, a deprecated metric and attribute) and v2 definitions (attributes by key, an
// attribute group used by ref_group, a metric and a refinement of it).
const (
	modelV1 = `groups:
  - id: registry.disk
    type: attribute_group
    attributes:
      - id: disk.io.direction
        stability: release_candidate
        type:
          members:
            - id: read
              value: 'read'
            - id: write
              value: 'write'
      - id: system.device
        type: string
      - id: state
        type: string
        deprecated:
          reason: renamed
          renamed_to: db.client.connection.state
  - id: disk.common
    type: attribute_group
    attributes:
      - ref: system.device
  - id: metric.system.disk.io
    type: metric
    metric_name: system.disk.io
    stability: development
    instrument: counter
    unit: "By"
    extends: disk.common
    attributes:
      - ref: disk.io.direction
  - id: metric.system.disk.old
    type: metric
    metric_name: system.disk.old
    instrument: counter
    unit: "By"
    deprecated:
      reason: obsoleted
`
	modelV2 = `file_format: definition/2
attributes:
  - key: hw.id
    type: string
  - key: hw.vendor
    type: string
  - key: hw.size.bytes
    type: int
attribute_groups:
  - id: hw.common
    visibility: internal
    attributes:
      - ref: hw.id
        requirement_level: required
metrics:
  - name: hw.status
    instrument: updowncounter
    unit: "1"
    attributes:
      - ref_group: hw.common
metric_refinements:
  - id: metric.hw.disk.status
    ref: hw.status
    attributes:
      - ref: hw.vendor
        requirement_level: required
`
)

func testModel(t *testing.T) *Model {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "hw"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "disk.yaml"), []byte(modelV1), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hw", "metrics.yaml"), []byte(modelV2), 0o644))
	m, err := LoadModel(dir)
	require.NoError(t, err)
	return m
}

func TestLoadModel(t *testing.T) {
	m := testModel(t)
	io := m.Metrics["system.disk.io"]
	require.NotNil(t, io)
	assert.Equal(t, "counter", io.Instrument)
	assert.Equal(t, "By", io.Unit)
	assert.Equal(t, "development", io.Stability)
	assert.Equal(t, map[string]string{"system.device": "recommended", "disk.io.direction": "recommended"}, io.Attributes, "extends and refs")
	assert.True(t, m.Metrics["system.disk.old"].Deprecated)
	// The refinement adds hw.vendor, required only where it applies.
	assert.Equal(t, map[string]string{"hw.id": "required", "hw.vendor": "conditionally_required"}, m.Metrics["hw.status"].Attributes)

	dir := m.Attributes["disk.io.direction"]
	assert.Equal(t, "string", dir.Type)
	assert.Equal(t, []string{"read", "write"}, dir.Members)
	assert.Equal(t, "release_candidate", dir.Stability)
	assert.True(t, m.Attributes["state"].Deprecated)
	assert.Equal(t, "int", m.Attributes["hw.size.bytes"].Type)

	ns := m.Namespaces()
	for _, owned := range []string{"system", "system.disk", "disk", "disk.io", "hw", "hw.size"} {
		assert.True(t, ns[owned], owned)
	}
	assert.False(t, ns["system.disk.io"], "a metric's own name is not a namespace of the model")
}

func TestLoadModelMissing(t *testing.T) {
	_, err := LoadModel(filepath.Join(t.TempDir(), "absent"))
	require.Error(t, err)
	_, err = LoadModel(t.TempDir())
	require.ErrorContains(t, err, "no model files")
}

// conforming is output the model accepts: each rule's case below breaks exactly one thing of it.
func conforming() Emitted {
	return Emitted{Metrics: []Metric{
		{Name: "system.disk.io", Type: "sum", Monotonic: true, Unit: "By", Attributes: []Attribute{
			{Key: "system.device", Type: "string"}, {Key: "disk.io.direction", Type: "string", Values: []string{"read", "write"}},
		}},
		{Name: "hw.status", Type: "sum", Unit: "1", Attributes: []Attribute{{Key: "hw.id", Type: "string"}, {Key: "hw.vendor", Type: "string"}}},
		{Name: "disk_health.scrape.errors", Type: "sum", Monotonic: true, Unit: "{error}"},
	}}
}

func TestCheckConforming(t *testing.T) {
	assert.Empty(t, Check(testModel(t), conforming()))
}

// addMetric is a change that adds m to the output.
func addMetric(m Metric) func(*Emitted) {
	return func(e *Emitted) { e.Metrics = append(e.Metrics, m) }
}

// addAttributes is a change that adds attributes set outside any metric's declaration.
func addAttributes(as ...Attribute) func(*Emitted) {
	return func(e *Emitted) { e.Attributes = append(e.Attributes, as...) }
}

func TestCheckRules(t *testing.T) {
	m := testModel(t)
	for _, tc := range []struct {
		name   string
		change func(*Emitted)
		want   Violation
		also   []Violation // what the same change breaks besides
	}{{
		name:   "wrong instrument: a counter sent as a gauge",
		change: func(e *Emitted) { e.Metrics[0].Type = "gauge" },
		want:   Violation{Rule: RuleInstrument, Metric: "system.disk.io"},
	}, {
		name:   "non-monotonic sum for a counter",
		change: func(e *Emitted) { e.Metrics[0].Monotonic = false },
		want:   Violation{Rule: RuleInstrument, Metric: "system.disk.io"},
	}, {
		name:   "wrong unit",
		change: func(e *Emitted) { e.Metrics[0].Unit = "KiBy" },
		want:   Violation{Rule: RuleUnit, Metric: "system.disk.io"},
	}, {
		name: "attribute the model does not give the metric",
		change: func(e *Emitted) {
			e.Metrics[0].Attributes = append(e.Metrics[0].Attributes, Attribute{Key: "hw.id", Type: "string"})
		},
		want: Violation{Rule: RuleMetricAttribute, Metric: "system.disk.io", Attribute: "hw.id"},
	}, {
		name:   "required attribute missing",
		change: func(e *Emitted) { e.Metrics[1].Attributes = e.Metrics[1].Attributes[1:] },
		want:   Violation{Rule: RuleRequiredAttribute, Metric: "hw.status", Attribute: "hw.id"},
	}, {
		name:   "attribute type",
		change: addAttributes(Attribute{Key: "hw.size.bytes", Type: "string"}),
		want:   Violation{Rule: RuleAttributeType, Attribute: "hw.size.bytes"},
	}, {
		name:   "enum value that is no member",
		change: func(e *Emitted) { e.Metrics[0].Attributes[1].Values = []string{"read", "write", "discard"} },
		want:   Violation{Rule: RuleEnumMember, Attribute: "disk.io.direction", Value: "discard"},
	}, {
		name:   "metric of ours in a namespace the model owns",
		change: addMetric(Metric{Name: "system.disk.kernel.errors", Type: "sum", Monotonic: true, Unit: "{error}"}),
		want:   Violation{Rule: RuleOwnedNamespace, Metric: "system.disk.kernel.errors"},
	}, {
		name:   "attribute of ours in a namespace the model owns",
		change: addAttributes(Attribute{Key: "disk.wwn", Type: "string"}),
		want:   Violation{Rule: RuleOwnedNamespace, Attribute: "disk.wwn"},
	}, {
		name:   "collision: ours under a metric of the model",
		change: addMetric(Metric{Name: "system.disk.io.rate", Type: "gauge", Unit: "By/s"}),
		want:   Violation{Rule: RuleMetricNamespaceCollision, Metric: "system.disk.io.rate"},
		also:   []Violation{{Rule: RuleOwnedNamespace, Metric: "system.disk.io.rate"}},
	}, {
		name:   "collision: two of ours",
		change: addMetric(Metric{Name: "disk_health.scrape.errors.total", Type: "gauge", Unit: "1"}),
		want:   Violation{Rule: RuleMetricNamespaceCollision, Metric: "disk_health.scrape.errors.total"},
	}, {
		name:   "collision: ours is the namespace of a metric of the model",
		change: addMetric(Metric{Name: "hw", Type: "gauge", Unit: "1"}),
		want:   Violation{Rule: RuleMetricNamespaceCollision, Metric: "hw"},
	}, {
		name:   "attribute collision",
		change: addAttributes(Attribute{Key: "nvme.status", Type: "string"}, Attribute{Key: "nvme.status.dnr", Type: "bool"}),
		want:   Violation{Rule: RuleAttributeNamespaceCollision, Attribute: "nvme.status.dnr"},
	}, {
		name:   "deprecated attribute",
		change: addAttributes(Attribute{Key: "state", Type: "string"}),
		want:   Violation{Rule: RuleDeprecated, Attribute: "state"},
	}, {
		name:   "deprecated metric",
		change: addMetric(Metric{Name: "system.disk.old", Type: "sum", Monotonic: true, Unit: "By"}),
		want:   Violation{Rule: RuleDeprecated, Metric: "system.disk.old"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := conforming()
			tc.change(&e)
			got := Check(m, e)
			for i := range got {
				assert.NotEmpty(t, got[i].Detail)
				got[i].Detail = ""
			}
			assert.ElementsMatch(t, append([]Violation{tc.want}, tc.also...), got)
		})
	}
}

// TestCheckOpenEnum: an enum whose only member is _OTHER (error.type) names no well-known values, so
// any value is the model's.
func TestCheckOpenEnum(t *testing.T) {
	m := testModel(t)
	m.Attributes["error.type"] = &ModelAttribute{Key: "error.type", Type: "string", Members: []string{"_OTHER"}}
	e := conforming()
	e.Attributes = append(e.Attributes, Attribute{Key: "error.type", Type: "string", Values: []string{"crc"}})
	assert.Empty(t, Check(m, e))
}

func TestExceptions(t *testing.T) {
	table, err := ParseExceptions([]byte(`exceptions:
  - rule: metric_namespace_collision
    metric: system.disk.io.rate
    reason: "#32"
  - rule: deprecated
    attribute: state
    reason: "#32"
`))
	require.NoError(t, err)
	violations := []Violation{
		{Rule: RuleMetricNamespaceCollision, Metric: "system.disk.io.rate"},
		{Rule: RuleOwnedNamespace, Attribute: "disk.wwn"},
	}
	unlisted, stale := Reconcile(violations, table)
	assert.Equal(t, []Violation{{Rule: RuleOwnedNamespace, Attribute: "disk.wwn"}}, unlisted, "a new violation fails")
	assert.Equal(t, []Exception{table[1]}, stale, "an entry that no longer violates must go")

	for yaml, want := range map[string]string{
		"exceptions: [{rule: nonsense, metric: a.b, reason: x}]":                               "unknown rule",
		"exceptions: [{rule: deprecated, reason: x}]":                                          "names neither",
		"exceptions: [{rule: deprecated, metric: a.b}]":                                        "no reason",
		"exceptions: [{rule: unit, metric: a, reason: x}, {rule: unit, metric: a, reason: y}]": "listed twice",
	} {
		_, err := ParseExceptions([]byte(yaml))
		assert.ErrorContains(t, err, want, yaml)
	}
}

package semconvcheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseMetadata(t *testing.T) {
	e, err := ParseMetadata([]byte(`
resource_attributes:
  hw.vendor: {type: string}
attributes:
  client_state:
    name_override: state
    type: string
    enum: [ok, stale]
  system.device: {type: string}
metrics:
  system.disk.io:
    unit: By
    sum: {value_type: int, monotonic: true}
    attributes: [system.device]
  system.filesystem.client.state:
    unit: "1"
    gauge: {value_type: int}
    attributes: [system.device, client_state]
`), "m.yaml")
	require.NoError(t, err)
	assert.Equal(t, []Attribute{{Key: "hw.vendor", Type: "string", Source: "m.yaml"}}, e.Attributes)
	require.Len(t, e.Metrics, 2)
	assert.Equal(t, Metric{Name: "system.disk.io", Type: "sum", Monotonic: true, Unit: "By", Source: "m.yaml",
		Attributes: []Attribute{{Key: "system.device", Type: "string", Source: "m.yaml"}}}, e.Metrics[0])
	assert.Equal(t, "counter", e.Metrics[0].Instrument())
	assert.Equal(t, "gauge", e.Metrics[1].Instrument())
	assert.Equal(t, Attribute{Key: "state", Type: "string", Values: []string{"ok", "stale"}, Source: "m.yaml"}, e.Metrics[1].Attributes[1],
		"the emitted key is the name_override")

	_, err = ParseMetadata([]byte("metrics:\n  a.b:\n    unit: s\n    gauge: {}\n    attributes: [nope]\n"), "m.yaml")
	require.ErrorContains(t, err, "unknown attribute nope")
}

func TestParseDocumentedMetrics(t *testing.T) {
	ms, err := ParseDocumentedMetrics([]byte("## Exponential histograms\n\ntext | with a pipe\n\n"+
		"### system.disk.operation.duration\n\nTime each request took.\n\n"+
		"| Unit | Metric Type | Value Type | Aggregation Temporality | Monotonic | Stability |\n"+
		"| ---- | ----------- | ---------- | ----------------------- | --------- | --------- |\n"+
		"| s | ExponentialHistogram | Double | Cumulative | - | Development |\n\n#### Attributes\n\n"+
		"| Name | Description | Values | Requirement Level | Semantic Convention |\n"+
		"| ---- | ----------- | ------ | ----------------- | ------------------- |\n"+
		"| system.device | The disk. | Any Str | Recommended | - |\n"+
		"| disk.io.direction | The direction. | Str: ``read``, ``write`` | Recommended | - |\n\n"+
		"## Log events\n\n| event (EventName) | when |\n| ---- | ---- |\n| `x` | y |\n"), "extra.md")
	require.NoError(t, err)
	assert.Equal(t, []Metric{{Name: "system.disk.operation.duration", Type: "exponential_histogram", Unit: "s", Source: "extra.md",
		Attributes: []Attribute{
			{Key: "system.device", Type: "string", Source: "extra.md"},
			{Key: "disk.io.direction", Type: "string", Values: []string{"read", "write"}, Source: "extra.md"},
		}}}, ms)
}

func TestScanCode(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
	}
	write("emit/names.go", "package emit\n\nconst KeyRule = \"disk_health.rule\"\n")
	write("src/events.go", `package src

const keyState = "hw.state"

func record(a attrs) {
	a.PutStr("system.device", "sda")
	a.PutInt(keyState, 1)
	a.PutStr(emit.KeyRule, "r")
	s := a.PutEmptySlice("noisy_neighbor.shares")
	s.AppendEmpty()
	a.PutBool("nvme.phase", true)
}
`)
	write("src/events_test.go", "package src\n\nfunc f(a attrs) { a.PutStr(\"test.only\", \"\") }\n")
	write("src/generated_emitter.go", "package src\n\nfunc g(a attrs) { a.PutStr(\"from.metadata\", \"\") }\n")
	got, err := ScanCode(dir)
	require.NoError(t, err)
	byKey := map[string]string{}
	for _, a := range got {
		byKey[a.Key] = a.Type
		assert.Contains(t, a.Source, filepath.Join("src", "events.go:"))
	}
	assert.Equal(t, map[string]string{"system.device": "string", "hw.state": "int", "disk_health.rule": "string",
		"noisy_neighbor.shares": "slice", "nvme.phase": "bool"}, byKey)

	// A key the scan cannot read is an error, never a key left out.
	write("src/dynamic.go", "package src\n\nfunc h(a attrs, k string) { a.PutStr(k, \"\") }\n")
	_, err = ScanCode(dir)
	require.ErrorContains(t, err, "dynamic.go:3: the attribute key is not a string constant")
}

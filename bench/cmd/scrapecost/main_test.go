package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The debug exporter's basic line carries the batch's data point count.
func TestPointsLine(t *testing.T) {
	line := `2026-12-01T09:40:00.000Z	info	Metrics	{"resource": {}, "otelcol.component.id": "debug", "resource metrics": 1000, "metrics": 21000, "data points": 40000}`
	m := points.FindStringSubmatch(line)
	require.NotNil(t, m)
	assert.Equal(t, "40000", m[1])
}

func TestReport(t *testing.T) {
	var b bytes.Buffer
	report(&b, []result{
		{name: "a", cpu: 2 * time.Second, scrapes: 10, points: 1000, rss30: 90 << 20, rssMax: 100 << 20, anon30: 30 << 20},
		{name: "b", cpu: time.Second, scrapes: 10, points: 500, rss30: 60 << 20, rssMax: 61 << 20, anon30: 12 << 20},
		{name: "c", cpu: time.Second, scrapes: 10, points: 500, rssMax: 61 << 20}, // stopped before 30 s
		{name: "hm", cpu: time.Second, scrapes: 10, points: 500, rss30: 60 << 20, rssMax: 61 << 20, anon30: 12 << 20},
	}, 1, 1, time.Second, time.Minute)
	assert.Contains(t, b.String(), "| a | 200.0 ms | 100 | 2000.00 µs | 2.00× | 90.0 MiB | 100.0 MiB | 1.50× | 30.0 MiB | 2.50× |")
	assert.Contains(t, b.String(), "| b | 100.0 ms | 50 | 2000.00 µs | 1.00× | 60.0 MiB | 61.0 MiB | 1.00× | 12.0 MiB | 1.00× |")
	assert.Contains(t, b.String(), "| c | 100.0 ms | 50 | 2000.00 µs | 1.00× | – | 61.0 MiB | – | – | – |")
}

// The parity collector switches on exactly hostmetrics' default disk and filesystem metrics.
func TestParityYAML(t *testing.T) {
	y, err := parityYAML()
	require.NoError(t, err)
	assert.Contains(t, y, "system.disk.io: {enabled: true}")
	assert.Contains(t, y, "system.filesystem.usage: {enabled: true}")
	assert.Contains(t, y, "disk_health.disk.throughput: {enabled: false}")
	assert.Contains(t, y, "disk_health.filesystem.status: {enabled: false}")
	assert.Equal(t, 9, strings.Count(y, "{enabled: true}"))
}

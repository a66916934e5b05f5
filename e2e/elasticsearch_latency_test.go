package e2e

import (
	"math"
	"net/http/httptest"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// TestElasticsearchLatencyHistogram (issue 12, "done when" 5): the latency source through
// config/elasticsearch.yaml to the fake bulk server. The elasticsearch exporter (v0.157.0) drops
// cumulative exponential histograms, so the shipped config turns them into deltas (cumulative_to_delta,
// exponential histograms only); in otel mode each scrape's read histogram of a fresh loop device is
// then one document whose metrics.system.disk.operation.duration is an Elasticsearch `histogram` value
// (dynamic template "histogram"): ascending `values`, each the midpoint of a scale-3 bucket (the
// exporter's T-Digest form), with positive integer `counts` (empty arrays for an interval without
// reads). Over all documents the counts add up to
// exactly the reads /proc/diskstats counted on the device, and every value is at least the bucket a
// direct read from a page-cache-backed loop device cannot be below (1 µs).
func TestElasticsearchLatencyHistogram(t *testing.T) {
	testkit.RequireRoot(t, "the latency source on a loop device (loads BPF, losetup)")
	bin := collectorBinary(t)
	dir := t.TempDir()
	dev := freshLoop(t, dir, 64<<20)

	es := &fakeES{}
	srv := httptest.NewServer(es)
	t.Cleanup(srv.Close) // after the collector's cleanup: its final flush still finds the server
	t.Setenv("ELASTICSEARCH_ENDPOINT", srv.URL)
	t.Setenv("ELASTICSEARCH_API_KEY", "ZTJlOnNlY3JldA==")
	before := diskstatsOps(t, dev)
	col := startCollector(t, bin, shippedConfig(t, "elasticsearch.yaml"), append([]string{telemetryOff}, loopOnly(dev)...)...)
	require.Eventually(t, func() bool { return len(linesWith(col.output.String(), "Block latency probe attached")) > 0 },
		30*time.Second, 100*time.Millisecond, "the probe did not attach:\n%s", col.output.String())

	const reads = 300
	runCmd(t, "dd", "if=/dev/"+dev, "of=/dev/null", "bs=4096", "count="+strconv.Itoa(reads), "iflag=direct")
	after := diskstatsOps(t, dev)
	want := after["read"][0] - before["read"][0]
	require.GreaterOrEqual(t, want, uint64(reads))

	const metric = "system.disk.operation.duration"
	attrs := map[string]any{"system.device": dev, "disk.io.direction": "read"}
	var docs []bulkDoc
	var total uint64
	deadline := time.Now().Add(60 * time.Second)
	for {
		all, _, errs := es.snapshot()
		require.Empty(t, errs)
		docs, total = docs[:0], 0
		for _, d := range all {
			ms, _ := d.source["metrics"].(map[string]any)
			if _, ok := ms[metric]; !ok {
				continue
			}
			if a, _ := d.source["attributes"].(map[string]any); !equalJSON(a, attrs) {
				continue
			}
			docs = append(docs, d)
			counts, _ := ms[metric].(map[string]any)["counts"].([]any)
			for _, c := range counts {
				n, _ := c.(float64)
				total += uint64(n)
			}
		}
		if total >= want || time.Now().After(deadline) {
			break
		}
		select {
		case <-col.exited:
			t.Fatalf("the collector exited: %v", col.waitErr)
		case <-time.After(250 * time.Millisecond):
		}
	}
	require.NotEmpty(t, docs, "no document with %s for %s within 60 s:\n%s", metric, dev, col.output.String())
	assert.Equal(t, want, total, "the documents' counts add up to the reads diskstats counted on %s", dev)
	assert.Empty(t, linesWith(col.output.String(), "dropping cumulative"), "the exporter dropped no histogram")

	empty := 0
	for _, d := range docs {
		create := d.action["create"]
		require.NotNil(t, create, "action %v", d.action)
		assert.Equal(t, "metrics-diskhealthreceiver.otel-default", create["_index"])
		templates, _ := create["dynamic_templates"].(map[string]any)
		assert.Equal(t, "histogram", templates["metrics."+metric])
		assert.Equal(t, "s", d.source["unit"])
		h, _ := d.source["metrics"].(map[string]any)[metric].(map[string]any)
		values, _ := h["values"].([]any)
		counts, _ := h["counts"].([]any)
		require.Len(t, counts, len(values))
		if len(values) == 0 {
			// An interval without reads: a delta of nothing, an empty histogram.
			empty++
			continue
		}
		var vs []float64
		for i, v := range values {
			x, ok := v.(float64)
			require.True(t, ok, "values[%d] = %v", i, v)
			vs = append(vs, x)
			n, _ := counts[i].(float64)
			assert.Positive(t, n, "counts[%d]", i)
			assert.Equal(t, math.Trunc(n), n, "counts[%d] is an integer", i)
			// The midpoint of bucket b: (2^(b/8) + 2^((b+1)/8)) / 2.
			b := math.Round(8 * math.Log2(x/((1+math.Exp2(0.125))/2)))
			mid := (math.Exp2(b/8) + math.Exp2((b+1)/8)) / 2
			assert.InEpsilon(t, mid, x, 1e-9, "values[%d] = %v is the midpoint of scale-3 bucket %v", i, x, b)
			assert.GreaterOrEqual(t, x, 1e-6, "values[%d]: no read of a loop device takes under 1 µs", i)
		}
		assert.True(t, sort.Float64sAreSorted(vs) && len(vs) == len(uniq(vs)), "values ascend strictly: %v", vs)
	}
	assert.Less(t, empty, len(docs), "some document has reads")
	t.Logf("%d documents with %s for %s (%d of them of intervals without reads), %d reads in their counts (diskstats %d); one: %v",
		len(docs), metric, dev, empty, total, want, docs[len(docs)-1].source["metrics"])
}

func uniq(vs []float64) map[float64]bool {
	m := map[float64]bool{}
	for _, v := range vs {
		m[v] = true
	}
	return m
}

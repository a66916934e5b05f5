package e2e

import (
	"bytes"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// TestElasticsearchLatencyHistogram (issue 12, "done when" 5): the latency source through
// config/elasticsearch.yaml to the fake bulk server. The elasticsearch exporter (v0.157.0) drops
// cumulative exponential histograms, so the shipped config turns them into deltas (cumulative_to_delta,
// exponential histograms only); in otel mode each scrape's read histogram of a fresh loop device is
// then one document whose metrics.disk_health.disk.operation.duration is an Elasticsearch `histogram` value
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

	const metric = "disk_health.disk.operation.duration"
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

// TestElasticsearchDeviceHistogram: the SMART source's device-side latency histograms (OCP C3h latency
// monitor, Amazon D0h) are cumulative explicit-bucket histograms, which the elasticsearch exporter
// drops as it drops cumulative exponential ones; config/elasticsearch.yaml's cumulative_to_delta turns
// both kinds into deltas. No drive here keeps those logs, so the test sends the scraper's shape
// (smartscraper's golden smart-nvme-fleet.yaml: the monitor's read histogram of nvme0) over OTLP into the
// shipped pipeline, the distribution's otlp receiver in place of disk_health: two reads of one window.
// The second read's delta is one document whose metrics.<name> is an Elasticsearch histogram holding
// exactly the slow reads of the interval, with the device identity as its attributes.
func TestElasticsearchDeviceHistogram(t *testing.T) {
	bin := collectorBinary(t)
	es := &fakeES{}
	srv := httptest.NewServer(es)
	t.Cleanup(srv.Close)
	t.Setenv("ELASTICSEARCH_ENDPOINT", srv.URL)
	t.Setenv("ELASTICSEARCH_API_KEY", "ZTJlOnNlY3JldA==")
	otlpAddr := freeAddr(t)
	col := startCollector(t, bin, shippedConfig(t, "elasticsearch.yaml"), telemetryOff,
		"--set=receivers.otlp.protocols.http.endpoint="+otlpAddr, "--set=service.pipelines.metrics.receivers=[otlp]")

	const metric = "disk_health.physical_disk.latency_monitor.operation.duration"
	attrs := map[string]any{"hw.id": "test_s-nvme0", "hw.name": "nvme0", "hw.type": "physical_disk", "system.device": "nvme0n1",
		"disk.io.direction": "read", "disk_health.latency.source": "device"}
	windowStart := time.Now().Add(-24 * time.Hour)
	read := func(at time.Time, counts []uint64) pmetric.Metrics {
		md := pmetric.NewMetrics()
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("hw.id", "test_s-nvme0")
		rm.Resource().Attributes().PutStr("hw.name", "nvme0")
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("github.com/diskhealth/diskhealth/receiver/diskhealthreceiver")
		m := sm.Metrics().AppendEmpty()
		m.SetName(metric)
		m.SetUnit("s")
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dp := h.DataPoints().AppendEmpty()
		require.NoError(t, dp.Attributes().FromRaw(attrs))
		dp.SetStartTimestamp(pcommon.NewTimestampFromTime(windowStart))
		dp.SetTimestamp(pcommon.NewTimestampFromTime(at))
		dp.ExplicitBounds().FromRaw([]float64{0.030, 0.100, 0.155, 0.235})
		dp.BucketCounts().FromRaw(counts)
		var n uint64
		for _, c := range counts {
			n += c
		}
		dp.SetCount(n)
		return md
	}
	send := func(md pmetric.Metrics) {
		body, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
		require.NoError(t, err)
		var resp *http.Response
		require.Eventually(t, func() bool {
			resp, err = http.Post("http://"+otlpAddr+"/v1/metrics", "application/json", bytes.NewReader(body))
			return err == nil
		}, 30*time.Second, 100*time.Millisecond, "the collector's OTLP receiver did not answer: %v", err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	now := time.Now()
	send(read(now, []uint64{0, 77, 20, 30, 40}))
	send(read(now.Add(time.Second), []uint64{0, 80, 20, 30, 45}))

	var doc bulkDoc
	require.Eventually(t, func() bool {
		docs, _, errs := es.snapshot()
		require.Empty(t, errs)
		var ok bool
		doc, ok = findDoc(docs, metric, attrs)
		return ok
	}, 60*time.Second, 250*time.Millisecond, "no document with %s:\n%s", metric, col.output.String())
	create := doc.action["create"]
	templates, _ := create["dynamic_templates"].(map[string]any)
	assert.Equal(t, "histogram", templates["metrics."+metric])
	h, _ := doc.source["metrics"].(map[string]any)[metric].(map[string]any)
	values, _ := h["values"].([]any)
	counts, _ := h["counts"].([]any)
	require.Len(t, counts, len(values))
	got := map[float64]float64{}
	for i := range values {
		v, _ := values[i].(float64)
		c, _ := counts[i].(float64)
		got[v] = c
	}
	// The interval's 3 reads in [30, 100) ms and 5 from 235 ms on, each at its bucket's value: the midpoint
	// of a bounded bucket, the last bound for the overflow one.
	assert.Equal(t, map[float64]float64{0.030 + (0.100-0.030)/2: 3, 0.235: 5}, got)
	assert.Empty(t, linesWith(col.output.String(), "dropping cumulative"), "the exporter dropped no histogram")
}

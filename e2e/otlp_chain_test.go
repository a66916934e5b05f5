package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// flatPoint identifies one number data point with everything an OTLP hop must keep: resource
// (attributes and schema URL), scope, metric name, unit, description, type, temporality,
// monotonicity, point attributes and timestamps.
type flatPoint struct {
	key   string
	value string
}

// flatten lists every number data point of an export by its full identity.
func flatten(md pmetric.Metrics) []flatPoint {
	var out []flatPoint
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		res := fmt.Sprintf("resource=%s schema=%s", canonical(rm.Resource().Attributes()), rm.SchemaUrl())
		sms := rm.ScopeMetrics()
		for j := range sms.Len() {
			sm := sms.At(j)
			scope := fmt.Sprintf("scope=%s@%s schema=%s", sm.Scope().Name(), sm.Scope().Version(), sm.SchemaUrl())
			ms := sm.Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				var dps pmetric.NumberDataPointSlice
				kind := m.Type().String()
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
					kind += fmt.Sprintf("/%s/monotonic=%t", m.Sum().AggregationTemporality(), m.Sum().IsMonotonic())
				case pmetric.MetricTypeExponentialHistogram:
					out = append(out, flattenExpHist(res+" "+scope, m)...)
					continue
				default:
					continue
				}
				for l := range dps.Len() {
					dp := dps.At(l)
					key := fmt.Sprintf("%s %s metric=%s unit=%s type=%s desc=%q attrs=%s start=%d ts=%d",
						res, scope, m.Name(), m.Unit(), kind, m.Description(), canonical(dp.Attributes()), dp.StartTimestamp(), dp.Timestamp())
					var v string
					if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
						v = fmt.Sprintf("int:%d", dp.IntValue())
					} else {
						v = fmt.Sprintf("double:%v", dp.DoubleValue())
					}
					out = append(out, flatPoint{key: key, value: v})
				}
			}
		}
	}
	return out
}

// flattenExpHist lists an exponential histogram's points (the latency source's): the identity as for
// number points plus scale and zero threshold, the value every count, the sum and the buckets.
func flattenExpHist(prefix string, m pmetric.Metric) []flatPoint {
	var out []flatPoint
	eh := m.ExponentialHistogram()
	dps := eh.DataPoints()
	for l := range dps.Len() {
		dp := dps.At(l)
		key := fmt.Sprintf("%s metric=%s unit=%s type=%s/%s desc=%q attrs=%s start=%d ts=%d scale=%d zero_threshold=%v",
			prefix, m.Name(), m.Unit(), m.Type(), eh.AggregationTemporality(), m.Description(), canonical(dp.Attributes()),
			dp.StartTimestamp(), dp.Timestamp(), dp.Scale(), dp.ZeroThreshold())
		v := fmt.Sprintf("count=%d sum=%v zero=%d positive=%d:%v negative=%d:%v flags=%d min=%t:%v max=%t:%v",
			dp.Count(), dp.Sum(), dp.ZeroCount(), dp.Positive().Offset(), dp.Positive().BucketCounts().AsRaw(),
			dp.Negative().Offset(), dp.Negative().BucketCounts().AsRaw(), dp.Flags(), dp.HasMin(), dp.Min(), dp.HasMax(), dp.Max())
		out = append(out, flatPoint{key: key, value: v})
	}
	return out
}

// canonical prints attributes in key order.
func canonical(m pcommon.Map) string {
	raw := m.AsRaw()
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v, _ := json.Marshal(raw[k])
		fmt.Fprintf(&b, "%s=%s;", k, v)
	}
	return b.String()
}

func TestFlattenKeepsIdentity(t *testing.T) {
	mk := func(unit string, dev string) pmetric.Metrics {
		md := pmetric.NewMetrics()
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("host.name", "h")
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("s")
		m := sm.Metrics().AppendEmpty()
		m.SetName("system.disk.io")
		m.SetUnit(unit)
		dp := m.SetEmptySum().DataPoints().AppendEmpty()
		dp.Attributes().PutStr("system.device", dev)
		dp.SetIntValue(7)
		return md
	}
	a, b := flatten(mk("By", "sda")), flatten(mk("By", "sda"))
	require.Len(t, a, 1)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a[0].key, flatten(mk("KiBy", "sda"))[0].key, "unit is part of the identity")
	assert.NotEqual(t, a[0].key, flatten(mk("By", "sdb"))[0].key, "attributes are part of the identity")
	assert.Equal(t, "int:7", a[0].value)
}

// An exponential histogram point's identity has its scale; its value every bucket.
func TestFlattenExpHist(t *testing.T) {
	mk := func(scale int32, buckets ...uint64) []flatPoint {
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("disk_health.disk.operation.duration")
		eh := m.SetEmptyExponentialHistogram()
		eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dp := eh.DataPoints().AppendEmpty()
		dp.SetScale(scale)
		dp.Positive().SetOffset(-100)
		dp.Positive().BucketCounts().FromRaw(buckets)
		return flatten(md)
	}
	a := mk(3, 1, 2)
	require.Len(t, a, 1)
	assert.Equal(t, a, mk(3, 1, 2))
	assert.NotEqual(t, a[0].key, mk(2, 1, 2)[0].key, "scale is part of the identity")
	assert.Equal(t, a[0].key, mk(3, 2, 1)[0].key)
	assert.NotEqual(t, a[0].value, mk(3, 2, 1)[0].value, "the buckets are the value")
}

// TestOTLPChain sends the receiver's metrics over OTLP to a second otelcol-diskhealth: gRPC with
// config/datadog.yaml (what the Datadog Agent receives) and HTTP with config/elastic-otlp.yaml (what
// Elastic receives). The second instance writes what its otlp receiver got with the file exporter;
// every data point the first instances exported (a file exporter copy beside the OTLP exporter) must
// arrive identical: names, units, descriptions, types, attributes, resource and values. As root the
// latency source's exponential histograms are among them (the test writes and fsyncs a file so that
// the root disk has requests), and each must arrive with its scale, zero threshold, count, sum and
// every bucket intact; config/datadog.yaml sends them as deltas (the Agent drops cumulative ones).
func TestOTLPChain(t *testing.T) {
	bin := collectorBinary(t)
	dir := t.TempDir()
	sink := startOTLPSink(t, bin, dir)
	grpcAddr, httpAddr := sink.grpcAddr, sink.httpAddr

	// The senders: the shipped configs, plus a file exporter recording what they sent (a second
	// --config is merged in; its exporters list replaces the pipeline's).
	sender := func(cfg, exporter, sent string) *collector {
		// 3 s instead of 30 s, so that the gauges (second read) are in the window too.
		return startCollector(t, bin, shippedConfig(t, cfg), fileCopy(t, exporter, sent), telemetryOff,
			"--set=receivers.disk_health.collection_interval=3s")
	}
	t.Setenv("DD_AGENT_OTLP_ENDPOINT", grpcAddr)
	t.Setenv("ELASTIC_OTLP_ENDPOINT", "http://"+httpAddr)
	t.Setenv("ELASTIC_API_KEY", "aWQ6a2V5")
	routes := []struct {
		name      string
		sender    *collector
		sent, got *exportTail
	}{
		{"grpc", sender("datadog.yaml", "otlp_grpc", filepath.Join(dir, "sent-grpc.json")),
			&exportTail{path: filepath.Join(dir, "sent-grpc.json")}, &exportTail{path: sink.grpcPath}},
		{"http", sender("elastic-otlp.yaml", "otlp_http", filepath.Join(dir, "sent-http.json")),
			&exportTail{path: filepath.Join(dir, "sent-http.json")}, &exportTail{path: sink.httpPath}},
	}
	hostName, hostID := hostIdentity(t)
	histograms := os.Geteuid() == 0 // the latency probe loads as root
	if histograms {
		stop := make(chan struct{})
		t.Cleanup(func() { close(stop) })
		go writeAndSync(filepath.Join(dir, "io"), stop)
	}

	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			// Wait until the sender has exported the gauges (two reads), then until everything it
			// exported so far has arrived.
			seenGauge, seenHist := false, !histograms
			r.sender.waitExport(t, r.sent, 0, 30*time.Second, "disk_health.disk.utilization and the latency histograms", func(md pmetric.Metrics) bool {
				seenGauge = seenGauge || hasMetric(md, "disk_health.disk.utilization")
				seenHist = seenHist || hasMetric(md, "disk_health.disk.operation.duration")
				return seenGauge && seenHist
			})
			sent := map[string]string{}
			for _, md := range r.sent.exports {
				for _, p := range flatten(md) {
					sent[p.key] = p.value
				}
			}
			require.NotEmpty(t, sent, "the sender exported no data point")
			var missing []string
			deadline := time.Now().Add(20 * time.Second)
			for {
				require.NoError(t, r.got.poll())
				got := map[string]string{}
				for _, md := range r.got.exports {
					for _, p := range flatten(md) {
						got[p.key] = p.value
					}
				}
				missing = missing[:0]
				for k, v := range sent {
					if gv, ok := got[k]; !ok {
						missing = append(missing, k)
					} else {
						assert.Equal(t, v, gv, k)
					}
				}
				if len(missing) == 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			sort.Strings(missing)
			require.Empty(t, missing, "%d of %d data points did not arrive intact over %s", len(missing), len(sent), r.name)

			// What was compared covers both sources and carries the host identity.
			var names []string
			for _, md := range r.sent.exports {
				names = append(names, metricNames(md)...)
			}
			for _, n := range []string{"system.disk.io", "disk_health.disk.utilization", "system.filesystem.usage", "system.filesystem.limit"} {
				assert.Contains(t, names, n)
			}
			if histograms {
				assert.Contains(t, names, "disk_health.disk.operation.duration")
				n := 0
				for k := range sent {
					if strings.Contains(k, "type=ExponentialHistogram/") {
						n++
						// The Datadog Agent drops cumulative exponential histograms: datadog.yaml sends deltas.
						if r.name == "grpc" {
							assert.Contains(t, k, "type=ExponentialHistogram/Delta", "datadog.yaml sends delta histograms")
						}
					}
				}
				t.Logf("%d of them exponential histogram points", n)
			}
			resources := r.sent.exports[0].ResourceMetrics()
			require.Positive(t, resources.Len(), "the first export has no resource")
			for i := range resources.Len() {
				attrs := resources.At(i).Resource().Attributes()
				hn, ok := attrs.Get("host.name")
				if assert.True(t, ok, "resource %s without host.name", canonical(attrs)) {
					assert.Equal(t, hostName, hn.Str())
				}
				hid, ok := attrs.Get("host.id")
				switch {
				case r.name == "grpc":
					// datadog.yaml: Datadog would name the host by host.id, so the config leaves it out.
					assert.False(t, ok, "datadog.yaml's resource has host.id %s", hid.Str())
				case hostID != "":
					if assert.True(t, ok, "resource without host.id") {
						assert.Equal(t, hostID, hid.Str())
					}
				}
			}
			t.Logf("%d data points from %d exports arrived intact over %s", len(sent), len(r.sent.exports), r.name)
		})
	}
}

// writeAndSync writes and fsyncs a small file every 200 ms until stop: requests on the disk under dir.
func writeAndSync(path string, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		f, err := os.Create(path)
		if err != nil {
			return
		}
		_, _ = f.WriteString(time.Now().String())
		_ = f.Sync() // only the requests matter
		_ = f.Close()
	}
}

func metricNames(md pmetric.Metrics) []string {
	var out []string
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) { out = append(out, m.Name()) })
	return out
}

package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
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

// TestOTLPChain sends the receiver's metrics over OTLP to a second otelcol-diskhealth: gRPC with
// config/datadog.yaml (what the Datadog Agent receives) and HTTP with config/elastic-otlp.yaml (what
// Elastic receives). The second instance writes what its otlp receiver got with the file exporter;
// every data point the first instances exported (a file exporter copy beside the OTLP exporter) must
// arrive identical: names, units, descriptions, types, attributes, resource and values.
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
		{"grpc", sender("datadog.yaml", "otlp", filepath.Join(dir, "sent-grpc.json")),
			&exportTail{path: filepath.Join(dir, "sent-grpc.json")}, &exportTail{path: sink.grpcPath}},
		{"http", sender("elastic-otlp.yaml", "otlp_http", filepath.Join(dir, "sent-http.json")),
			&exportTail{path: filepath.Join(dir, "sent-http.json")}, &exportTail{path: sink.httpPath}},
	}
	hostName, hostID := hostIdentity(t)

	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			// Wait until the sender has exported the gauges (two reads), then until everything it
			// exported so far has arrived.
			r.sender.waitExport(t, r.sent, 0, 30*time.Second, "system.disk.utilization", func(md pmetric.Metrics) bool {
				return hasMetric(md, "system.disk.utilization")
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
			for _, n := range []string{"system.disk.io", "system.disk.utilization", "system.filesystem.usage", "system.filesystem.limit"} {
				assert.Contains(t, names, n)
			}
			resources := r.sent.exports[0].ResourceMetrics()
			require.Positive(t, resources.Len(), "the first export has no resource")
			for i := range resources.Len() {
				attrs := resources.At(i).Resource().Attributes()
				hn, ok := attrs.Get("host.name")
				if assert.True(t, ok, "resource %s without host.name", canonical(attrs)) {
					assert.Equal(t, hostName, hn.Str())
				}
				if hostID != "" {
					hid, ok := attrs.Get("host.id")
					if assert.True(t, ok, "resource without host.id") {
						assert.Equal(t, hostID, hid.Str())
					}
				}
			}
			t.Logf("%d data points from %d exports arrived intact over %s", len(sent), len(r.sent.exports), r.name)
		})
	}
}

func metricNames(md pmetric.Metrics) []string {
	var out []string
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				out = append(out, ms.At(k).Name())
			}
		}
	}
	return out
}

package emit

import (
	"reflect"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// The direct emitters of the iostat and filesystem scrapers write pdata themselves instead of through
// the mdatagen MetricsBuilder: the builder creates every data point standalone and moves it into the
// metric, grows each attribute map one key at a time and compares every new point with the metric's
// existing ones (for its aggregation). What it writes — names, descriptions, units, types, the
// resource's schema URL and scope — is read from one run of the generated builder (Shapes), so
// metadata.yaml stays the only place those are written.

// Shape is what the generated builder writes for a metric apart from its data points.
type Shape struct {
	Name, Description, Unit string
	Gauge                   bool // else a sum
	Monotonic               bool
	Temporality             pmetric.AggregationTemporality
}

// Header is what the generated builder writes around a resource's metrics.
type Header struct {
	SchemaURL, ScopeName, ScopeVersion string
}

// Shapes reads the header and the shape of every metric of md, a scrape emitted by a generated builder.
func Shapes(md pmetric.Metrics) (Header, map[string]*Shape) {
	var h Header
	out := map[string]*Shape{}
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		h.SchemaURL = rm.SchemaUrl()
		sms := rm.ScopeMetrics()
		for j := range sms.Len() {
			sm := sms.At(j)
			h.ScopeName, h.ScopeVersion = sm.Scope().Name(), sm.Scope().Version()
			ms := sm.Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				s := &Shape{Name: m.Name(), Description: m.Description(), Unit: m.Unit(), Gauge: m.Type() == pmetric.MetricTypeGauge}
				if m.Type() == pmetric.MetricTypeSum {
					s.Monotonic, s.Temporality = m.Sum().IsMonotonic(), m.Sum().AggregationTemporality()
				}
				out[s.Name] = s
			}
		}
	}
	return h, out
}

// Resource appends a resource with a copy of res and the header's scope and returns its metric slice,
// with room for n metrics.
func (h *Header) Resource(rms pmetric.ResourceMetricsSlice, res pcommon.Resource, n int) pmetric.MetricSlice {
	rm := rms.AppendEmpty()
	rm.SetSchemaUrl(h.SchemaURL)
	res.CopyTo(rm.Resource())
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(h.ScopeName)
	sm.Scope().SetVersion(h.ScopeVersion)
	ms := sm.Metrics()
	ms.EnsureCapacity(n)
	return ms
}

// Begin appends a metric of shape s to ms and returns its data points, with room for n. s must not be
// nil (a disabled metric has no shape).
func (s *Shape) Begin(ms pmetric.MetricSlice, n int) pmetric.NumberDataPointSlice {
	m := ms.AppendEmpty()
	m.SetName(s.Name)
	m.SetDescription(s.Description)
	m.SetUnit(s.Unit)
	var dps pmetric.NumberDataPointSlice
	if s.Gauge {
		dps = m.SetEmptyGauge().DataPoints()
	} else {
		sum := m.SetEmptySum()
		sum.SetIsMonotonic(s.Monotonic)
		sum.SetAggregationTemporality(s.Temporality)
		dps = sum.DataPoints()
	}
	dps.EnsureCapacity(n)
	return dps
}

// Point appends a data point with the attributes kv (key, value, key, value …, in the order the
// generated builder puts them) and returns it for its value.
func Point(dps pmetric.NumberDataPointSlice, start, ts pcommon.Timestamp, kv ...string) pmetric.NumberDataPoint {
	dp := dps.AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	attrs := dp.Attributes()
	if len(kv) > 2 {
		attrs.EnsureCapacity(len(kv) / 2)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		attrs.PutStr(kv[i], kv[i+1])
	}
	return dp
}

// FullAttributes reports whether every enabled metric of metrics (a generated MetricsConfig) keeps every
// attribute it has by default (defaults: the generated DefaultMetricsConfig(), where mdatagen enables
// them all). Only then does every data point of a resource have its own attribute set, so the builder
// never aggregates and a direct emitter writes what it would.
func FullAttributes(metrics, defaults any) bool {
	mv, dv := reflect.ValueOf(metrics), reflect.ValueOf(defaults)
	for i := range mv.NumField() {
		c := mv.Field(i)
		if !c.FieldByName("Enabled").Bool() {
			continue
		}
		want := dv.Field(i).FieldByName("EnabledAttributes")
		have := c.FieldByName("EnabledAttributes")
		for j := range want.Len() {
			found := false
			for k := range have.Len() {
				if have.Index(k).String() == want.Index(j).String() {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
	}
	return true
}

// ResourceFilters reports whether any resource attribute of attrs (a generated
// ResourceAttributesConfig) has a metrics_include or metrics_exclude filter, which only the generated
// builder applies.
func ResourceFilters(attrs any) bool {
	v := reflect.ValueOf(attrs)
	for i := range v.NumField() {
		a := v.Field(i)
		if a.FieldByName("MetricsInclude").Len() > 0 || a.FieldByName("MetricsExclude").Len() > 0 {
			return true
		}
	}
	return false
}

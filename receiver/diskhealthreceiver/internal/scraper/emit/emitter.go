package emit

import (
	"go.opentelemetry.io/collector/filter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Emitter is what a source's generated Emitter (internal/metadata/generated_emitter.go, written by
// internal/tools/emitgen from metadata.yaml) runs on: it writes each data point straight into the
// scrape's pdata, where mdatagen's MetricsBuilder creates every point standalone, compares it with
// every earlier point of its metric, grows attribute maps key by key, and moves each metric and
// resource once more at the end. The output is the builder's byte for byte (each generated package's
// TestEmitterMatchesBuilder): resources in the order they were begun, metrics in metadata.yaml's
// (name) order whatever order they were appended in, points in the order they were appended, a
// resource without points left out, resource attribute filters and attribute re-aggregation applied.
//
// One difference in contract: with every attribute of a metric kept, the points a resource gets for
// that metric must have distinct attribute sets (the builder would merge two equal ones; no scraper
// here records such a pair). With an attribute switched off, points are merged as the builder does.
type Emitter struct {
	schemaURL, scopeName, scopeVersion string
	metrics                            []Metric
	include, exclude                   []resourceFilter
	start                              pcommon.Timestamp

	md pmetric.Metrics
	// The resource begun last: copied into the output at its first point, so a resource without
	// points (or one a filter drops: skip) never appears.
	res     pcommon.Resource
	skip    bool
	written bool
	ms      pmetric.MetricSlice
	opened  []int // metrics with points in the current resource, in the order they got them
	// Capacities seen so far: the next scrape's slices are sized to them.
	metricsCap, resourcesCap int
}

// Metric is one metric of a generated Emitter: its shape, as metadata.yaml declares it, and its
// configuration. Generated code fills it; the rest is the Emitter's.
type Metric struct {
	Name, Description, Unit string
	Gauge, Monotonic        bool
	Temporality             pmetric.AggregationTemporality
	Enabled                 bool
	// Strategy is the metric's aggregation_strategy (used when an attribute is switched off).
	Strategy string
	// Keep has bit i set when the metric's i-th attribute (metadata.yaml order) is kept; Attrs is how
	// many it has.
	Keep  uint64
	Attrs int

	full   bool
	kept   int
	open   bool
	index  int
	dps    pmetric.NumberDataPointSlice
	counts []int64 // per point of the current resource: points aggregated into it (avg)
	// capacity is the most points the metric had in one resource.
	capacity int
}

// ResourceFilter is a resource attribute's metrics_include / metrics_exclude configuration.
type ResourceFilter struct {
	Attr             string
	Include, Exclude []filter.Config
}

type resourceFilter struct {
	attr string
	f    filter.Filter
}

// Keep turns the generated "is attribute i enabled" list into Metric.Keep.
func Keep(kept ...bool) uint64 {
	var k uint64
	for i, on := range kept {
		if on {
			k |= 1 << i
		}
	}
	return k
}

// Init prepares e for metrics (in metadata.yaml's order) under the given schema URL and scope; start
// is the start time of every point until SetStartTime.
func (e *Emitter) Init(schemaURL, scopeName, scopeVersion string, start pcommon.Timestamp, metrics []Metric, filters []ResourceFilter) {
	e.schemaURL, e.scopeName, e.scopeVersion, e.start = schemaURL, scopeName, scopeVersion, start
	e.metrics = metrics
	for i := range e.metrics {
		m := &e.metrics[i]
		m.index = i
		m.full = m.Keep == 1<<m.Attrs-1
		for b := m.Keep; b != 0; b &= b - 1 {
			m.kept++
		}
	}
	// As the builder: a filter exists when its list is set, even empty.
	for _, f := range filters {
		if f.Include != nil {
			e.include = append(e.include, resourceFilter{f.Attr, filter.CreateFilter(f.Include)})
		}
		if f.Exclude != nil {
			e.exclude = append(e.exclude, resourceFilter{f.Attr, filter.CreateFilter(f.Exclude)})
		}
	}
	e.md = pmetric.NewMetrics()
	e.res = pcommon.NewResource()
}

// SetStartTime sets the start time of the points appended from now on (the builder's
// Reset(WithStartTime(start))).
func (e *Emitter) SetStartTime(start pcommon.Timestamp) { e.start = start }

// Resource begins a resource: the points appended from now on belong to res, which is copied into the
// output at the first of them (never changed, so a scraper can keep one per device). The builder's
// EmitForResource, called before the points instead of after them.
func (e *Emitter) Resource(res pcommon.Resource) {
	e.closeResource()
	e.res = res
	e.skip = false
	attrs := res.Attributes()
	for _, f := range e.include {
		if v, ok := attrs.Get(f.attr); ok && !f.f.Matches(v.AsString()) {
			e.skip = true
		}
	}
	for _, f := range e.exclude {
		if v, ok := attrs.Get(f.attr); ok && f.f.Matches(v.AsString()) {
			e.skip = true
		}
	}
}

// Emit returns the scrape's metrics and starts the next scrape's.
func (e *Emitter) Emit() pmetric.Metrics {
	e.closeResource()
	md := e.md
	if n := md.ResourceMetrics().Len(); n > e.resourcesCap {
		e.resourcesCap = n
	}
	e.md = pmetric.NewMetrics()
	e.res = pcommon.NewResource()
	e.skip = false
	return md
}

// Metric returns metric i for a point, or nil when it is disabled or the resource is filtered out.
func (e *Emitter) Metric(i int) *Metric {
	m := &e.metrics[i]
	if !m.Enabled || e.skip {
		return nil
	}
	return m
}

// Point starts a data point of m at ts, with room for its kept attributes; the generated code puts
// them and passes it to SetInt or SetDouble.
func (e *Emitter) Point(m *Metric, ts pcommon.Timestamp) pmetric.NumberDataPoint {
	if !m.open {
		e.openMetric(m)
	}
	var dp pmetric.NumberDataPoint
	if m.full {
		dp = m.dps.AppendEmpty()
	} else {
		// It may be merged into an earlier point: built apart first, as the builder does.
		dp = pmetric.NewNumberDataPoint()
	}
	dp.SetStartTimestamp(e.start)
	dp.SetTimestamp(ts)
	if m.kept > 0 {
		dp.Attributes().EnsureCapacity(m.kept)
	}
	return dp
}

// SetInt gives dp, from Point(m, …), its value.
func (e *Emitter) SetInt(m *Metric, dp pmetric.NumberDataPoint, v int64) {
	if m.full {
		dp.SetIntValue(v)
		return
	}
	aggregate(m, dp, v, pmetric.NumberDataPoint.IntValue, pmetric.NumberDataPoint.SetIntValue)
}

// SetDouble gives dp, from Point(m, …), its value.
func (e *Emitter) SetDouble(m *Metric, dp pmetric.NumberDataPoint, v float64) {
	if m.full {
		dp.SetDoubleValue(v)
		return
	}
	aggregate(m, dp, v, pmetric.NumberDataPoint.DoubleValue, pmetric.NumberDataPoint.SetDoubleValue)
}

// aggregate merges dp (standalone: an attribute of m is switched off) into the earlier point of m
// with its attributes and times, by m's strategy, as the builder does, or appends it.
func aggregate[T int64 | float64](m *Metric, dp pmetric.NumberDataPoint, v T, get func(pmetric.NumberDataPoint) T, set func(pmetric.NumberDataPoint, T)) {
	dps := m.dps
	for i := range dps.Len() {
		dpi := dps.At(i)
		if !same(dp, dpi) {
			continue
		}
		switch m.Strategy {
		case "sum", "avg":
			set(dpi, get(dpi)+v)
			m.counts[i]++
			return
		case "min":
			if get(dpi) > v {
				set(dpi, v)
			}
			return
		case "max":
			if get(dpi) < v {
				set(dpi, v)
			}
			return
		}
	}
	set(dp, v)
	m.counts = append(m.counts, 1)
	dp.MoveTo(dps.AppendEmpty())
}

// same is the builder's test for "aggregate into this point".
func same(a, b pmetric.NumberDataPoint) bool {
	return a.StartTimestamp() == b.StartTimestamp() && a.Timestamp() == b.Timestamp() && a.Attributes().Equal(b.Attributes())
}

// openMetric appends m to the current resource (written out at its first metric).
func (e *Emitter) openMetric(m *Metric) {
	if !e.written {
		rms := e.md.ResourceMetrics()
		if rms.Len() == 0 {
			rms.EnsureCapacity(e.resourcesCap)
		}
		rm := rms.AppendEmpty()
		rm.SetSchemaUrl(e.schemaURL)
		e.res.CopyTo(rm.Resource())
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(e.scopeName)
		sm.Scope().SetVersion(e.scopeVersion)
		e.ms = sm.Metrics()
		e.ms.EnsureCapacity(e.metricsCap)
		e.written = true
	}
	pm := e.ms.AppendEmpty()
	pm.SetName(m.Name)
	pm.SetDescription(m.Description)
	pm.SetUnit(m.Unit)
	if m.Gauge {
		m.dps = pm.SetEmptyGauge().DataPoints()
	} else {
		s := pm.SetEmptySum()
		s.SetIsMonotonic(m.Monotonic)
		s.SetAggregationTemporality(m.Temporality)
		m.dps = s.DataPoints()
	}
	m.dps.EnsureCapacity(m.capacity)
	m.open = true
	e.opened = append(e.opened, m.index)
}

// closeResource finishes the current resource: averages divided, metrics put in metadata.yaml's order.
func (e *Emitter) closeResource() {
	if !e.written {
		return
	}
	sorted := true
	for k, i := range e.opened {
		m := &e.metrics[i]
		if m.Strategy == "avg" && !m.full {
			for j, n := range m.counts {
				dp := m.dps.At(j)
				if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
					dp.SetIntValue(dp.IntValue() / n)
				} else {
					dp.SetDoubleValue(dp.DoubleValue() / float64(n))
				}
			}
		}
		m.capacity = max(m.capacity, m.dps.Len())
		m.counts = m.counts[:0]
		m.open = false
		m.dps = pmetric.NumberDataPointSlice{}
		if k > 0 && i < e.opened[k-1] {
			sorted = false
		}
	}
	if !sorted {
		// metadata.yaml's keys, hence the metrics, are sorted by name.
		e.ms.Sort(func(a, b pmetric.Metric) bool { return a.Name() < b.Name() })
	}
	e.metricsCap = max(e.metricsCap, e.ms.Len())
	e.opened = e.opened[:0]
	e.ms = pmetric.MetricSlice{}
	e.written = false
}

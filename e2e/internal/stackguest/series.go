//go:build linux

package main

import (
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// Lookups in the receiver's exports: points of a metric by hw.id and attributes, statuses, events.

// points calls f for each number point of metric with hw.id id and the attributes want.
func points(md pmetric.Metrics, metric, id string, want map[string]string, f func(v float64, a pcommon.Map)) {
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		a := dp.Attributes()
		if v, ok := a.Get("hw.id"); m.Name() != metric || !ok || v.AsString() != id {
			return
		}
		for k, w := range want {
			if v, ok := a.Get(k); !ok || v.AsString() != w {
				return
			}
		}
		v := dp.DoubleValue()
		if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
			v = float64(dp.IntValue())
		}
		f(v, a)
	})
}

func value(md pmetric.Metrics, metric, id string, want map[string]string) (float64, bool) {
	var got float64
	ok := false
	points(md, metric, id, want, func(v float64, _ pcommon.Map) { got, ok = v, true })
	return got, ok
}

func has(md pmetric.Metrics, metric, id string, want map[string]string) bool {
	_, ok := value(md, metric, id, want)
	return ok
}

func num(md pmetric.Metrics, metric, id string, want map[string]string) string {
	v, ok := value(md, metric, id, want)
	if !ok {
		return "absent"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func fnum(md pmetric.Metrics, metric, id string, want map[string]string) string {
	v, ok := value(md, metric, id, want)
	if !ok {
		return "absent"
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

func attr(md pmetric.Metrics, metric, id string, want map[string]string, key string) string {
	var s string
	points(md, metric, id, want, func(_ float64, a pcommon.Map) {
		if v, ok := a.Get(key); ok {
			s = v.AsString()
		}
	})
	return s
}

// status is the hw.state whose hw.status point is 1.
func status(md pmetric.Metrics, id string) string {
	var s string
	points(md, "hw.status", id, nil, func(v float64, a pcommon.Map) {
		if st, ok := a.Get("hw.state"); ok && v == 1 {
			s = st.AsString()
		}
	})
	return s
}

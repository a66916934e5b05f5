package testkit

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// AssertHostmetricsAgrees holds one scrape of a source under conventions: hostmetrics (hm) to the
// same scrape under the default conventions (sc): the hostmetrics-compatible set (the metrics on a
// resource without attributes, as hostmetrics emits them) has exactly the names in names; no name of
// the set is also emitted under the source's own attributes; every other metric is emitted in both;
// and each point of the set equals the default's point of the same name whose attributes are the
// point's, renamed by keys (hostmetrics key → ours) and, for an attribute keys lacks, absent. A metric
// the default conventions name otherwise (issue 32 moved ours out of semconv's namespaces) is matched
// by its name in ours (hostmetrics name → ours). It returns how many points it compared.
func AssertHostmetricsAgrees(t *testing.T, sc, hm pmetric.Metrics, names []string, keys, ours map[string]string) int {
	t.Helper()
	compat, own := map[string]bool{}, map[string]bool{}
	pdatawalk.ForEachMetric(hm, func(res pcommon.Resource, m pmetric.Metric) {
		if res.Attributes().Len() == 0 {
			compat[m.Name()] = true
		} else {
			own[m.Name()] = true
		}
	})
	for n := range compat {
		assert.Contains(t, names, n, "%s is on the attribute-less resource but is not one of the hostmetrics set", n)
		assert.False(t, own[n], "%s is emitted under both conventions' attributes in one scrape", n)
	}
	replaced := map[string]bool{}
	for _, n := range ours {
		replaced[n] = true
	}
	scNames := map[string]bool{}
	pdatawalk.ForEachMetric(sc, func(_ pcommon.Resource, m pmetric.Metric) {
		if !slices.Contains(names, m.Name()) && !replaced[m.Name()] {
			scNames[m.Name()] = true
		}
	})
	assert.Equal(t, scNames, own, "the metrics hostmetrics does not have are emitted as under the default conventions")

	// The default's points by name.
	want := map[string][]pmetric.NumberDataPoint{}
	pdatawalk.ForEachNumberPoint(sc, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		want[m.Name()] = append(want[m.Name()], dp)
	})
	n := 0
	pdatawalk.ForEachNumberPoint(hm, func(res pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		if res.Attributes().Len() != 0 {
			return
		}
		renamed := map[string]any{}
		for k, v := range dp.Attributes().AsRaw() {
			key, ok := keys[k]
			require.True(t, ok, "%s: attribute %s has no counterpart in the default conventions", m.Name(), k)
			renamed[key] = v
		}
		name := m.Name()
		if n, ok := ours[name]; ok {
			name = n
		}
		var match []pmetric.NumberDataPoint
		for _, w := range want[name] {
			if sub(renamed, w.Attributes().AsRaw()) {
				match = append(match, w)
			}
		}
		require.Len(t, match, 1, "%s %v: the default conventions' point of the same counter", m.Name(), renamed)
		if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
			assert.Equal(t, match[0].IntValue(), dp.IntValue(), "%s %v", m.Name(), renamed)
		} else {
			assert.Equal(t, match[0].DoubleValue(), dp.DoubleValue(), "%s %v", m.Name(), renamed)
		}
		n++
	})
	return n
}

// sub says whether every entry of a is in b.
func sub(a, b map[string]any) bool {
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

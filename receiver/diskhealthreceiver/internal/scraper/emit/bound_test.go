package emit

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// mounts is a scrape of n resources with 14 points each, like the filesystem source's.
func mounts(n int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	for i := range n {
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("system.filesystem.mountpoint", "/m"+strconv.Itoa(i))
		ms := rm.ScopeMetrics().AppendEmpty().Metrics()
		g := ms.AppendEmpty().SetEmptyGauge().DataPoints()
		for range 4 {
			g.AppendEmpty().SetDoubleValue(1)
		}
		s := ms.AppendEmpty().SetEmptySum().DataPoints()
		for range 10 {
			s.AppendEmpty().SetIntValue(1)
		}
	}
	return md
}

func TestPointBound(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	b := NewPointBound(zap.New(core), "max_points_per_scrape", 100)

	md := b.Apply(mounts(7)) // 98 points: within
	assert.Equal(t, 98, md.DataPointCount())
	assert.Zero(t, logs.Len())

	for range 3 { // 20 mounts, 280 points: whole resources up to 100, one WARN for the three scrapes
		md = b.Apply(mounts(20))
		assert.Equal(t, 98, md.DataPointCount())
		assert.Equal(t, 7, md.ResourceMetrics().Len())
	}
	require.Equal(t, 1, logs.Len())
	w := logs.All()[0]
	assert.Equal(t, zapcore.WarnLevel, w.Level)
	assert.Equal(t, "max_points_per_scrape", w.ContextMap()["key"])
	assert.EqualValues(t, 280, w.ContextMap()["points"])
	assert.EqualValues(t, 13, w.ContextMap()["dropped_resources"])

	md = b.Apply(mounts(2)) // within again: said once
	assert.Equal(t, 28, md.DataPointCount())
	require.Equal(t, 2, logs.Len())
	assert.Equal(t, zapcore.InfoLevel, logs.All()[1].Level)

	off := NewPointBound(zap.New(core), "max_points_per_scrape", 0)
	assert.Equal(t, 280, off.Apply(mounts(20)).DataPointCount())
}

// BenchmarkPointBound: the bound costs a count per resource, linear in the scrape.
func BenchmarkPointBound(b *testing.B) {
	for _, n := range []int{5000, 50000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			bound := NewPointBound(zap.NewNop(), "max_points_per_scrape", 250000)
			for range b.N {
				b.StopTimer()
				md := mounts(n)
				b.StartTimer()
				bound.Apply(md)
			}
		})
	}
}

package diskhealthreceiver

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestRefusedDataIsSaid: under memory_limiter refusal 7 of 8 scrapes were dropped and the receiver said
// nothing. Now the first refusal is one WARN, a change of cause another, and the return one INFO with
// what was lost meanwhile.
func TestRefusedDataIsSaid(t *testing.T) {
	var refuse error
	next, err := consumer.NewMetrics(func(context.Context, pmetric.Metrics) error { return refuse })
	require.NoError(t, err)
	core, logs := observer.New(zapcore.InfoLevel)
	r := &refusals{next: next, logger: zap.New(core)}
	batch := func() pmetric.Metrics {
		md := pmetric.NewMetrics()
		g := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptyGauge()
		g.DataPoints().AppendEmpty()
		g.DataPoints().AppendEmpty()
		return md
	}
	send := func(n int) {
		for range n {
			assert.Equal(t, refuse, r.ConsumeMetrics(t.Context(), batch()))
		}
	}
	send(3)
	assert.Zero(t, logs.Len(), "accepted: nothing to say")

	refuse = errors.New("data refused due to high memory usage")
	send(7)
	refuse = errors.New("sending queue is full")
	send(2)
	refuse = nil
	send(5)

	entries := logs.AllUntimed()
	require.Len(t, entries, 3)
	assert.Equal(t, zapcore.WarnLevel, entries[0].Level)
	assert.Equal(t, "data refused due to high memory usage", entries[0].ContextMap()["error"])
	assert.Equal(t, int64(2), entries[0].ContextMap()["data_points"])
	assert.Equal(t, zapcore.WarnLevel, entries[1].Level)
	assert.Equal(t, int64(7), entries[1].ContextMap()["refused_scrapes_before"])
	assert.Equal(t, int64(14), entries[1].ContextMap()["refused_data_points_before"])
	assert.Equal(t, zapcore.InfoLevel, entries[2].Level)
	assert.Equal(t, int64(2), entries[2].ContextMap()["refused_scrapes"])
	assert.Equal(t, int64(4), entries[2].ContextMap()["refused_data_points"])
	assert.Equal(t, "sending queue is full", entries[2].ContextMap()["refused_because"])
}

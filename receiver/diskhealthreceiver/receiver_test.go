package diskhealthreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
)

func TestSharedReceiver(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.IOStat.Enabled = false
	cfg.SMART.Enabled = false
	set := receivertest.NewNopSettings(metadata.Type)
	mr, err := f.CreateMetrics(t.Context(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	lr, err := f.CreateLogs(t.Context(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	assert.Same(t, mr, lr, "one receiver serves both pipelines")
	require.NoError(t, mr.Start(t.Context(), nil))
	require.NoError(t, lr.Start(t.Context(), nil))
	require.NoError(t, mr.Shutdown(t.Context()))
	require.NoError(t, lr.Shutdown(t.Context()))
	again, err := f.CreateMetrics(t.Context(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	assert.NotSame(t, mr, again, "a shut-down receiver is not handed out again")
	require.NoError(t, again.Shutdown(t.Context()))
}

// TestOnePipelineRule: every source follows the same rule. Metrics-only sources run only with a metrics
// pipeline (pressure and cgroups once walked the cgroup tree for a logs pipeline alone); the SMART source,
// which sends events, also runs for a logs pipeline alone; a disabled source never runs.
func TestOnePipelineRule(t *testing.T) {
	set := receivertest.NewNopSettings(metadata.Type)
	for _, tc := range []struct {
		name          string
		metrics, logs bool
		disable       func(*Config)
		want          int
	}{
		{name: "metrics", metrics: true, want: 6},
		{name: "metrics and logs", metrics: true, logs: true, want: 6},
		{name: "logs alone", logs: true, want: 1},
		{name: "logs alone, smart off", logs: true, disable: func(c *Config) { c.SMART.Enabled = false }, want: 0},
		{name: "metrics, pressure and cgroups off", metrics: true, disable: func(c *Config) { c.Pressure.Enabled, c.Cgroups.Enabled = false, false }, want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			if tc.disable != nil {
				tc.disable(cfg)
			}
			r := &diskHealthReceiver{set: set, cfg: cfg}
			if tc.metrics {
				r.metrics = consumertest.NewNop()
			}
			if tc.logs {
				r.logs = consumertest.NewNop()
			}
			require.NoError(t, r.build())
			assert.Len(t, r.controllers, tc.want)
		})
	}
}

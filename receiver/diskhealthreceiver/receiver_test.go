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

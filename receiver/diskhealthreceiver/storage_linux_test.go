package diskhealthreceiver

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
)

// TestTwoReceiversShareAStorageExtension (issue 43): two disk_health receivers whose filesystem sections
// name the same file_storage extension both start and each keeps its own checkpoint records (clients
// named after the receiver: filesystem for disk_health, filesystem/gpu for disk_health/gpu). Both
// opened the client of the scraper's type alone, the same file, so the second start failed
// (("capacity.storage: timeout", locked out by the first).
func TestTwoReceiversShareAStorageExtension(t *testing.T) {
	root := testkit.NewRoot(t)
	root.CopyTree(filepath.Join("internal", "scraper", "capacityscraper", "testdata", "roots", "k6.18-binds"), ".", nil)
	require.NoError(t, os.MkdirAll(root.Path("/data"), 0o755)) // statfs answers there: a domain with a learner
	storageID := component.MustNewID("file_storage")
	ext := testkit.FileStorage(t, t.TempDir())
	host := testkit.StorageHost{storageID: ext}
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(t.Context())) })
	f := NewFactory()
	names := []string{"", "gpu"}
	var started []component.Component
	for _, name := range names {
		cfg := f.CreateDefaultConfig().(*Config)
		conf := Only("capacity")
		conf["capacity"] = map[string]any{"enabled": true, "storage": storageID.String()}
		conf["root_path"] = root.Dir
		require.NoError(t, confmap.NewFromStringMap(conf).Unmarshal(cfg))
		cfg.ControllerConfig.InitialDelay = 0
		set := receivertest.NewNopSettings(metadata.Type)
		set.ID = component.NewIDWithName(metadata.Type, name)
		sink := new(consumertest.MetricsSink)
		r, err := f.CreateMetrics(t.Context(), set, cfg, sink)
		require.NoError(t, err)
		require.NoError(t, r.Start(t.Context(), host), "receiver %s starts", set.ID)
		started = append(started, r)
		require.Eventually(t, func() bool { return sink.DataPointCount() > 0 }, 30*time.Second, 10*time.Millisecond, "receiver %s scraped", set.ID)
	}
	// Records are written at shutdown at the latest; each receiver's client is its own.
	for _, r := range started {
		require.NoError(t, r.Shutdown(t.Context()))
	}
	for _, name := range names {
		client, err := ext.(storage.Extension).GetClient(t.Context(), component.KindReceiver, component.NewIDWithName(component.MustNewType("capacity"), name), "checkpoint")
		require.NoError(t, err)
		record, err := client.Get(t.Context(), "domain/3c9d1f2e-5a6b-4c7d-8e9f-0a1b2c3d4e5f")
		require.NoError(t, err)
		assert.NotEmpty(t, record, "receiver %q keeps its record of /data's filesystem", name)
		require.NoError(t, client.Close(t.Context()))
	}
}

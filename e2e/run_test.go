package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMakeRunConfig runs the collector exactly as `make run` does (config/default.yaml on this host) and
// checks that this host's disks show up, in the debug exporter's output and on the Prometheus endpoint,
// within one collection interval of the scrape that can first compute gauges.
func TestMakeRunConfig(t *testing.T) {
	bin := collectorBinary(t)
	cfg, err := os.ReadFile(filepath.Join("..", "config", "default.yaml"))
	require.NoError(t, err)
	c := startCollector(t, bin, string(cfg))

	// Counters come with the first scrape (initial delay 1 s); gauges need a second read, 10 s later.
	require.Eventually(t, func() bool {
		out := c.output.String()
		return strings.Contains(out, "system.disk.io{system.device=") &&
			strings.Contains(out, "disk_health.disk.utilization{system.device=")
	}, 20*time.Second, 200*time.Millisecond, "no disk_health I/O metrics in the debug output")

	resp, err := http.Get("http://127.0.0.1:9464/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, name := range []string{"system_disk_io_bytes_total", "system_disk_operations_total", "disk_health_disk_utilization"} {
		assert.Contains(t, string(body), name, "Prometheus endpoint lacks %s", name)
	}
}

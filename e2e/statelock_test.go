package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// TestStateDirectoryLocked starts the collector twice with config/elastic-otlp.yaml on one state
// directory (docs/routes.md "Backend outages"). The second exits non-zero within a few seconds saying the
// directory is locked, with a queue database and the first collector's PID; the first keeps running
// and collecting, `validate` passes beside it, and the first reloads on SIGHUP. Before
// statelockconverter the second failed with file_storage's bare "timeout".
func TestStateDirectoryLocked(t *testing.T) {
	bin := collectorBinary(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	t.Setenv("DISKHEALTH_STATE_DIR", state)
	// Nothing listens there: the first collector's batches wait in its persistent queue.
	t.Setenv("ELASTIC_OTLP_ENDPOINT", "http://"+freeAddr(t))
	t.Setenv("ELASTIC_API_KEY", "aWQ6a2V5")
	sent := &exportTail{path: filepath.Join(dir, "sent.json")}
	first := startCollector(t, bin, shippedConfig(t, "elastic-otlp.yaml"), fileCopy(t, "otlp_http", sent.path), telemetryOff,
		"--set=receivers.disk_health.collection_interval=1s", "--feature-gates=service.partialReload")
	anyExport := func(pmetric.Metrics) bool { return true }
	first.waitExport(t, sent, 0, 30*time.Second, "a collection", anyExport)
	// The exporters have started, so file_storage has opened (and locked) their queue databases.
	dbs, err := filepath.Glob(filepath.Join(state, "exporter_otlp_http_*"))
	require.NoError(t, err)
	require.NotEmpty(t, dbs, "no queue database in the state directory")

	start := time.Now()
	second := startCollector(t, bin, shippedConfig(t, "elastic-otlp.yaml"), telemetryOff)
	select {
	case <-second.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("the second collector on %s still runs after 20 s:\n%s", state, second.output.String())
	}
	took := time.Since(start)
	out := second.output.String()
	t.Logf("the second collector exited after %v (%v):\n%s", took.Round(time.Millisecond), second.waitErr, out)
	require.Error(t, second.waitErr, "the second collector exited 0")
	var missing []string
	for _, want := range []string{"is locked", strconv.Quote(state), "exporter_otlp_http_",
		fmt.Sprintf("PID %d ", first.cmd.Process.Pid), "DISKHEALTH_STATE_DIR"} {
		if !strings.Contains(out, want) {
			missing = append(missing, want)
		}
	}
	assert.Empty(t, missing, "what the second collector's output (logged above) does not say")
	assert.Less(t, took, 10*time.Second, "the refusal took more than a few seconds")

	// validate opens no state directory: it passes beside the running collector.
	cfg := filepath.Join(dir, "elastic-otlp.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(shippedConfig(t, "elastic-otlp.yaml")), 0o644))
	validate, err := exec.Command(bin, "validate", "--config", cfg).CombinedOutput()
	require.NoError(t, err, "validate beside the running collector: %s", validate)

	// The first one is untouched: it goes on collecting.
	require.NoError(t, sent.poll())
	first.waitExport(t, sent, len(sent.exports), 15*time.Second, "a collection after the second collector gave up", anyExport)

	// A partial reload (SIGHUP; an alpha gate) resolves the configuration while the first collector's
	// own file_storage holds the databases: its own locks are not in the way, so only the receivers are
	// rebuilt. Were they taken for another collector's, the converter would wait 1 s and fail, and the
	// collector would fall back to a full restart of its service.
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool { return strings.Contains(first.output.String(), "performing partial receiver reload") },
		15*time.Second, 100*time.Millisecond, "no partial reload after SIGHUP")
	assert.NotContains(t, first.output.String(), "restart service")
	require.NoError(t, sent.poll())
	first.waitExport(t, sent, len(sent.exports), 15*time.Second, "a collection after the reload", anyExport)
}

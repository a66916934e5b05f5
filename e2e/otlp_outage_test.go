package e2e

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// TestOTLPOutagePersistentQueue: config/datadog.yaml (OTLP gRPC, persistent sending queue in
// file_storage) into a second collector, the backend, through an outage with a collector restart in the
// middle (outageRestart): every collection arrives exactly once; then every data point of both runs,
// with its value, none twice (the queue is at least once: a batch in flight at shutdown may be resent,
// which this would count and report).
func TestOTLPOutagePersistentQueue(t *testing.T) {
	bin := collectorBinary(t)
	dir := t.TempDir()
	backend := freeAddr(t)
	t.Setenv("DD_AGENT_OTLP_ENDPOINT", backend)
	// Each start of the backend writes its own files: what it received is all of them together.
	var sink *collector
	var got []*exportTail
	up := func() {
		n := len(got) + 1
		path := filepath.Join(dir, fmt.Sprintf("got-%d.json", n))
		sink = startCollector(t, bin, fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
exporters:
  file/got:
    path: %s
  file/logs:
    path: %s
service:
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [file/got]
    logs:
      receivers: [otlp]
      exporters: [file/logs]
`, backend, path, filepath.Join(dir, fmt.Sprintf("got-logs-%d.json", n))), telemetryOff)
		require.Eventually(t, func() bool { return strings.Contains(sink.output.String(), "Everything is ready") },
			15*time.Second, 100*time.Millisecond, "the backend did not start")
		got = append(got, &exportTail{path: path})
	}
	received := func() ([]pmetric.Metrics, error) {
		var all []pmetric.Metrics
		for _, tail := range got {
			if err := tail.poll(); err != nil {
				return nil, err
			}
			all = append(all, tail.exports...)
		}
		return all, nil
	}
	runs := outageRestart(t, outageRoute{
		config: "datadog.yaml", exporter: "otlp_grpc",
		up:   up,
		down: func() { sink.stop() },
		stamps: func(disk string) (map[int64]int, error) {
			all, err := received()
			return readStampsOf(all, disk), err
		},
	})

	// Every data point either run produced until now, with its value, exactly once.
	want := map[string]string{}
	for _, r := range runs {
		require.NoError(t, r.sent.poll())
		for _, md := range r.sent.exports {
			for _, p := range flatten(md) {
				want[p.key] = p.value
			}
		}
	}
	var missing []string
	var counts map[string]int
	deadline := time.Now().Add(60 * time.Second)
	for {
		all, err := received()
		require.NoError(t, err)
		counts = map[string]int{}
		values := map[string]string{}
		for _, md := range all {
			for _, p := range flatten(md) {
				counts[p.key]++
				values[p.key] = p.value
			}
		}
		missing = missing[:0]
		for k, v := range want {
			if gv, ok := values[k]; !ok {
				missing = append(missing, k)
			} else {
				assert.Equal(t, v, gv, k)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	sort.Strings(missing)
	if len(missing) > 10 {
		missing = append(missing[:10], fmt.Sprintf("... %d more", len(missing)-10))
	}
	require.Empty(t, missing, "data points lost across the outage and the restart")
	var dups []string
	for k, n := range counts {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%dx %s", n, k))
		}
	}
	sort.Strings(dups)
	assert.Empty(t, dups, "data points delivered more than once")
	t.Logf("all %d data points of both runs arrived, %d twice", len(want), len(dups))
	// At SIGTERM the exporter logs the batches it was retrying as "Dropping data ... interrupted due to
	// shutdown"; with the persistent queue they stay in file_storage and are sent after the restart (they
	// are among the points that arrived above).
	interrupted := 0
	for _, line := range strings.Split(runs[0].col.output.String(), "\n") {
		if strings.Contains(line, "Dropping data") && strings.Contains(line, "interrupted due to shutdown") {
			var n int
			if i := strings.Index(line, `"dropped_items": `); i >= 0 {
				_, _ = fmt.Sscanf(line[i+len(`"dropped_items": `):], "%d", &n)
			}
			interrupted += n
		}
	}
	t.Logf("run 1 logged %d data points as dropped at shutdown; all of them arrived after the restart", interrupted)
	assert.NotContains(t, runs[1].col.output.String(), "Dropping data", "the second run, which was not stopped, dropped data")
}

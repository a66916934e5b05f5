package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// TestOTLPOutagePersistentQueue: config/datadog.yaml (OTLP gRPC, persistent sending queue in
// file_storage) with its backend, a second collector, down. The sender collects every 2 s, is stopped
// with SIGTERM and started again on the same state directory, collects a while longer, then the backend
// comes up: every data point of every collection of both runs arrives, and none twice (the queue is at
// least once: a batch in flight at shutdown may be resent, which the test would count and report).
func TestOTLPOutagePersistentQueue(t *testing.T) {
	bin := collectorBinary(t)
	dir := t.TempDir()
	backend := freeAddr(t)
	t.Setenv("DD_AGENT_OTLP_ENDPOINT", backend)
	t.Setenv("DISKHEALTH_STATE_DIR", filepath.Join(dir, "state"))
	const interval = 2 * time.Second

	// Each run records what its pipeline produced with a file exporter beside the OTLP one.
	sender := func(run int) (*collector, *exportTail) {
		sent := filepath.Join(dir, fmt.Sprintf("sent-%d.json", run))
		extra := filepath.Join(dir, fmt.Sprintf("extra-%d.yaml", run))
		require.NoError(t, os.WriteFile(extra, []byte(fmt.Sprintf(`exporters:
  file/sent:
    path: %s
service:
  pipelines:
    metrics:
      exporters: [otlp_grpc, file/sent]
`, sent)), 0o644))
		c := startCollector(t, bin, shippedConfig(t, "datadog.yaml"), "--config="+extra, telemetryOff,
			"--set=receivers.disk_health.collection_interval="+interval.String())
		return c, &exportTail{path: sent}
	}
	// sigterm stops a sender and requires that it exits by itself, promptly, with the backend down.
	sigterm := func(c *collector) time.Duration {
		start := time.Now()
		require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-c.exited:
		case <-time.After(20 * time.Second):
			t.Fatal("the collector did not exit within 20 s of SIGTERM")
		}
		require.NoError(t, c.waitErr, "exit status after SIGTERM")
		return time.Since(start)
	}
	collectedAtLeast := func(c *collector, tail *exportTail, n int) {
		c.waitExport(t, tail, n-1, time.Duration(n+5)*interval, fmt.Sprintf("collection %d", n), func(pmetric.Metrics) bool { return true })
	}

	first, sent1 := sender(1)
	collectedAtLeast(first, sent1, 5)
	stop1 := sigterm(first)
	require.NoError(t, sent1.poll())
	queued, err := os.ReadDir(filepath.Join(dir, "state"))
	require.NoError(t, err)
	require.NotEmpty(t, queued, "file_storage left nothing in the state directory")

	second, sent2 := sender(2)
	collectedAtLeast(second, sent2, 3)

	// The backend comes up on the address the sender has been retrying.
	sink := startCollector(t, bin, fmt.Sprintf(`receivers:
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
`, backend, filepath.Join(dir, "got.json"), filepath.Join(dir, "got-logs.json")), telemetryOff)
	got := &exportTail{path: filepath.Join(dir, "got.json")}
	backendUp := time.Now()

	// Everything the two runs produced until now must arrive: the first run's from the disk queue it
	// left, the second's from its own (retried with up to 30 s backoff).
	require.NoError(t, sent2.poll())
	want := map[string]string{}
	wantByRun := [2]int{}
	for i, tail := range []*exportTail{sent1, sent2} {
		for _, md := range tail.exports {
			for _, p := range flatten(md) {
				want[p.key] = p.value
				wantByRun[i]++
			}
		}
	}
	require.NotZero(t, wantByRun[0])
	require.NotZero(t, wantByRun[1])
	var missing []string
	var counts map[string]int
	deadline := time.Now().Add(90 * time.Second)
	for {
		require.NoError(t, got.poll())
		counts = map[string]int{}
		values := map[string]string{}
		for _, md := range got.exports {
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
		select {
		case <-sink.exited:
			t.Fatalf("the backend exited: %v", sink.waitErr)
		case <-second.exited:
			t.Fatalf("the sender exited: %v", second.waitErr)
		case <-time.After(250 * time.Millisecond):
		}
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
	t.Logf("backend down for both runs: run 1 %d exports (%d points), SIGTERM exit in %v; run 2 %d exports (%d points); "+
		"all %d points arrived within %v of the backend coming up, %d delivered twice",
		len(sent1.exports), wantByRun[0], stop1.Round(time.Millisecond), len(sent2.exports), wantByRun[1],
		len(want), time.Since(backendUp).Round(100*time.Millisecond), len(dups))
	// At SIGTERM the exporter logs the batches it was retrying as "Dropping data ... interrupted due to
	// shutdown"; with the persistent queue they stay in file_storage and are sent after the restart (they
	// are among the points that arrived above).
	interrupted := 0
	for _, line := range strings.Split(first.output.String(), "\n") {
		if strings.Contains(line, "Dropping data") && strings.Contains(line, "interrupted due to shutdown") {
			var n int
			if i := strings.Index(line, `"dropped_items": `); i >= 0 {
				_, _ = fmt.Sscanf(line[i+len(`"dropped_items": `):], "%d", &n)
			}
			interrupted += n
		}
	}
	t.Logf("run 1 logged %d data points as dropped at shutdown; all of them arrived after the restart", interrupted)
	assert.NotContains(t, second.output.String(), "Dropping data", "the second run, which was not stopped, dropped data")
}

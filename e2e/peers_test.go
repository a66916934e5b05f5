package e2e

import (
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/e2e/internal/e2ekit"
)

// Helpers for the tests that run the collector against a peer: free loopback ports, a peer process
// stopped with the test, and the shipped configs. The peers themselves come from the test kit's installer
// (internal/testkit).

// telemetryOff keeps the collector's own metrics listener (localhost:8888 by default) closed, so that
// two collectors, or a collector of another test package running at the same time, never collide.
const telemetryOff = "--set=service.telemetry.metrics.level=none"

// handedOut are the ports freeAddr returned in this test binary: the kernel may offer a port again
// once its probe listener closed, and two peers given the same port fail to start (a Prometheus and
// the collector's health_check both on one port did).
var handedOut sync.Map

// freeAddr returns a loopback address with a port that was free a moment ago and that no earlier
// call returned.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		_ = l.Close()
		if _, taken := handedOut.LoadOrStore(addr, true); !taken {
			return addr
		}
	}
	t.Fatal("no loopback port that was not handed out already")
	return ""
}

// shippedConfig reads one of the example configs in config/.
func shippedConfig(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "config", name))
	require.NoError(t, err)
	return string(data)
}

// startPeer runs a peer program (Prometheus, ...) like startCollector runs the collector: stopped when
// the test ends, its output logged if the test failed.
func startPeer(t *testing.T, name string, args ...string) *collector {
	t.Helper()
	c := &collector{cmd: exec.Command(name, args...), output: &e2ekit.SyncBuffer{}, exited: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = c.output, c.output
	require.NoError(t, c.cmd.Start())
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			t.Logf("%s output (%v):\n%s", filepath.Base(name), c.waitErr, c.output.String())
		}
	})
	return c
}

// terminate stops a peer with SIGTERM and fails the test unless it exits within 30 s.
func (c *collector) terminate(t *testing.T, what string) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop within 30 s of SIGTERM", what)
	}
}

// hostIdentity is what resource_detection should put on every resource here: the OS hostname and
// /etc/machine-id (empty when the host has none).
func hostIdentity(t *testing.T) (name, id string) {
	t.Helper()
	name, err := os.Hostname()
	require.NoError(t, err)
	if b, err := os.ReadFile("/etc/machine-id"); err == nil {
		id = strings.TrimSpace(string(b))
	}
	return name, id
}

// wholeDisks lists this host's whole disks as the receiver classifies them by default (a /sys/block
// entry with a device link: not loop, ram, dm or a partition), with their major:minor.
func wholeDisks(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir("/sys/block")
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if _, err := os.Stat(filepath.Join("/sys/block", name, "device")); err != nil {
			continue
		}
		if strings.HasPrefix(name, "loop") || strings.HasPrefix(name, "ram") || strings.HasPrefix(name, "zram") {
			continue
		}
		dev, err := os.ReadFile(filepath.Join("/sys/block", name, "dev"))
		require.NoError(t, err)
		out[name] = strings.TrimSpace(string(dev))
	}
	return out
}

// otlpSink is a second otelcol-diskhealth that receives OTLP over gRPC and HTTP and writes each
// route's metrics with the file exporter (got-grpc.json, got-http.json in dir; logs to got-logs.json).
type otlpSink struct {
	*collector
	grpcAddr, httpAddr string
	grpcPath, httpPath string
}

func startOTLPSink(t *testing.T, bin, dir string) otlpSink {
	t.Helper()
	s := otlpSink{grpcAddr: freeAddr(t), httpAddr: freeAddr(t),
		grpcPath: filepath.Join(dir, "got-grpc.json"), httpPath: filepath.Join(dir, "got-http.json")}
	s.collector = startCollector(t, bin, fmt.Sprintf(`receivers:
  otlp/grpc:
    protocols:
      grpc:
        endpoint: %s
  otlp/http:
    protocols:
      http:
        endpoint: %s
exporters:
  file/grpc:
    path: %s
  file/http:
    path: %s
  file/logs:
    path: %s
service:
  pipelines:
    metrics/grpc:
      receivers: [otlp/grpc]
      exporters: [file/grpc]
    metrics/http:
      receivers: [otlp/http]
      exporters: [file/http]
    # The senders' logs pipelines (SMART health events, where a disk has any) need a taker too.
    logs:
      receivers: [otlp/grpc, otlp/http]
      exporters: [file/logs]
`, s.grpcAddr, s.httpAddr, s.grpcPath, s.httpPath, filepath.Join(dir, "got-logs.json")), telemetryOff)
	require.Eventually(t, func() bool { return strings.Contains(s.output.String(), "Everything is ready") },
		15*time.Second, 100*time.Millisecond, "the receiving collector did not start")
	return s
}

// startPrometheus runs Debian's Prometheus (the binary prom) scraping target every second as job
// diskhealth, with its data in dir, and returns its query API.
func startPrometheus(t *testing.T, prom, dir, target string, args ...string) (*collector, promAPI) {
	t.Helper()
	return startPrometheusJobs(t, prom, dir, map[string]string{"diskhealth": target}, args...)
}

// startPrometheusJobs is startPrometheus scraping several targets, each as the job it is keyed by.
func startPrometheusJobs(t *testing.T, prom, dir string, jobs map[string]string, args ...string) (*collector, promAPI) {
	t.Helper()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\nscrape_configs:\n")
	for _, job := range slices.Sorted(maps.Keys(jobs)) {
		fmt.Fprintf(&cfg, "  - job_name: %s\n    static_configs:\n      - targets: [%q]\n", job, jobs[job])
	}
	promCfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(promCfg, []byte(cfg.String()), 0o644))
	addr := freeAddr(t)
	server := startPeer(t, prom, append([]string{"--config.file=" + promCfg, "--storage.tsdb.path=" + filepath.Join(dir, "tsdb"),
		"--web.listen-address=" + addr}, args...)...)
	return server, promAPI{base: "http://" + addr}
}

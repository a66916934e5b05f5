package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/e2e/internal/e2ekit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// collectorBinary returns a private copy of the built collector (the original is rebuilt while tests
// run). The path comes from DISKHEALTH_OTELCOL, which `make test` sets, else ../_build.
func collectorBinary(t *testing.T) string {
	t.Helper()
	src, fromEnv := os.LookupEnv("DISKHEALTH_OTELCOL")
	if !fromEnv || src == "" {
		src = filepath.Join("..", "_build", "otelcol-diskhealth")
	}
	in, err := os.Open(src)
	if err != nil {
		if fromEnv {
			// make test built the binary and named it: its absence is a failure, not a skip.
			t.Fatalf("DISKHEALTH_OTELCOL=%s: %v", src, err)
		}
		t.Skipf("SKIPPED END-TO-END TEST: the built collector is missing (%v). Run `make test`: it builds "+
			"_build/otelcol-diskhealth and passes it in DISKHEALTH_OTELCOL.", err)
	}
	defer in.Close()
	dst := filepath.Join(t.TempDir(), "otelcol-diskhealth")
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, errors.Join(err, out.Close()))
	return dst
}

// collector is a running otelcol-diskhealth process.
type collector struct {
	cmd     *exec.Cmd
	output  *e2ekit.SyncBuffer
	exited  chan struct{}
	waitErr error
}

// startCollector runs the binary with the given YAML config and any extra arguments (--set=...). The
// process is always stopped when the test ends, and its output is logged if the test failed.
func startCollector(t *testing.T, bin, config string, args ...string) *collector {
	t.Helper()
	return startCollectorEnv(t, bin, nil, config, args...)
}

// startCollectorEnv is startCollector with variables (NAME=value) added to this process's environment,
// for collectors of one test that differ in them (the fleet's host names, state directories).
func startCollectorEnv(t *testing.T, bin string, env []string, config string, args ...string) *collector {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(config), 0o644))
	c := &collector{cmd: exec.Command(bin, append([]string{"--config", cfg}, args...)...), output: &e2ekit.SyncBuffer{}, exited: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = c.output, c.output
	c.cmd.Env = append(os.Environ(), env...)
	// The shipped configs keep their sending queues under DISKHEALTH_STATE_DIR (file_storage, default
	// /var/lib/otelcol-diskhealth): a test's collector gets its own, unless the test chose one.
	if _, ok := os.LookupEnv("DISKHEALTH_STATE_DIR"); !ok && !slices.ContainsFunc(env, func(v string) bool {
		return strings.HasPrefix(v, "DISKHEALTH_STATE_DIR=")
	}) {
		c.cmd.Env = append(c.cmd.Env, "DISKHEALTH_STATE_DIR="+filepath.Join(t.TempDir(), "state"))
	}
	require.NoError(t, c.cmd.Start())
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			t.Logf("collector output (%v):\n%s", c.waitErr, c.output.String())
		}
	})
	return c
}

// keepMoving calls step(1), step(2), … every 500 ms, so counters move between scrapes, until the
// returned function is called; that waits for a step under way.
func keepMoving(step func(k uint64)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for k := uint64(1); ; k++ {
			select {
			case <-quit:
				return
			case <-time.After(500 * time.Millisecond):
			}
			step(k)
		}
	}()
	return func() { close(quit); <-done }
}

// stop ends the process: SIGTERM, then SIGKILL if it has not exited within 5 s. Safe to call twice.
func (c *collector) stop() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// fileExportConfig completes a collector config holding only `receivers:` with a metrics pipeline from
// disk_health to a file exporter writing one OTLP-JSON export per line to out, flushed every 100 ms.
func fileExportConfig(receivers, out string) string {
	return receivers + fmt.Sprintf(`exporters:
  file:
    path: %q
    format: json
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [disk_health]
      exporters: [file]
`, out)
}

// exportTail follows the file exporter's output: one OTLP-JSON export per line. arrived[i] is when
// the test first read export i, for tests that time scrapes.
type exportTail struct {
	path    string
	off     int64
	partial []byte
	exports []pmetric.Metrics
	arrived []time.Time
}

// poll reads the lines written since the last call.
func (e *exportTail) poll() error {
	f, err := os.Open(e.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(e.off, io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	e.off += int64(len(data))
	data = append(e.partial, data...)
	var u pmetric.JSONUnmarshaler
	for {
		line, rest, ok := bytes.Cut(data, []byte{'\n'})
		if !ok {
			break
		}
		data = rest
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		md, err := u.UnmarshalMetrics(line)
		if err != nil {
			return fmt.Errorf("export %d in %s: %w", len(e.exports)+1, e.path, err)
		}
		e.exports = append(e.exports, md)
		e.arrived = append(e.arrived, time.Now())
	}
	e.partial = append([]byte(nil), data...)
	return nil
}

// waitExport returns the index of the first export from index `from` on that satisfies pred. It
// fails the test when the collector exits or nothing matches within the timeout.
func (c *collector) waitExport(t *testing.T, tail *exportTail, from int, timeout time.Duration, what string, pred func(pmetric.Metrics) bool) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		require.NoError(t, tail.poll())
		for ; from < len(tail.exports); from++ {
			if pred(tail.exports[from]) {
				return from
			}
		}
		select {
		case <-c.exited:
			t.Fatalf("the collector exited (%v) before an export showed %s", c.waitErr, what)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no export showed %s within %v (%d exports read from %s)", what, timeout, len(tail.exports), tail.path)
		}
	}
}

// point is one number data point of a device.
type point struct {
	metric    string
	dir       string // the disk.io.direction attribute, empty when absent
	value     float64
	start, ts pcommon.Timestamp
	gauge     bool
}

// devicePoints indexes an export's number data points by their system.device attribute.
func devicePoints(md pmetric.Metrics) map[string][]point {
	out := map[string][]point{}
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		dev, ok := dp.Attributes().Get("system.device")
		if !ok {
			return
		}
		p := point{metric: m.Name(), start: dp.StartTimestamp(), ts: dp.Timestamp(), gauge: m.Type() == pmetric.MetricTypeGauge}
		if d, ok := dp.Attributes().Get("disk.io.direction"); ok {
			p.dir = d.Str()
		}
		if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
			p.value = float64(dp.IntValue())
		} else {
			p.value = dp.DoubleValue()
		}
		out[dev.Str()] = append(out[dev.Str()], p)
	})
	return out
}

// find returns the value of a device's metric point with the given direction.
func find(points []point, metric, dir string) (point, bool) {
	for _, p := range points {
		if p.metric == metric && p.dir == dir {
			return p, true
		}
	}
	return point{}, false
}

package datadog

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/DataDog/opentelemetry-mapping-go/pkg/otlp/attributes"
	"github.com/DataDog/opentelemetry-mapping-go/pkg/otlp/metrics"
	"github.com/DataDog/opentelemetry-mapping-go/pkg/quantile"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/cumulativetodeltaprocessor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor/processortest"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
	"go.yaml.in/yaml/v3"
)

// series is one Datadog time series as the translator hands it to the Agent's serializer.
type series struct {
	name, typ, host string
	tags            []string
}

func (s series) key() string {
	return s.name + "|" + s.typ + "|" + s.host + "|" + strings.Join(s.tags, ",")
}

// consumer records what the translator produces.
type consumer struct {
	series map[string]series
	points int
}

func (c *consumer) add(d *metrics.Dimensions, typ string) {
	tags := append([]string(nil), d.Tags()...)
	sort.Strings(tags)
	s := series{name: d.Name(), typ: typ, host: d.Host(), tags: tags}
	c.series[s.key()] = s
	c.points++
}

func (c *consumer) ConsumeTimeSeries(_ context.Context, d *metrics.Dimensions, typ metrics.DataType, _ uint64, _ float64) {
	name, _ := typ.MarshalText()
	c.add(d, string(name))
}

func (c *consumer) ConsumeSketch(_ context.Context, d *metrics.Dimensions, _ uint64, _ *quantile.Sketch) {
	c.add(d, "distribution")
}

// collectorOutput runs the built collector with config/datadog.yaml, its OTLP exporter replaced by a
// file exporter, collecting every 2 s, and returns its first n exports: exactly what the Agent's OTLP
// receiver would get.
func collectorOutput(t *testing.T, n int) []pmetric.Metrics {
	t.Helper()
	bin, ok := os.LookupEnv("DISKHEALTH_OTELCOL")
	if !ok {
		bin = filepath.Join("..", "..", "_build", "otelcol-diskhealth")
		if _, err := os.Stat(bin); err != nil {
			if ci, perr := strconv.ParseBool(os.Getenv("CI")); os.Getenv("CI") != "" && (perr != nil || ci) {
				// The kit's CI rule (internal/testkit.InCI; this module stands apart): in CI a missing peer fails.
				t.Fatalf("the built collector is missing (%v); CI runs `make test`, which builds it", err)
			}
			t.Skipf("SKIPPED: the built collector is missing (%v). Run `make test`: it builds it and passes it in DISKHEALTH_OTELCOL.", err)
		}
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	extra := filepath.Join(dir, "extra.yaml")
	require.NoError(t, os.WriteFile(extra, []byte(fmt.Sprintf(`exporters:
  file/out:
    path: %s
    flush_interval: 100ms
  file/logs:
    path: %s
service:
  pipelines:
    metrics:
      exporters: [file/out]
    logs:
      exporters: [file/logs]
`, out, filepath.Join(dir, "logs.json"))), 0o644))
	cmd := exec.Command(bin, "--config", filepath.Join("..", "..", "config", "datadog.yaml"), "--config", extra,
		"--set=service.telemetry.metrics.level=none", "--set=receivers.disk_health.collection_interval=2s")
	cmd.Env = append(os.Environ(), "DISKHEALTH_STATE_DIR="+filepath.Join(dir, "state"))
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("collector output:\n%s", output.String())
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var exports []pmetric.Metrics
		if f, err := os.Open(out); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
			var u pmetric.JSONUnmarshaler
			for sc.Scan() && len(exports) < n {
				md, err := u.UnmarshalMetrics(sc.Bytes())
				if err != nil {
					break // a line still being written
				}
				exports = append(exports, md)
			}
			f.Close()
		}
		if len(exports) == n {
			return exports
		}
		select {
		case err := <-exited:
			t.Fatalf("the collector exited: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		require.False(t, time.Now().After(deadline), "fewer than %d exports within 60 s", n)
	}
}

// expectedName is what datadog.yaml's comment says Datadog calls a metric: system.* is renamed
// otel.system.* (so it never collides with the Agent's own system.* metrics), the rest keeps its name.
func expectedName(name string) string {
	if strings.HasPrefix(name, "system.") {
		return "otel." + name
	}
	return name
}

// expectedType is the Datadog type: cumulative monotonic sums become counts (deltas), gauges and
// non-monotonic sums gauges, the (delta) exponential histograms distributions.
func expectedType(m pmetric.Metric) string {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		if m.Sum().IsMonotonic() {
			return "count"
		}
		return "gauge"
	case pmetric.MetricTypeExponentialHistogram:
		return "distribution"
	default:
		return "gauge"
	}
}

// TestDatadogTranslation feeds config/datadog.yaml's output, export by export, to Datadog's OTLP
// metrics translator with the Agent's OTLP-ingest settings (host metric remapping, distributions,
// cumulative-to-delta) and checks every data point's Datadog name, type, tags and host.
func TestDatadogTranslation(t *testing.T) {
	// Each source exports on its own: a dozen exports hold every source at least twice.
	exports := collectorOutput(t, 12)
	set := component.TelemetrySettings{Logger: zap.NewNop(), MeterProvider: metricnoop.NewMeterProvider(), TracerProvider: tracenoop.NewTracerProvider()}
	attrs, err := attributes.NewTranslator(set)
	require.NoError(t, err)
	tr, err := metrics.NewTranslator(set, attrs, metrics.WithRemapping(),
		metrics.WithHistogramMode(metrics.HistogramModeDistributions), metrics.WithNumberMode(metrics.NumberModeCumulativeToDelta))
	require.NoError(t, err)
	hostname, err := os.Hostname()
	require.NoError(t, err)

	got := &consumer{series: map[string]series{}}
	want := map[string]series{}
	// based holds the counters the translator has a base for: a cumulative counter's first point only
	// sets its base (no delta yet), so a series appears in Datadog from its second point on.
	based := map[string]bool{}
	for _, md := range exports {
		// What each point should become is read first: the translator renames the metrics it is given
		// (system.* to otel.system.*) in place.
		forEachPoint(md, func(m pmetric.Metric, tags []string, empty bool) {
			key := m.Name() + "|" + strings.Join(tags, ",")
			if expectedType(m) == "count" && !based[key] {
				based[key] = true
				return
			}
			if empty {
				return // a distribution with no observation sends no sketch
			}
			// The one resource attribute Datadog's mapping makes a tag here: os.type (resource_detection).
			tags = append(tags, "os.type:linux")
			sort.Strings(tags)
			s := series{name: expectedName(m.Name()), typ: expectedType(m), host: hostname, tags: tags}
			want[s.key()] = s
			if m.Name() == "system.filesystem.utilization" {
				// also sent as the Agent's own system.disk.in_use
				s.name = "system.disk.in_use"
				want[s.key()] = s
			}
		})
		_, err := tr.MapMetrics(context.Background(), md, got, nil)
		require.NoError(t, err)
	}
	require.NotEmpty(t, want)
	var missing, unexpected []string
	for k := range want {
		if _, ok := got.series[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k, s := range got.series {
		assert.Equal(t, hostname, s.host, "%s: the Datadog host is the hostname (host.name), not the machine-id", s.name)
		if _, ok := want[k]; !ok {
			unexpected = append(unexpected, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(unexpected)
	assert.Empty(t, missing, "data points without their Datadog series (name|type|host|tags)")
	assert.Empty(t, unexpected, "Datadog series no data point explains")

	byType := map[string]int{}
	names := map[string]bool{}
	for _, s := range got.series {
		byType[s.typ]++
		names[s.name] = true
	}
	// Datadog bills custom metrics per distinct name and tag set (host included); a distribution
	// counts once here, its percentile aggregations are billed apart.
	t.Logf("this host: %d Datadog custom metrics (%d names): %v", len(got.series), len(names), byType)
}

// forEachPoint calls fn for every data point of an export with its Datadog tags (its attributes as
// key:value, sorted; an empty value is "n/a", as the translator writes it), and whether it is a histogram
// without observations. The translator leaves resource attributes out unless the Agent has
// resource_attributes_as_tags.
func forEachPoint(md pmetric.Metrics, fn func(m pmetric.Metric, tags []string, empty bool)) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				var attrs []map[string]any
				var counts []uint64
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					for l := range m.Gauge().DataPoints().Len() {
						attrs = append(attrs, m.Gauge().DataPoints().At(l).Attributes().AsRaw())
						counts = append(counts, 1)
					}
				case pmetric.MetricTypeSum:
					for l := range m.Sum().DataPoints().Len() {
						attrs = append(attrs, m.Sum().DataPoints().At(l).Attributes().AsRaw())
						counts = append(counts, 1)
					}
				case pmetric.MetricTypeExponentialHistogram:
					for l := range m.ExponentialHistogram().DataPoints().Len() {
						attrs = append(attrs, m.ExponentialHistogram().DataPoints().At(l).Attributes().AsRaw())
						counts = append(counts, m.ExponentialHistogram().DataPoints().At(l).Count())
					}
				}
				for n, a := range attrs {
					tags := make([]string, 0, len(a))
					for k, v := range a {
						if v == "" {
							v = "n/a" // the translator's word for an empty attribute value
						}
						tags = append(tags, fmt.Sprintf("%s:%v", k, v))
					}
					sort.Strings(tags)
					fn(m, tags, counts[n] == 0)
				}
			}
		}
	}
}

// TestDatadogDeviceHistogram: the SMART source's device-side latency histograms (OCP C3h latency
// monitor, Amazon D0h) are cumulative explicit-bucket histograms, which config/datadog.yaml leaves
// cumulative (its cumulative_to_delta takes exponential histograms only): Datadog's translator, with
// the Agent's OTLP-ingest settings, turns them into deltas itself. Two reads of one window in the
// scraper's shape (smartscraper's golden smart-nvme-fleet.yaml, nvme0's read histogram): the first sets
// the base, the second is one distribution of exactly the interval's slow reads, tagged with the device
// identity, so it sits beside the host's p99:disk_health.disk.operation.duration of the same disk.
func TestDatadogDeviceHistogram(t *testing.T) {
	set := component.TelemetrySettings{Logger: zap.NewNop(), MeterProvider: metricnoop.NewMeterProvider(), TracerProvider: tracenoop.NewTracerProvider()}
	attrs, err := attributes.NewTranslator(set)
	require.NoError(t, err)
	tr, err := metrics.NewTranslator(set, attrs, metrics.WithRemapping(),
		metrics.WithHistogramMode(metrics.HistogramModeDistributions), metrics.WithNumberMode(metrics.NumberModeCumulativeToDelta))
	require.NoError(t, err)

	const name = "disk_health.physical_disk.latency_monitor.operation.duration"
	start := time.Now().Add(-24 * time.Hour)
	read := func(at time.Time, counts []uint64) pmetric.Metrics {
		md := pmetric.NewMetrics()
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("host.name", "node-1")
		m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName(name)
		m.SetUnit("s")
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dp := h.DataPoints().AppendEmpty()
		require.NoError(t, dp.Attributes().FromRaw(map[string]any{"hw.id": "test_s-nvme0", "hw.name": "nvme0", "hw.type": "physical_disk",
			"system.device": "nvme0n1", "disk.io.direction": "read", "disk_health.latency.source": "device"}))
		dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		dp.SetTimestamp(pcommon.NewTimestampFromTime(at))
		dp.ExplicitBounds().FromRaw([]float64{0.030, 0.100, 0.155, 0.235})
		dp.BucketCounts().FromRaw(counts)
		var n uint64
		for _, c := range counts {
			n += c
		}
		dp.SetCount(n)
		return md
	}
	sk := &sketches{}
	now := time.Now()
	_, err = tr.MapMetrics(context.Background(), read(now, []uint64{0, 77, 20, 30, 40}), sk, nil)
	require.NoError(t, err)
	assert.Empty(t, sk.got, "the first read is the base")
	_, err = tr.MapMetrics(context.Background(), read(now.Add(30*time.Second), []uint64{0, 80, 20, 30, 45}), sk, nil)
	require.NoError(t, err)
	require.Len(t, sk.got, 1)
	got := sk.got[0]
	assert.Equal(t, name, got.name)
	assert.Equal(t, "node-1", got.host)
	assert.Equal(t, []string{"disk.io.direction:read", "disk_health.latency.source:device", "hw.id:test_s-nvme0", "hw.name:nvme0",
		"hw.type:physical_disk", "system.device:nvme0n1"}, got.tags)
	assert.Equal(t, int64(8), got.count, "3 reads in [30, 100) ms and 5 from 235 ms on")
}

// sketches records the distributions the translator produces.
type sketches struct{ got []sketch }

type sketch struct {
	name, host string
	tags       []string
	count      int64
}

func (s *sketches) ConsumeTimeSeries(context.Context, *metrics.Dimensions, metrics.DataType, uint64, float64) {
}

func (s *sketches) ConsumeSketch(_ context.Context, d *metrics.Dimensions, _ uint64, q *quantile.Sketch) {
	tags := append([]string(nil), d.Tags()...)
	sort.Strings(tags)
	s.got = append(s.got, sketch{name: d.Name(), host: d.Host(), tags: tags, count: q.Basic.Cnt})
}

// TestDatadogPerCgroupHistogram: the latency source's per-cgroup series (latency.per_cgroup, off by
// default) on the Datadog route, from the scraper's own output: latencyscraper's goldens per-cgroup
// and per-cgroup-next (two scrapes a minute apart, TestScrapePerCgroup) go through config/datadog.yaml's
// cumulative_to_delta processor (its settings read from that file) into Datadog's translator with the
// Agent's OTLP-ingest settings. The first scrape is only the base; from the second,
// disk_health.container.disk.operation.duration is one distribution per cgroup (and other), device and direction,
// of exactly the interval's requests, tagged with cgroup.path, the pod's k8s.pod.uid and container.id
// where the path names them, system.device and hw.id; disk_health.container.disk.occupancy.share is a gauge with
// the same tags (but the direction), and disk_health.container.disk.operation.io a count of the interval's bytes.
func TestDatadogPerCgroupHistogram(t *testing.T) {
	set := component.TelemetrySettings{Logger: zap.NewNop(), MeterProvider: metricnoop.NewMeterProvider(), TracerProvider: tracenoop.NewTracerProvider()}
	attrs, err := attributes.NewTranslator(set)
	require.NoError(t, err)
	tr, err := metrics.NewTranslator(set, attrs, metrics.WithRemapping(),
		metrics.WithHistogramMode(metrics.HistogramModeDistributions), metrics.WithNumberMode(metrics.NumberModeCumulativeToDelta))
	require.NoError(t, err)

	// cumulative_to_delta exactly as config/datadog.yaml configures it.
	shipped, err := os.ReadFile(filepath.Join("..", "..", "config", "datadog.yaml"))
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, yaml.Unmarshal(shipped, &raw))
	factory := cumulativetodeltaprocessor.NewFactory()
	cfg := factory.CreateDefaultConfig()
	sub, err := confmap.NewFromStringMap(raw).Sub("processors::cumulative_to_delta")
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	sink := new(consumertest.MetricsSink)
	proc, err := factory.CreateMetrics(t.Context(), processortest.NewNopSettings(factory.Type()), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, proc.Start(t.Context(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, proc.Shutdown(context.Background())) }()

	dir := filepath.Join("..", "..", "receiver", "diskhealthreceiver", "internal", "scraper", "latencyscraper", "testdata", "expected_metrics")
	rec := &recorder{}
	for i, name := range []string{"per-cgroup.yaml", "per-cgroup-next.yaml"} {
		md, err := golden.ReadMetrics(filepath.Join(dir, name))
		require.NoError(t, err)
		md.ResourceMetrics().At(0).Resource().Attributes().PutStr("host.name", "node-1")
		require.NoError(t, proc.ConsumeMetrics(t.Context(), md))
		require.Len(t, sink.AllMetrics(), i+1)
		_, err = tr.MapMetrics(context.Background(), sink.AllMetrics()[i], rec, nil)
		require.NoError(t, err)
		if i == 0 {
			assert.Empty(t, rec.sketches, "the first scrape is only the base of every distribution")
		}
	}

	const (
		podUID    = "0c6f9d7a-1b2c-4d5e-8f90-a1b2c3d4e5f6"
		container = "4f5e6d7c8b9a0f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0"
		pod       = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0c6f9d7a_1b2c_4d5e_8f90_a1b2c3d4e5f6.slice/cri-containerd-" + container + ".scope"
		disk      = "hw.id:naa.5000c500a1b2c3d4"
	)
	podTags := []string{"cgroup.path:" + pod, "container.id:" + container, disk, "k8s.pod.uid:" + podUID, "system.device:sda"}
	serviceTags := []string{"cgroup.path:/system.slice/a.service", disk, "system.device:sda"}
	otherTags := []string{"cgroup.path:other", disk, "system.device:sda"}
	withRead := func(tags []string) []string {
		out := append([]string{"disk.io.direction:read"}, tags...)
		sort.Strings(out)
		return out
	}
	// The scrapes' read counts (pod 30 then 70, a.service 20 then 32, the rest 6 then 12): the
	// interval's requests, each cgroup's own.
	dist := map[string]int64{}
	for _, s := range rec.sketches {
		assert.Equal(t, "node-1", s.host)
		if strings.HasPrefix(s.name, "disk_health.container.") {
			require.Equal(t, "disk_health.container.disk.operation.duration", s.name)
			dist[strings.Join(s.tags, ",")] = s.count
		}
	}
	assert.Equal(t, map[string]int64{
		strings.Join(withRead(podTags), ","):     40,
		strings.Join(withRead(serviceTags), ","): 12,
		strings.Join(withRead(otherTags), ","):   6,
	}, dist, "one distribution per cgroup, device and direction, of the interval's requests")

	share, io := map[string]float64{}, map[string]float64{}
	for _, p := range rec.points {
		switch p.name {
		case "disk_health.container.disk.occupancy.share":
			assert.Equal(t, "gauge", p.typ)
			share[strings.Join(p.tags, ",")] = p.value
		case "disk_health.container.disk.operation.io":
			assert.Equal(t, "count", p.typ)
			io[strings.Join(p.tags, ",")] = p.value
		}
	}
	tags := func(t []string) string { return strings.Join(t, ",") }
	assert.InDeltaMapValues(t, map[string]float64{tags(podTags): 40.0 / 58, tags(serviceTags): 12.0 / 58, tags(otherTags): 6.0 / 58}, share, 1e-9,
		"each shown cgroup's share of the device's time in flight, a gauge per scrape (the first included)")
	assert.Len(t, rec.gaugesAt, 2, "the share gauge is sent from the first scrape on")
	assert.Equal(t, map[string]float64{tags(withRead(podTags)): 40 * 4096, tags(withRead(serviceTags)): 12 * 4096, tags(withRead(otherTags)): 6 * 4096}, io,
		"the bytes, a delta count from the second scrape")
}

// recorder records the translator's distributions and time series with their values.
type recorder struct {
	sketches []sketch
	points   []point
	// gaugesAt are the timestamps at which disk_health.container.disk.occupancy.share was sent.
	gaugesAt map[uint64]bool
}

type point struct {
	name, typ string
	tags      []string
	value     float64
}

func (r *recorder) ConsumeTimeSeries(_ context.Context, d *metrics.Dimensions, typ metrics.DataType, ts uint64, v float64) {
	name, _ := typ.MarshalText()
	tags := append([]string(nil), d.Tags()...)
	sort.Strings(tags)
	r.points = append(r.points, point{name: d.Name(), typ: string(name), tags: tags, value: v})
	if d.Name() == "disk_health.container.disk.occupancy.share" {
		if r.gaugesAt == nil {
			r.gaugesAt = map[uint64]bool{}
		}
		r.gaugesAt[ts] = true
	}
}

func (r *recorder) ConsumeSketch(_ context.Context, d *metrics.Dimensions, _ uint64, q *quantile.Sketch) {
	tags := append([]string(nil), d.Tags()...)
	sort.Strings(tags)
	r.sketches = append(r.sketches, sketch{name: d.Name(), host: d.Host(), tags: tags, count: q.Basic.Cnt})
}

package diskhealthreceiver

import (
	"context"
	"go.opentelemetry.io/collector/confmap"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
)

// countedDiskstats counts the reads of /proc/diskstats' content: the shared reader reads the whole
// file from offset 0 once per read.
type countedDiskstats struct {
	*os.File
	reads *atomic.Int64
}

func (f countedDiskstats) ReadAt(p []byte, off int64) (int, error) {
	if off == 0 {
		f.reads.Add(1)
	}
	return f.File.ReadAt(p, off)
}

// batches counts the non-empty batches each source delivered, told apart by their metrics.
type batches struct {
	mu sync.Mutex
	n  map[string]int
	// at is when each batch of a source that reads /proc/diskstats (iostat, latency, cgroups) arrived.
	at []time.Time
	// devices are the system.device values cgroups and latency put on their points.
	devices map[string]map[string]bool
}

func sourceOf(name string) string {
	switch {
	case strings.HasPrefix(name, "container.") || strings.HasPrefix(name, "disk_health.container."):
		return "cgroups"
	case name == "disk_health.latency.dropped", name == "disk_health.disk.kernel.errors", strings.HasSuffix(name, ".duration"):
		return "latency"
	case strings.HasPrefix(name, "hw.") || strings.HasPrefix(name, "disk_health.logical_disk.") || strings.HasPrefix(name, "disk_health.stack.") ||
		strings.HasPrefix(name, "system.filesystem.") || strings.HasPrefix(name, "disk_health.filesystem."):
		return "stack"
	case strings.HasPrefix(name, "system.disk.") || strings.HasPrefix(name, "disk_health.disk."):
		return "iostat"
	}
	return "other: " + name
}

func (b *batches) consume(_ context.Context, md pmetric.Metrics) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[string]bool{}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				src := sourceOf(ms.At(k).Name())
				seen[src] = true
				if src != "cgroups" && src != "latency" {
					continue
				}
				forEachPointAttrs(ms.At(k), func(dev string) {
					if b.devices[src] == nil {
						b.devices[src] = map[string]bool{}
					}
					b.devices[src][dev] = true
				})
			}
		}
	}
	for src := range seen {
		b.n[src]++
		if src == "iostat" || src == "latency" || src == "cgroups" {
			b.at = append(b.at, time.Now())
		}
	}
	return nil
}

// ticks groups the batches of the sources that read /proc/diskstats into ticks: a batch within half an
// interval of the first of a tick belongs to it (the reuse rule of package tick).
func (b *batches) ticks(interval time.Duration) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	at := slices.Clone(b.at)
	slices.SortFunc(at, func(x, y time.Time) int { return x.Compare(y) })
	n := 0
	var first time.Time
	for _, t := range at {
		if n == 0 || t.Sub(first) > interval/2 {
			n, first = n+1, t
		}
	}
	return n
}

// forEachPointAttrs calls f with the system.device of every point of m that has one.
func forEachPointAttrs(m pmetric.Metric, f func(string)) {
	visit := func(v string, ok bool) {
		if ok {
			f(v)
		}
	}
	switch m.Type() {
	case pmetric.MetricTypeSum:
		for i := 0; i < m.Sum().DataPoints().Len(); i++ {
			v, ok := m.Sum().DataPoints().At(i).Attributes().Get("system.device")
			visit(v.Str(), ok)
		}
	case pmetric.MetricTypeGauge:
		for i := 0; i < m.Gauge().DataPoints().Len(); i++ {
			v, ok := m.Gauge().DataPoints().At(i).Attributes().Get("system.device")
			visit(v.Str(), ok)
		}
	case pmetric.MetricTypeExponentialHistogram:
		for i := 0; i < m.ExponentialHistogram().DataPoints().Len(); i++ {
			v, ok := m.ExponentialHistogram().DataPoints().At(i).Attributes().Get("system.device")
			visit(v.Str(), ok)
		}
	}
}

func (b *batches) count(src string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n[src]
}

// TestOneDiskstatsReadPerTick runs one receiver with iostat, latency, cgroups and stack enabled on this
// host and counts the reads of /proc/diskstats: one per tick, where each of iostat, latency and cgroups
// read it once (three per tick) before the shared snapshot. Latency takes part where its BPF probe loads
// (root with BTF, as in CI); elsewhere it reads nothing at all, and the count still holds. cgroups reads
// the device names only in a tick where some cgroup did I/O; the test says what it saw of both.
func TestOneDiskstatsReadPerTick(t *testing.T) {
	const interval = 3 * time.Second
	cfg := createDefaultConfig().(*Config)
	cfg.RootPath = "/"
	// Every source that reads the snapshot, and stack, which the issue names beside them.
	var on []string
	for _, reg := range registry {
		if slices.Contains(reg.needs, diskstatsSnapshot) || reg.name == "stack" {
			on = append(on, reg.name)
		}
	}
	require.NoError(t, confmap.NewFromStringMap(Only(on...)).Unmarshal(cfg))
	cfg.ControllerConfig.CollectionInterval = interval
	cfg.ControllerConfig.InitialDelay = 0

	core, logs := observer.New(zapcore.InfoLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	b := &batches{n: map[string]int{}, devices: map[string]map[string]bool{}}
	next, err := consumer.NewMetrics(b.consume)
	require.NoError(t, err)
	var reads, opens atomic.Int64
	r := &diskHealthReceiver{set: set, cfg: cfg, metrics: next}
	r.openDiskstats = func(name string) (diskstats.File, error) {
		opens.Add(1)
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		return countedDiskstats{f, &reads}, nil
	}
	require.NoError(t, r.Start(t.Context(), componenttest.NewNopHost()))
	const ticks = 3
	attached := func() bool { return logs.FilterMessage("Block latency probe attached.").Len() > 0 }
	require.Eventually(t, func() bool {
		return b.count("iostat") >= ticks && (!attached() || b.count("latency") >= ticks)
	}, ticks*interval+10*time.Second, 10*time.Millisecond)
	require.NoError(t, r.Shutdown(t.Context()))
	// Sources started apart (latency loads its probe first) tick at their own phase; each tick is the
	// batches within half an interval of each other, so a tick cut by the shutdown still counts once.
	gotReads, gotTicks := reads.Load(), b.ticks(interval)
	t.Logf("%d reads of /proc/diskstats in %d ticks (iostat %d, latency %d, cgroups %d, stack %d scrapes)",
		gotReads, gotTicks, b.count("iostat"), b.count("latency"), b.count("cgroups"), b.count("stack"))

	assert.EqualValues(t, gotTicks, gotReads, "one read of /proc/diskstats per tick")
	assert.EqualValues(t, 1, opens.Load(), "the file stays open between ticks")
	assert.Positive(t, b.count("stack"), "stack ran")

	if attached() {
		assert.GreaterOrEqual(t, b.count("latency"), ticks, "the probe is attached: latency scraped every tick")
		t.Logf("latency took part: %d scrapes, devices %v", b.count("latency"), b.devices["latency"])
	} else {
		t.Log("latency's probe did not load here (not root, or no BTF): it read nothing")
	}
	// cgroups names devices from the shared snapshot: kernel names, never a bare major:minor, for the
	// devices /proc/diskstats lists.
	for _, e := range logs.FilterMessageSnippet("cgroup").All() {
		t.Log(e.Message, e.ContextMap())
	}
	t.Logf("cgroups delivered %d batches, devices %v", b.count("cgroups"), b.devices["cgroups"])
}

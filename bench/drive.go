package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/hostmetricsreceiver"
)

// Source is what a run scrapes.
type Source string

// The sources: Disk is hostmetrics' disk scraper against disk_health's iostat source, Filesystem the two
// filesystem scrapers.
const (
	Disk       Source = "disk"
	Filesystem Source = "filesystem"
)

// Receiver names a receiver under test.
type Receiver string

// The receivers under test, each in one configuration.
const (
	HostMetrics Receiver = "hostmetrics"
	DiskHealth  Receiver = "disk_health"
	// DiskHealthParity is disk_health emitting only the metrics hostmetrics emits for the source: the
	// same data, so the difference to HostMetrics is the cost of reading and building it.
	DiskHealthParity Receiver = "disk_health_parity"
	// HostMetricsEngine and DiskHealthEngine emit no metric at all: what is left is reading, parsing,
	// statfs and the receivers' own bookkeeping, so (full − engine) is the cost of building the pdata.
	HostMetricsEngine Receiver = "hostmetrics_engine"
	DiskHealthEngine  Receiver = "disk_health_engine"
)

// Receivers lists every receiver configuration a benchmark compares.
var Receivers = []Receiver{HostMetrics, DiskHealth, DiskHealthParity, HostMetricsEngine, DiskHealthEngine}

// DefaultSources are the disk_health sources whose output is the receiver's default for what a Source
// compares, so the DiskHealth rows run them all: on mounts the filesystem source and the capacity
// source, which reads the same mount snapshot (fsusage.Shared). The parity and engine rows run the first
// alone, as hostmetrics has nothing of capacity's.
var DefaultSources = map[Source][]string{Disk: {"iostat"}, Filesystem: diskhealthreceiver.MountSources()}

// Sources are the disk_health sources a receiver configuration runs for src (none for hostmetrics).
func Sources(r Receiver, src Source) []string {
	switch r {
	case DiskHealth:
		return DefaultSources[src]
	case DiskHealthParity, DiskHealthEngine:
		return DefaultSources[src][:1]
	}
	return nil
}

// hostMetricsSet is what hostmetrics' scrapers emit by default.
var hostMetricsSet = map[Source][]string{
	Disk: {"system.disk.io", "system.disk.operations", "system.disk.io_time", "system.disk.operation_time",
		"system.disk.weighted_io_time", "system.disk.pending_operations", "system.disk.merged"},
	Filesystem: {"system.filesystem.usage", "system.filesystem.inodes.usage"},
}

// diskHealthNames are disk_health's names of the hostmetrics metrics it names otherwise: semconv does not
// define them, so disk_health's are in disk_health.* (its conventions: hostmetrics emits hostmetrics' names).
var diskHealthNames = map[string]string{
	"system.disk.weighted_io_time":   "disk_health.disk.weighted_io_time",
	"system.disk.pending_operations": "disk_health.disk.pending_operations",
	"system.filesystem.inodes.usage": "disk_health.filesystem.inodes.usage",
}

// hostMetricsOff is every metric of hostmetrics' scrapers, the ones off by default included.
var hostMetricsOff = map[Source][]string{
	Disk:       hostMetricsSet[Disk],
	Filesystem: append(slices.Clone(hostMetricsSet[Filesystem]), "system.filesystem.utilization"),
}

// Interval is the collection interval of a run: short enough that scrapes run back to back (the
// controller's ticker drops the ticks a running scrape misses), so a run's wall time is its scrapes.
const Interval = 10 * time.Microsecond

// validInterval is the interval the configuration is validated with.
const validInterval = time.Second

// sharedInterval is the interval, per mount, of a run whose sources share the mount snapshot (DiskHealth
// on Filesystem). A source is given the snapshot another read only when it asks within half its interval
// of that read (fsusage.Shared): back to back, the capacity source would statfs every mount again while
// the filesystem source builds its points, which no collector does. At an interval longer than a scrape
// both sources scrape on one tick, one statfs per mount, as in the collector; 100 µs a mount is 0.5 s at
// 5 000 mounts, several times a scrape. Only CPU, allocations and points per scrape then compare, not wall
// time.
const sharedInterval = 100 * time.Microsecond

// interval is the collection interval of a run of r on src with m mounts.
func interval(r Receiver, src Source, m int) time.Duration {
	if len(Sources(r, src)) > 1 {
		return time.Duration(m) * sharedInterval
	}
	return Interval
}

// config returns the receiver's factory and its configuration for one source on root with m mounts,
// built from a map the way the collector builds it from YAML.
func config(r Receiver, src Source, root string, m int) (receiver.Factory, component.Config, error) {
	var f receiver.Factory
	c := map[string]any{
		"root_path":           root,
		"collection_interval": validInterval.String(),
		"initial_delay":       "0s",
	}
	switch r {
	case HostMetrics, HostMetricsEngine:
		f = hostmetricsreceiver.NewFactory()
		sc := map[string]any{}
		if r == HostMetricsEngine {
			off := map[string]any{}
			for _, name := range hostMetricsOff[src] {
				off[name] = map[string]any{"enabled": false}
			}
			sc["metrics"] = off
		}
		c["scrapers"] = map[string]any{string(src): sc}
	case DiskHealth, DiskHealthParity, DiskHealthEngine:
		f = diskhealthreceiver.NewFactory()
		maps.Copy(c, diskhealthreceiver.Only(Sources(r, src)...))
		// The receiver's own disk_health.source.status comes from a controller of its own, at its own
		// ticks: counted as a scrape it would make the source's scrapes look cheaper (scrapecost, at
		// the collector's interval, keeps it).
		metrics := map[string]any{"disk_health.source.status": map[string]any{"enabled": false}}
		if r != DiskHealth {
			var err error
			if metrics, err = parityMetrics(f, src, r == DiskHealthEngine); err != nil {
				return nil, nil, err
			}
		}
		c["metrics"] = metrics
	default:
		return nil, nil, fmt.Errorf("unknown receiver %q", r)
	}
	cfg := f.CreateDefaultConfig()
	if err := confmap.NewFromStringMap(c).Unmarshal(cfg); err != nil {
		return nil, nil, fmt.Errorf("%s config: %w", r, err)
	}
	if v, ok := cfg.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, nil, fmt.Errorf("%s config: %w", r, err)
		}
	}
	// Users cannot set the back-to-back interval (disk_health refuses one below emit.MinInterval), so
	// the run sets it after validation, on both receivers alike.
	switch c := cfg.(type) {
	case *diskhealthreceiver.Config:
		c.ControllerConfig.CollectionInterval = interval(r, src, m)
	case *hostmetricsreceiver.Config:
		c.ControllerConfig.CollectionInterval = interval(r, src, m)
	}
	return f, cfg, nil
}

// parityMetrics disables every disk_health metric that hostmetrics does not emit for src, or all of
// them.
func parityMetrics(f receiver.Factory, src Source, all bool) (map[string]any, error) {
	// The receiver's own Marshal: confmap calls it only for a nested config.
	conf := confmap.New()
	if err := f.CreateDefaultConfig().(confmap.Marshaler).Marshal(conf); err != nil {
		return nil, err
	}
	metrics, err := conf.Sub("metrics")
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	if !all {
		for _, name := range hostMetricsSet[src] {
			keep[name] = true
			if ours, ok := diskHealthNames[name]; ok {
				keep[ours] = true
			}
		}
	}
	out := map[string]any{}
	for name := range metrics.ToStringMap() {
		out[name] = map[string]any{"enabled": keep[name]}
	}
	return out, nil
}

// ParityMetrics is disk_health's `metrics` section with only what hostmetrics' disk and filesystem
// scrapers emit by default switched on (scrapecost's parity collector).
func ParityMetrics() (map[string]any, error) {
	f := diskhealthreceiver.NewFactory()
	out, err := parityMetrics(f, Disk, false)
	if err != nil {
		return nil, err
	}
	fs, err := parityMetrics(f, Filesystem, false)
	if err != nil {
		return nil, err
	}
	for name, c := range fs {
		if c.(map[string]any)["enabled"] == true {
			out[name] = c
		}
	}
	return out, nil
}

// Run is a receiver running with a counting sink.
type Run struct {
	rcv     receiver.Metrics
	batches int // delivered per scrape: disk_health runs each source in a controller of its own
	mu      sync.Mutex
	cond    *sync.Cond
	n       int   // batches delivered
	dps     int64 // data points delivered
}

// Start creates the receiver through its public factory and starts it on a tree of mounts mounts.
// onScrape, if not nil, sees every delivered batch (one per source of a scrape).
func Start(ctx context.Context, r Receiver, src Source, root string, mounts int, onScrape func(pmetric.Metrics)) (*Run, error) {
	f, cfg, err := config(r, src, root, mounts)
	if err != nil {
		return nil, err
	}
	run := &Run{batches: max(1, len(Sources(r, src)))}
	run.cond = sync.NewCond(&run.mu)
	sink, err := consumer.NewMetrics(func(_ context.Context, md pmetric.Metrics) error {
		n := md.DataPointCount()
		if onScrape != nil {
			onScrape(md)
		}
		run.mu.Lock()
		run.n++
		run.dps += int64(n)
		run.mu.Unlock()
		run.cond.Broadcast()
		return nil
	})
	if err != nil {
		return nil, err
	}
	rcv, err := f.CreateMetrics(ctx, receivertest.NewNopSettings(f.Type()), cfg, sink)
	if err != nil {
		return nil, err
	}
	if err := rcv.Start(ctx, componenttest.NewNopHost()); err != nil {
		return nil, err
	}
	run.rcv = rcv
	return run, nil
}

// Wait blocks until n scrapes in all have been delivered, or timeout passes.
func (r *Run) Wait(n int, timeout time.Duration) error {
	timer := time.AfterFunc(timeout, r.cond.Broadcast)
	defer timer.Stop()
	deadline := time.Now().Add(timeout)
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.n < n*r.batches {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d scrapes after %v", r.n/r.batches, n, timeout)
		}
		r.cond.Wait()
	}
	return nil
}

// Counts returns the scrapes and data points delivered so far. A scrape is delivered with its last
// source's batch; the next scrape's come an interval later.
func (r *Run) Counts() (scrapes int, dataPoints int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n / r.batches, r.dps
}

// Stop shuts the receiver down.
func (r *Run) Stop(ctx context.Context) error {
	if r.rcv == nil {
		return errors.New("not started")
	}
	return r.rcv.Shutdown(ctx)
}

// CPUTime is the process's user+system CPU time so far.
func CPUTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

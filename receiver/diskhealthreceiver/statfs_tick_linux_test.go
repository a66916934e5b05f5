package diskhealthreceiver

import (
	"context"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
)

// capacityMetric: the capacity source's metrics, told apart from the filesystem source's by name.
var capacityMetric = regexp.MustCompile(`^disk_health\.filesystem\.(domain|checkpoint|shm|project|projects)\b`)

// TestOneStatfsPerMountPerTick runs one receiver with the filesystem and capacity sources on this host
// and counts the statfs calls per mount: both read the one mount snapshot, so each mount is statfs'd once
// per tick, not once per source.
func TestOneStatfsPerMountPerTick(t *testing.T) {
	const interval = 2 * time.Second
	cfg := createDefaultConfig().(*Config)
	cfg.RootPath = "/"
	require.NoError(t, confmap.NewFromStringMap(Only("filesystem", "capacity")).Unmarshal(cfg))
	cfg.ControllerConfig.CollectionInterval = interval
	cfg.ControllerConfig.InitialDelay = 0

	var mu sync.Mutex
	arrivals := map[string][]time.Time{}
	calls := map[string]int{}
	next, err := consumer.NewMetrics(func(_ context.Context, md pmetric.Metrics) error {
		if md.ResourceMetrics().Len() == 0 {
			return nil
		}
		src := "filesystem"
		switch name := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Name(); {
		case name == "disk_health.source.status":
			return nil // the receiver's own batch
		case capacityMetric.MatchString(name):
			src = "capacity"
		}
		mu.Lock()
		defer mu.Unlock()
		arrivals[src] = append(arrivals[src], time.Now())
		return nil
	})
	require.NoError(t, err)
	r := &diskHealthReceiver{set: receivertest.NewNopSettings(metadata.Type), cfg: cfg, metrics: next}
	r.statfs = func(path string, st *unix.Statfs_t) error {
		mu.Lock()
		calls[path]++
		mu.Unlock()
		return unix.Statfs(path, st)
	}
	require.NoError(t, r.Start(t.Context(), componenttest.NewNopHost()))
	const ticks = 3
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(arrivals["filesystem"]) >= ticks && len(arrivals["capacity"]) >= ticks
	}, ticks*interval+10*time.Second, 10*time.Millisecond)
	require.NoError(t, r.Shutdown(t.Context()))

	mu.Lock()
	defer mu.Unlock()
	// A tick is the batches within half an interval of its first (the snapshot's reuse rule).
	all := slices.Concat(arrivals["filesystem"], arrivals["capacity"])
	slices.SortFunc(all, func(x, y time.Time) int { return x.Compare(y) })
	n := 0
	var first time.Time
	for _, at := range all {
		if n == 0 || at.Sub(first) > interval/2 {
			n, first = n+1, at
		}
	}
	require.NotEmpty(t, calls, "the host has mounts")
	t.Logf("%d mounts statfs'd in %d ticks (filesystem %d, capacity %d batches)", len(calls), n, len(arrivals["filesystem"]), len(arrivals["capacity"]))
	for path, c := range calls {
		assert.LessOrEqual(t, c, n, "%s: one statfs per tick whatever the number of sources", path)
	}
}

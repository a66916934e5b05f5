package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// hostmetricsBinary returns the hostmetrics peer: the collector `make build-hostmetrics` builds from
// bench/otelcol-hostmetrics.yaml (hostmetricsreceiver v0.165.1). The path comes from
// DISKHEALTH_HOSTMETRICS, which `make test` sets after building it, else ../_build-hostmetrics.
func hostmetricsBinary(t *testing.T) string {
	t.Helper()
	bin, fromEnv := os.LookupEnv("DISKHEALTH_HOSTMETRICS")
	if !fromEnv || bin == "" {
		bin = filepath.Join("..", "_build-hostmetrics", "otelcol-hostmetrics")
	}
	if _, err := os.Stat(bin); err != nil {
		if fromEnv {
			t.Fatalf("DISKHEALTH_HOSTMETRICS=%s: %v", bin, err)
		}
		testkit.Unavailable(t, "the hostmetrics peer is missing (%v): `make build-hostmetrics` builds it, `make test` builds it and passes it in DISKHEALTH_HOSTMETRICS", err)
	}
	abs, err := filepath.Abs(bin)
	require.NoError(t, err)
	return abs
}

// TestHostmetricsConventions runs the hostmetrics peer (disk and filesystem scrapers) and disk_health
// under `conventions: hostmetrics` on one fixture root (the diskstats snapshot of testdata/iostat and
// a tmpfs the test mounts) into one Prometheus: for every hostmetrics series there is a disk_health
// series of the same name and labels, with the same value (the same /proc/diskstats field, the same
// statfs; seconds to within float rounding, hostmetrics' utilization to within the digits it rounds
// to). hostmetrics' optional system.filesystem.utilization is switched on on both sides.
func TestHostmetricsConventions(t *testing.T) {
	testkit.RequireRoot(t, "mounting the fixture's tmpfs")
	dh, hm := collectorBinary(t), hostmetricsBinary(t)
	prom := testkit.Tool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	root := filepath.Join(dir, "root")

	devs := loadFixture(t, "snapshot-1.diskstats")
	buildReceiverRoot(t, root, devs, formatDiskstats(devs), time.Now().Add(-time.Hour).Truncate(time.Second))
	// A quiet filesystem of its own, so both statfs the same numbers: 16 MiB of tmpfs with a file in it.
	mp := filepath.Join(root, "data")
	mountTmpfs(t, mp, "e2e-tmpfs", "size=16m,nr_inodes=4096")
	require.NoError(t, os.WriteFile(filepath.Join(mp, "payload"), make([]byte, 3<<20), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc", "1"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc", "1", "mountinfo"),
		[]byte(fmt.Sprintf("40 1 %s / /data rw,relatime shared:40 - tmpfs e2e-tmpfs rw,size=16384k,nr_inodes=4096\n", majorMinor(t, mp))), 0o644))

	hmAddr, dhAddr := freeAddr(t), freeAddr(t)
	startCollector(t, hm, fmt.Sprintf(`receivers:
  hostmetrics:
    collection_interval: 1s
    root_path: %s
    scrapers:
      disk:
      filesystem:
        # tmpfs is a virtual filesystem to hostmetrics (nodev in /proc/filesystems).
        include_virtual_filesystems: true
        metrics:
          system.filesystem.utilization: {enabled: true}
exporters:
  prometheus:
    endpoint: %s
service:
  pipelines:
    metrics:
      receivers: [hostmetrics]
      exporters: [prometheus]
`, root, hmAddr), telemetryOff)
	startCollector(t, dh, fmt.Sprintf(`receivers:
  disk_health:
    collection_interval: 1s
    root_path: %s
    conventions: hostmetrics
    filesystem:
      include_memory_filesystems: true
    metrics:
      system.filesystem.utilization: {enabled: true}
exporters:
  prometheus:
    endpoint: %s
service:
  pipelines:
    metrics:
      receivers: [disk_health]
      exporters: [prometheus]
`, root, dhAddr), append([]string{telemetryOff},
		// Only the sources hostmetrics' disk and filesystem scrapers have a counterpart in.
		onlySources(func(name string) bool { return name == "iostat" || name == "filesystem" })...)...)
	_, api := startPrometheusJobs(t, prom, dir, map[string]string{"hostmetrics": hmAddr, "diskhealth": dhAddr})

	// hostmetrics' 7 disk and 3 filesystem metrics, each under its Prometheus name.
	const names = 10
	byJob := func(job string) map[string]promSample {
		samples, err := api.query(fmt.Sprintf(`{job=%q, __name__=~"system_(disk|filesystem)_.*"}`, job))
		if err != nil {
			return nil
		}
		out := map[string]promSample{}
		for _, s := range samples {
			// The instrumentation scope says who sent a series, as job and instance do (seriesKey
			// leaves those out): hostmetrics' scraper packages against the receiver's import path.
			maps.DeleteFunc(s.Metric, func(k, _ string) bool { return strings.HasPrefix(k, "otel_scope_") })
			out[seriesKey(s.Metric)] = s
		}
		return out
	}
	distinctNames := func(series map[string]promSample) int {
		seen := map[string]bool{}
		for _, s := range series {
			seen[s.Metric["__name__"]] = true
		}
		return len(seen)
	}
	var hmSeries, dhSeries map[string]promSample
	require.Eventually(t, func() bool {
		hmSeries, dhSeries = byJob("hostmetrics"), byJob("diskhealth")
		return distinctNames(hmSeries) == names && len(dhSeries) >= len(hmSeries)
	}, 60*time.Second, 500*time.Millisecond, "both collectors' disk and filesystem series in Prometheus")

	// Every device of the snapshot with a non-zero counter, and the tmpfs.
	devices, mounts := map[string]bool{}, map[string]bool{}
	for key, s := range hmSeries {
		if d, ok := s.Metric["device"]; ok && strings.HasPrefix(s.Metric["__name__"], "system_disk_") {
			devices[d] = true
		}
		if m, ok := s.Metric["mountpoint"]; ok {
			mounts[m] = true
		}
		got, ok := dhSeries[key]
		if !assert.True(t, ok, "hostmetrics series %s has no disk_health series of the same name and labels", key) {
			continue
		}
		want, have := s.float(t), got.float(t)
		switch {
		case strings.HasSuffix(s.Metric["__name__"], "_seconds_total"):
			// hostmetrics rounds milliseconds / 1000 to the millisecond; ours divides.
			assert.InEpsilon(t, want, have, 1e-12, key)
		case strings.Contains(s.Metric["__name__"], "utilization"):
			// hostmetrics rounds the ratio to as many decimals as the byte count has digits.
			assert.InDelta(t, want, have, 1e-6, key)
		default:
			assert.Equal(t, want, have, key)
		}
	}
	// And no disk_health series repeats a hostmetrics name under other labels (ours, replaced).
	labelKeys := func(s promSample) string {
		keys := slices.Sorted(maps.Keys(s.Metric))
		return strings.Join(keys, ",")
	}
	hmKeys := map[string]map[string]bool{}
	for _, s := range hmSeries {
		name := s.Metric["__name__"]
		if hmKeys[name] == nil {
			hmKeys[name] = map[string]bool{}
		}
		hmKeys[name][labelKeys(s)] = true
	}
	for key, s := range dhSeries {
		if keys, ok := hmKeys[s.Metric["__name__"]]; ok {
			assert.True(t, keys[labelKeys(s)], "disk_health series %s has a hostmetrics name but not its labels", key)
		}
	}
	assert.Equal(t, map[string]bool{"/data": true}, mounts)
	assert.NotEmpty(t, devices)
	t.Logf("%d hostmetrics series (%d devices, %d mounts), each matched by disk_health's", len(hmSeries), len(devices), len(mounts))
}

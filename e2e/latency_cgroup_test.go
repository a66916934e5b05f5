package e2e

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// blkioV1 is the mount point of this host's cgroup v1 blkio hierarchy, or "" if it has none.
func blkioV1(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/proc/self/mounts")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// device mountpoint fstype options ...
		fields := strings.Fields(sc.Text())
		if len(fields) >= 4 && fields[2] == "cgroup" && slices.Contains(strings.Split(fields[3], ","), "blkio") {
			return fields[1]
		}
	}
	require.NoError(t, sc.Err())
	return ""
}

// TestLatencyPerCgroupPrometheusNativeHistogram: the per-cgroup route to Prometheus, beside the
// per-device one (TestLatencyPrometheusNativeHistogram). config/prometheus.yaml with
// latency.per_cgroup.enabled, scraped by Debian's Prometheus with native histograms on; a child
// cgroup of this host's v1 blkio hierarchy writes 256 direct 4 KiB blocks to a fresh loop device. In
// Prometheus, disk_health_container_disk_operation_duration_seconds of that cgroup_path, device and direction is
// one native histogram (no classic _bucket series) with those 256 writes (exactly, but for
// testkit.UncountedCompletions), as is the device-wide histogram, and the cgroup's occupancy share is
// there beside it.
func TestLatencyPerCgroupPrometheusNativeHistogram(t *testing.T) {
	testkit.RequireRoot(t, "the per-cgroup latency probe on a loop device (loads BPF, losetup, creates a blkio cgroup)")
	blkio := blkioV1(t)
	if blkio == "" {
		testkit.Unavailable(t, "needs a cgroup v1 blkio hierarchy (the per-cgroup v2 case is not tested yet)")
	}
	bin := collectorBinary(t)
	prom := testkit.Tool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	require.NoError(t, os.WriteFile(img, nil, 0o600))
	require.NoError(t, os.Truncate(img, 8<<20))
	dev := attachLoop(t, img)

	exporterAddr, healthAddr, promAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	t.Setenv("DISKHEALTH_PROMETHEUS_ENDPOINT", exporterAddr)
	t.Setenv("DISKHEALTH_HEALTH_ENDPOINT", healthAddr)
	col := startCollector(t, bin, shippedConfig(t, "prometheus.yaml"),
		append([]string{telemetryOff, "--set=receivers::disk_health::latency::per_cgroup::enabled=true"}, loopOnly(dev)...)...)
	promCfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(promCfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: diskhealth
    static_configs:
      - targets: [%q]
`, exporterAddr)), 0o644))
	server := startPeer(t, prom, "--config.file="+promCfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr, "--enable-feature=native-histograms")
	api := promAPI{base: "http://" + promAddr}
	// Every write is counted only once the per-cgroup probe is attached.
	require.Eventually(t, func() bool {
		return strings.Contains(col.output.String(), "Per-cgroup block latency probe attached.")
	}, 60*time.Second, 100*time.Millisecond, "the per-cgroup latency probe did not attach")

	// A child of the host's blkio hierarchy, removed at the end (it is empty once dd exited).
	cg := filepath.Join(blkio, fmt.Sprintf("diskhealth-e2e-%d", os.Getpid()))
	require.NoError(t, os.Mkdir(cg, 0o755))
	t.Cleanup(func() {
		if err := os.Remove(cg); err != nil {
			t.Errorf("cannot remove the test's cgroup: %v", err)
		}
	})
	path := "/" + filepath.Base(cg)
	out, err := exec.Command("sh", "-c", `echo $$ > "$0/cgroup.procs" && exec dd if=/dev/zero of="$1" bs=4k count=256 oflag=direct`,
		cg, "/dev/"+dev).CombinedOutput()
	require.NoError(t, err, "%s", out)

	series := fmt.Sprintf(`disk_health_container_disk_operation_duration_seconds{cgroup_path=%q,system_device=%q,disk_io_direction="write"}`, path, dev)
	device := fmt.Sprintf(`disk_health_disk_operation_duration_seconds{system_device=%q,disk_io_direction="write"}`, dev)
	// dd's writes, less the rare one no count shows (testkit.UncountedCompletions, which the per-cgroup
	// histograms share with the per-device ones).
	const writes = 256
	least := float64(writes - testkit.UncountedCompletions(writes))
	// waitCount waits for expr's native histogram to count at least least requests and returns its count.
	waitCount := func(expr string) float64 {
		deadline := time.Now().Add(60 * time.Second)
		var count float64
		for {
			if s, err := api.query("histogram_count(" + expr + ")"); err == nil && len(s) == 1 {
				if count = s[0].float(t); count >= least {
					return count
				}
			}
			for _, p := range []*collector{col, server} {
				select {
				case <-p.exited:
					t.Fatalf("%s exited: %v", p.cmd.Path, p.waitErr)
				default:
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no native histogram %s with %v writes in Prometheus within 60 s (count %v)", expr, least, count)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	count := waitCount(series)
	assert.LessOrEqual(t, count, float64(writes), "dd's writes: the cgroup did no other I/O on the device")
	// Nothing else writes to the fresh loop device: its writes are the cgroup's.
	assert.LessOrEqual(t, waitCount(device), float64(writes), "the device's writes are the cgroup's")
	// A native histogram, not classic buckets: no _bucket series exist.
	assert.Empty(t, api.mustQuery(t, strings.Replace(series, "_seconds{", "_seconds_bucket{", 1)))
	lowest, highest := histogramRange(t, api, series)
	p99 := api.mustQuery(t, "histogram_quantile(0.99, "+series+")")
	require.Len(t, p99, 1)
	t.Logf("%s: %v writes, buckets up to (%.6f, %.6f] s, p99 %.6f s", series, count, lowest, highest, p99[0].float(t))

	share := api.mustQuery(t, fmt.Sprintf(`{__name__=~"disk_health_container_disk_occupancy_share.*",cgroup_path=%q,system_device=%q}`, path, dev))
	require.NotEmpty(t, share, "the cgroup's occupancy share")
	for _, s := range share {
		v := s.float(t)
		assert.True(t, v >= 0 && v <= 1, "%s: a share is within [0, 1]: %v", s.Metric["__name__"], v)
		t.Logf("%s{cgroup_path=%q} %v", s.Metric["__name__"], path, v)
	}

	// The Grafana dashboard's per-cgroup panels show the cgroup. Their p99 is a rate() over the
	// histogram, which may not see the writes the series appeared with: the cgroup writes again.
	out, err = exec.Command("sh", "-c", `echo $$ > "$0/cgroup.procs" && exec dd if=/dev/zero of="$1" bs=4k count=64 oflag=direct`,
		cg, "/dev/"+dev).CombinedOutput()
	require.NoError(t, err, "%s", out)
	panels, _ := grafanaQueries(t)
	var shown int
	for _, p := range panels {
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, "container_disk_") || strings.Contains(tg.Expr, "disk_health_container_disk_noisy_neighbor") {
				continue // the noisy-neighbour panel shows episodes, and this lone cgroup has none
			}
			shown++
			expr := strings.ReplaceAll(tg.Expr, "$host", ".*")
			var res []promSample
			shows := func() bool {
				for _, s := range res {
					if s.Metric["cgroup_path"] == path && s.Metric["system_device"] == dev && !math.IsNaN(s.float(t)) {
						return true
					}
				}
				return false
			}
			for end := time.Now().Add(15 * time.Second); !shows() && time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
				res = api.mustQuery(t, expr)
			}
			assert.True(t, shows(), "panel %q shows no series of %s on %s: %v", p.Title, path, dev, res)
		}
	}
	assert.Equal(t, 2, shown, "the p99 and share panels")
}

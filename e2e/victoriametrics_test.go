package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// vmServer is a single-node VictoriaMetrics, built by goPeer, on a loopback port.
type vmServer struct {
	*collector
	addr string
	promAPI
}

// startVictoriaMetrics runs VictoriaMetrics on its data in dir (kept across restarts) at addr ("" for a
// free port). New samples are queryable at once (-search.latencyOffset=0s; its default hides the last
// 30 s), and OTLP names are translated as the Prometheus exporter does (-opentelemetry.usePrometheusNaming).
// args are further flags.
func startVictoriaMetrics(t *testing.T, dir, addr string, args ...string) vmServer {
	t.Helper()
	bin := victoriaMetrics.path(t)
	if addr == "" {
		addr = freeAddr(t)
	}
	p := startPeer(t, bin, append([]string{"-httpListenAddr=" + addr, "-storageDataPath=" + dir, "-search.latencyOffset=0s",
		"-search.disableCache", "-opentelemetry.usePrometheusNaming", "-loggerLevel=WARN"}, args...)...)
	waitReady(t, p, "http://"+addr+"/health", "VictoriaMetrics")
	return vmServer{collector: p, addr: addr, promAPI: promAPI{base: "http://" + addr}}
}

// waitReady waits until a peer answers url with 200, failing the test if it exits first.
func waitReady(t *testing.T, p *collector, url, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("%s exited: %v\n%s", what, p.waitErr, p.output.String())
		case <-time.After(200 * time.Millisecond):
		}
		require.False(t, time.Now().After(deadline), "%s not ready within 60 s", what)
	}
}

// flush makes what VictoriaMetrics has received queryable.
func (v vmServer) flush(t *testing.T) {
	t.Helper()
	resp, err := http.Get(v.base + "/internal/force_flush")
	require.NoError(t, err)
	resp.Body.Close()
}

// thresholdRe is a rule's final comparison with a constant: `> 0.9`, `== 1`, `< 86400`.
var thresholdRe = regexp.MustCompile(`\s*(?:[<>]=?|[!=]=)\s*[0-9.e+-]+\s*$`)

// healthyHostFeeds says whether a healthy host without SMART feeds a dashboard or rule query: every query
// on device I/O, filesystems or latency; not the forecast (nothing fills), the not-ok states, SMART (a
// virtio disk or a fixture root has none), RAID, thin pools or errors (the filesystem error states too:
// a host with no ext4, btrfs or xfs mounted has none), native NVMe paths and thin namespaces (a host
// without an NVMe subsystem has none: TestNVMePathsInPrometheus feeds them from a fixture), nor NFS and
// FUSE (the netfs source is off in the shipped configs; this kernel has no NFS).
func healthyHostFeeds(expr string) bool {
	for _, n := range []string{"time_to_full", `!="ok"`, "hw_", "_physical_disk_", "_logical_disk_", "_errors_total", "read_only_after_errors", "disk_health_filesystem_error_status",
		"disk_health_nvme_",
		"nfs_client_mount_", "fuse_connection_", "disk_health_filesystem_client_state",
		// Will the next checkpoint fit: a learned save pattern, a kubelet (the domains' headroom is its
		// eviction thresholds' at the default), pods' /dev/shm, project quotas.
		"checkpoint_", "eviction", "domain_headroom", "shm_", "project_",
		// Per-cgroup latency and occupancy: opt-in (latency.per_cgroup), off in the shipped configs; so are
		// the input pipeline's per-pod file reads (filelat.per_cgroup), which TestDashboardsAndRulesOnEngines
		// runs with it on.
		"container_disk_", "container_filesystem_"} {
		if strings.Contains(expr, n) {
			return false
		}
	}
	return true
}

// ruleSeries is what a rule compares: its expression without the final comparison with a constant,
// so that a healthy host, where no rule fires, still shows whether the engine has the series.
func ruleSeries(expr string) string { return thresholdRe.ReplaceAllString(strings.TrimSpace(expr), "") }

// engineQueries are the dashboard's panel queries ($host set to host: ".*" is All) and each alert rule's series, by a
// name for the messages.
func engineQueries(t *testing.T, host string) map[string]string {
	t.Helper()
	out := map[string]string{}
	panels, _ := grafanaQueries(t)
	for _, p := range panels {
		for i, tg := range p.Targets {
			out[fmt.Sprintf("panel %q #%d", p.Title, i)] = strings.ReplaceAll(tg.Expr, "$host", host)
		}
	}
	for name, expr := range ruleExprs(t) {
		out["rule "+name] = ruleSeries(expr)
	}
	return out
}

// resultKeys are the series of an instant-query result (job and instance aside: only the scrape route
// has them) and their values.
func resultKeys(t *testing.T, res []promSample) map[string]float64 {
	out := map[string]float64{}
	for _, s := range res {
		out[seriesKey(s.Metric)] = s.float(t)
	}
	return out
}

// TestDashboardsAndRulesOnEngines feeds Debian's Prometheus (scraping config/prometheus.yaml's endpoint,
// native histograms on) and VictoriaMetrics (config/prometheus-remote-write.yaml pushing into it) from
// one collector, which reads this host's disks and filesystems and a loop device whose every read takes
// a known time (the latency source's histograms). Every Grafana panel query and every alert rule's
// series returns the same series on both engines, and the ones this host feeds (device I/O,
// filesystems, latency) are not empty; the p50/p99 latency panels and the p99 rule agree between the
// engines, and with the buckets of the collector's histogram that hold the reads (none below the
// delay's: how far above it a read goes is the machine's load, which nothing here depends on).
func TestDashboardsAndRulesOnEngines(t *testing.T) {
	testkit.RequireRoot(t, "the latency panels read the BPF latency source on a loop device (losetup, FUSE)")
	bin := collectorBinary(t)
	prom := testkit.Tool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	vm := startVictoriaMetrics(t, filepath.Join(dir, "vm"), "")

	// Bucket -27 of the collector's scale-3 histogram is (96.38, 105.11] ms: no read lies below it.
	const delay = 96500 * time.Microsecond
	dev := delayLoop(t, dir, 4<<20, delay)

	exporterAddr, healthAddr := freeAddr(t), freeAddr(t)
	t.Setenv("DISKHEALTH_PROMETHEUS_ENDPOINT", exporterAddr)
	t.Setenv("DISKHEALTH_HEALTH_ENDPOINT", healthAddr)
	t.Setenv("DISKHEALTH_REMOTE_WRITE_ENDPOINT", "http://"+vm.addr+"/api/v1/write")
	rwConfig, err := filepath.Abs(filepath.Join("..", "config", "prometheus-remote-write.yaml"))
	require.NoError(t, err)
	include := []string{dev}
	for d := range wholeDisks(t) {
		include = append(include, d)
	}
	// A pod (a kubepods-named cgroup) reads the delay disk's image, a file on its FUSE mount, each read
	// 96.5 ms, and the loop device, where it stalls on I/O: "what the input pipeline reads" and
	// PodInputBound (filelat.per_cgroup, on here, off in the shipped configs for its cost).
	podUID := inputPod(t, filepath.Join(dir, "delay", "disk.img"), dev)
	col := startCollector(t, bin, shippedConfig(t, "prometheus.yaml"), "--config="+rwConfig, telemetryOff,
		"--set=receivers::disk_health::collection_interval=2s",
		"--set=receivers::disk_health::iostat::devices::include=["+strings.Join(include, ",")+"]",
		"--set=receivers::disk_health::iostat::device_classes=[disk,loop]",
		// Room for the test's mount and pod however busy the machine's others are.
		"--set=receivers::disk_health::filelat::enabled=true", "--set=receivers::disk_health::filelat::top_n=200",
		"--set=receivers::disk_health::filelat::per_cgroup::enabled=true", "--set=receivers::disk_health::filelat::per_cgroup::top_n=100",
		"--set=receivers::disk_health::cgroups::top_n=100",
		"--set=service::pipelines::metrics::exporters=[prometheus,prometheus_remote_write]")
	_, api := startPrometheus(t, prom, dir, exporterAddr, "--enable-feature=native-histograms")
	require.Eventually(t, func() bool { return strings.Contains(col.output.String(), "Block latency probe attached.") },
		60*time.Second, 100*time.Millisecond, "the latency probe did not attach")

	// Reads through the delay: each takes about 96.5 ms, 40 of them, over two collections or more.
	runCmd(t, "dd", "if=/dev/"+dev, "of=/dev/null", "bs=4096", "count=40", "iflag=direct")

	queries := engineQueries(t, ".*")
	names := make([]string, 0, len(queries))
	for n := range queries {
		names = append(names, n)
	}
	sort.Strings(names)
	latency := func(expr string) bool { return strings.Contains(expr, "disk_health_disk_operation_duration_seconds") }

	// Both engines have every collection of the reads once the p99 panel shows the loop device's reads
	// on both, with the same value.
	var onProm, onVM map[string]map[string]float64
	compare := func() []string {
		vm.flush(t)
		onProm, onVM = map[string]map[string]float64{}, map[string]map[string]float64{}
		var problems []string
		for _, n := range names {
			p, errP := api.query(queries[n])
			v, errV := vm.query(queries[n])
			if errP != nil || errV != nil {
				problems = append(problems, fmt.Sprintf("%s: Prometheus %v, VictoriaMetrics %v", n, errP, errV))
				continue
			}
			onProm[n], onVM[n] = resultKeys(t, p), resultKeys(t, v)
			pk, vk := keysOf(onProm[n]), keysOf(onVM[n])
			if !slices.Equal(pk, vk) {
				problems = append(problems, fmt.Sprintf("%s: series differ\n  Prometheus:      %v\n  VictoriaMetrics: %v", n, pk, vk))
			}
			if healthyHostFeeds(queries[n]) && (len(pk) == 0 || len(vk) == 0) {
				problems = append(problems, fmt.Sprintf("%s: empty (Prometheus %d series, VictoriaMetrics %d): %s", n, len(pk), len(vk), queries[n]))
			}
			if latency(queries[n]) && !hasLoopRead(onProm[n], dev) {
				problems = append(problems, fmt.Sprintf("%s: no read series of %s", n, dev))
			}
			if strings.Contains(queries[n], "by (host_name, k8s_pod_uid, system_filesystem_mountpoint)") && !hasPod(onProm[n], podUID) {
				problems = append(problems, fmt.Sprintf("%s: no series of the test's pod %s", n, podUID))
			}
		}
		return problems
	}
	var problems []string
	deadline := time.Now().Add(90 * time.Second)
	for problems = compare(); len(problems) > 0 && time.Now().Before(deadline); problems = compare() {
		// rate() sees only reads after the series' first sample: keep reading.
		runCmd(t, "dd", "if=/dev/"+dev, "of=/dev/null", "bs=4096", "count=10", "iflag=direct")
		select {
		case <-col.exited:
			t.Fatalf("the collector exited: %v", col.waitErr)
		case <-time.After(2 * time.Second):
		}
	}
	require.Empty(t, problems, "dashboard and rule queries on Prometheus and VictoriaMetrics")

	// PodInputBound whole, its thresholds too: the pod's reads take 96.5 ms (over 50) and it stalls on
	// the loop device most of the time, so both engines select it. The rule's windows are 5 minutes;
	// this run has seconds of samples, and over a window longer than a series has existed Prometheus'
	// rate() divides the increase by nearly the whole window (its extrapolation stops near the first
	// sample), VictoriaMetrics' by the samples' span: measured here 0.018 against 0.52 for the pod's
	// stall share, so Prometheus did not select the pod over 5 minutes of a 15-second-old series. After
	// 5 minutes of stall (the rule's `for` is 10) both agree; here the windows are cut to 20 s.
	inputBound := strings.ReplaceAll(ruleExprs(t)["PodInputBound"], "[5m]", "[20s]")
	require.NotContains(t, inputBound, "[5m]")
	selected := map[string]bool{}
	for deadline := time.Now().Add(60 * time.Second); ; {
		vm.flush(t)
		for _, e := range []struct {
			name string
			api  promAPI
		}{{"Prometheus", api}, {"VictoriaMetrics", vm.promAPI}} {
			res, err := e.api.query(inputBound)
			require.NoError(t, err, "PodInputBound on %s", e.name)
			if !selected[e.name] && hasPod(resultKeys(t, res), podUID) {
				t.Logf("PodInputBound (20 s windows) on %s selects the test's pod: %v", e.name, keysOf(resultKeys(t, res)))
				selected[e.name] = true
			}
		}
		if len(selected) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	require.True(t, selected["Prometheus"], "PodInputBound on Prometheus selects the test's pod %s", podUID)
	require.True(t, selected["VictoriaMetrics"], "PodInputBound on VictoriaMetrics selects the test's pod %s", podUID)

	// The latency quantiles. No read lies below the collector's bucket (96.38, 105.11] ms; on a quiet
	// machine most lie in it, on a loaded one any number may take longer than the delay by more than
	// the bucket's 8.6 ms, so the quantiles are held to the buckets that hold reads, in the collector's
	// whole histogram as Prometheus stores it.
	// Prometheus interpolates inside those buckets; VictoriaMetrics keeps the counts in its own
	// log-spaced buckets (18 per decade: vmrange 9.5e-02...1.0e-01, 1.0e-01...1.136e-01), so its quantile
	// lies in the ones that overlap them.
	delayLower := math.Exp2(-27.0 / 8)
	whole := api.mustQuery(t, fmt.Sprintf(`disk_health_disk_operation_duration_seconds{system_device=%q,disk_io_direction="read"}`, dev))
	require.Len(t, whole, 1, "the loop device's read histogram on Prometheus")
	lower, upper, mode := math.Inf(1), 0.0, promBucket{}
	for _, b := range whole[0].buckets(t) {
		if b.count > 0 {
			lower, upper = min(lower, b.lower), max(upper, b.upper)
		}
		if b.count > mode.count {
			mode = b
		}
	}
	t.Logf("the loop device's reads: in (%.4f, %.4f] s, most (%v) in (%.4f, %.4f]", lower, upper, mode.count, mode.lower, mode.upper)
	assert.GreaterOrEqual(t, lower, delayLower*(1-1e-9), "no read below the delay's bucket")
	vmStep := math.Pow(10, 1.0/18)
	var checked int
	for _, n := range names {
		if !latency(queries[n]) {
			continue
		}
		for k, pv := range onProm[n] {
			if !isLoopRead(k, dev) {
				continue
			}
			vv, ok := onVM[n][k]
			require.True(t, ok, "%s: %s not on VictoriaMetrics", n, k)
			t.Logf("%s: %s Prometheus %.4f s, VictoriaMetrics %.4f s", n, k, pv, vv)
			assert.True(t, lower <= pv && pv <= upper, "%s: Prometheus %.4f s outside the collector's buckets (%.4f, %.4f]", n, pv, lower, upper)
			assert.True(t, lower/vmStep <= vv && vv <= upper*vmStep, "%s: VictoriaMetrics %.4f s outside the buckets around the collector's (%.4f, %.4f]", n, vv, lower, upper)
			checked++
		}
	}
	assert.Equal(t, 3, checked, "the p50 and p99 panels and the p99 rule, each on the loop device's reads")
	var empty []string
	for _, n := range names {
		if len(onProm[n]) == 0 {
			empty = append(empty, n)
		}
	}
	t.Logf("%d queries, the same series on both engines; empty on both here (nothing this host has): %v", len(names), empty)
}

// hasPod says whether a result has a series of the pod uid.
func hasPod(res map[string]float64, uid string) bool {
	for k := range res {
		if strings.Contains(k, fmt.Sprintf("k8s_pod_uid=%q", uid)) {
			return true
		}
	}
	return false
}

// inputPod runs, until the test ends, a reader in a cgroup named as the kubelet's systemd driver names
// a pod's (…kubepods.slice/kubepods-pod<uid>.slice), in the blkio (v1) and the unified (v2) hierarchies
// alike: the first is the one the per-cgroup sources charge I/O to on a hybrid host, the second has
// io.pressure. It reads file (no page cache: a FOPEN_DIRECT_IO file) and then the block device dev,
// direct, four times as long (so it stalls on I/O most of the time), over and over. It returns the pod's UID.
func inputPod(t *testing.T, file, dev string) string {
	t.Helper()
	const uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	var dirs []string
	for _, root := range []string{blkioV1(t), cgroup2Mount(t)} {
		if root == "" {
			continue
		}
		kube := testkit.ChildCgroup(t, root, "kubepods.slice")
		pod := filepath.Join(kube, "kubepods-pod"+strings.ReplaceAll(uid, "-", "_")+".slice")
		require.NoError(t, os.Mkdir(pod, 0o755))
		t.Cleanup(func() {
			// rmdir fails with EBUSY for a moment after the last process exits.
			for deadline := time.Now().Add(5 * time.Second); os.Remove(pod) != nil && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
		})
		dirs = append(dirs, pod)
	}
	require.NotEmpty(t, dirs, "no cgroup hierarchy")
	cmd := exec.Command("sh", "-c", `for d in $POD_CGROUPS; do echo $$ > "$d/cgroup.procs" || exit 1; done
while :; do dd if="$1" of=/dev/null bs=4096 count=4 2>/dev/null; dd if="$2" of=/dev/null bs=4096 count=16 iflag=direct 2>/dev/null; done`,
		"_", file, "/dev/"+dev)
	cmd.Env = append(os.Environ(), "POD_CGROUPS="+strings.Join(dirs, " "))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return uid
}

// cgroup2Mount is where this host's cgroup v2 hierarchy is mounted (the unified one of a hybrid host),
// or "".
func cgroup2Mount(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mounts")
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[2] == "cgroup2" {
			return f[1]
		}
	}
	return ""
}

func keysOf(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// hasLoopRead says whether a latency result has a number for the reads of dev.
func hasLoopRead(res map[string]float64, dev string) bool {
	for k, v := range res {
		if isLoopRead(k, dev) && !math.IsNaN(v) {
			return true
		}
	}
	return false
}

// isLoopRead says whether a latency series key is of dev's reads (the p99 rule selects reads and sums
// the direction away).
func isLoopRead(key, dev string) bool {
	return strings.Contains(key, fmt.Sprintf("system_device=%q", dev)) &&
		(strings.Contains(key, `disk_io_direction="read"`) || !strings.Contains(key, "disk_io_direction="))
}

// stop ends VictoriaMetrics and waits for it.
func (v vmServer) stop(t *testing.T) { v.terminate(t, "VictoriaMetrics") }

// exportedSeries is one series of /api/v1/export: its labels and raw sample times (ms).
type exportedSeries struct {
	Metric     map[string]string `json:"metric"`
	Timestamps []int64           `json:"timestamps"`
}

// export returns the raw samples (/api/v1/export: no deduplication) of the series match selects,
// after making everything received queryable.
func (v vmServer) export(match string) ([]exportedSeries, error) {
	if resp, err := http.Get(v.base + "/internal/force_flush"); err == nil {
		resp.Body.Close()
	}
	resp, err := http.PostForm(v.base+"/api/v1/export", url.Values{"match[]": {match}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("export: HTTP %d: %s", resp.StatusCode, body)
	}
	var out []exportedSeries
	dec := json.NewDecoder(resp.Body)
	for dec.More() {
		var s exportedSeries
		if err := dec.Decode(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// readStamps counts the raw samples of disk's read bytes by their time in ms.
func (v vmServer) readStamps(disk string) (map[int64]int, error) {
	series, err := v.export(fmt.Sprintf(`system_disk_io_bytes_total{disk_io_direction="read",system_device=%q}`, disk))
	if err != nil {
		return nil, err
	}
	out := map[int64]int{}
	for _, s := range series {
		for _, ts := range s.Timestamps {
			out[ts]++
		}
	}
	return out, nil
}

// TestRemoteWriteOutageRestartVictoriaMetrics: config/prometheus-remote-write.yaml into
// VictoriaMetrics through an outage with a collector restart in the middle: every collection arrives,
// exactly once.
func TestRemoteWriteOutageRestartVictoriaMetrics(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	var vm vmServer
	t.Setenv("DISKHEALTH_REMOTE_WRITE_ENDPOINT", "http://"+addr+"/api/v1/write")
	outageRestart(t, outageRoute{
		config: "prometheus-remote-write.yaml", exporter: "prometheus_remote_write",
		up:     func() { vm = startVictoriaMetrics(t, filepath.Join(dir, "vm"), addr) },
		down:   func() { vm.stop(t) },
		stamps: func(disk string) (map[int64]int, error) { return vm.readStamps(disk) }, //nolint:gocritic // vm is set later, by up: a method value would copy the zero one
	})
}

// TestOTLPHTTPOutageRestartVictoriaMetrics: config/elastic-otlp.yaml's OTLP/HTTP exporter (persistent
// queue) into VictoriaMetrics' OTLP endpoint through an outage with a collector restart in the middle:
// every collection arrives, exactly once. (Its logs pipeline has no taker there: VictoriaMetrics
// answers 404, a permanent error, and the events are dropped.)
func TestOTLPHTTPOutageRestartVictoriaMetrics(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	var vm vmServer
	t.Setenv("ELASTIC_OTLP_ENDPOINT", "http://"+addr+"/opentelemetry")
	t.Setenv("ELASTIC_API_KEY", "aWQ6a2V5")
	outageRestart(t, outageRoute{
		config: "elastic-otlp.yaml", exporter: "otlp_http",
		up:     func() { vm = startVictoriaMetrics(t, filepath.Join(dir, "vm"), addr) },
		down:   func() { vm.stop(t) },
		stamps: func(disk string) (map[int64]int, error) { return vm.readStamps(disk) }, //nolint:gocritic // vm is set later, by up: a method value would copy the zero one
	})
}

// TestVictoriaMetricsRoutesMatchScrape: one collector on the GPU-node fixture root (gpuNodeRoot) with
// three routes at once: config/prometheus.yaml's endpoint, scraped by VictoriaMetrics itself;
// config/prometheus-remote-write.yaml into the same VictoriaMetrics; and config/elastic-otlp.yaml's
// OTLP/HTTP exporter into a second VictoriaMetrics' OTLP endpoint. Both pushed routes hold the scrape
// route's series, names and labels alike (job and instance aside; on the OTLP route the scope labels
// lack the otel_ prefix and every unit-"1" sum has the _ratio suffix), and the values it scraped.
func TestVictoriaMetricsRoutesMatchScrape(t *testing.T) {
	bin := collectorBinary(t)
	const interval = 2 * time.Second
	dir := t.TempDir()
	exporterAddr, healthAddr := freeAddr(t), freeAddr(t)
	scrape := filepath.Join(dir, "scrape.yml")
	require.NoError(t, os.WriteFile(scrape, []byte(fmt.Sprintf(`scrape_configs:
  - job_name: diskhealth
    scrape_interval: 1s
    static_configs:
      - targets: [%q]
`, exporterAddr)), 0o644))
	vm := startVictoriaMetrics(t, filepath.Join(dir, "vm"), "", "-promscrape.config="+scrape)
	vmOTLP := startVictoriaMetrics(t, filepath.Join(dir, "vm-otlp"), "")
	t.Setenv("DISKHEALTH_PROMETHEUS_ENDPOINT", exporterAddr)
	t.Setenv("DISKHEALTH_HEALTH_ENDPOINT", healthAddr)
	t.Setenv("DISKHEALTH_REMOTE_WRITE_ENDPOINT", "http://"+vm.addr+"/api/v1/write")
	t.Setenv("ELASTIC_OTLP_ENDPOINT", "http://"+vmOTLP.addr+"/opentelemetry")
	t.Setenv("ELASTIC_API_KEY", "aWQ6a2V5")
	var extra []string
	for _, c := range []string{"prometheus-remote-write.yaml", "elastic-otlp.yaml"} {
		p, err := filepath.Abs(filepath.Join("..", "config", c))
		require.NoError(t, err)
		extra = append(extra, "--config="+p)
	}
	root := gpuNodeRoot(t)
	// The OTLP config's pipeline (its batch processor beside resource_detection) feeds all three.
	col := startCollector(t, bin, shippedConfig(t, "prometheus.yaml"), append(append(extra, routeArgs(root)...),
		"--set=service::pipelines::metrics::exporters=[prometheus,prometheus_remote_write,otlp_http]")...)
	// Float series only, as in TestPrometheusRemoteWrite (no latency source on a fixture root anyway).
	const ours = `__name__=~"(system|hw|container|disk_health)_.+"`
	scraped := `{job="diskhealth",` + ours + `}`
	deadline := time.Now().Add(60 * time.Second)
	for {
		a, errA := vm.query(`disk_health_disk_utilization_ratio{job="diskhealth"}`)
		b, errB := vm.query(`disk_health_disk_utilization_ratio{job=""}`)
		c, errC := vmOTLP.query(`disk_health_disk_utilization_ratio`)
		if errA == nil && errB == nil && errC == nil && len(a) > 0 && len(b) > 0 && len(c) > 0 {
			break
		}
		select {
		case <-col.exited:
			t.Fatalf("the collector exited: %v", col.waitErr)
		case <-time.After(500 * time.Millisecond):
		}
		require.False(t, time.Now().After(deadline), "disk_health_disk_utilization_ratio did not arrive on all three routes")
	}
	// VictoriaMetrics' OTLP ingestion (-opentelemetry.usePrometheusNaming) differs from the Prometheus
	// exporter twice: it names the scope's labels without the otel_ prefix, and it gives every metric of
	// unit "1" the _ratio suffix, where the exporter gives it to gauges only (so hw.status, a sum, is
	// hw_status_ratio there).
	ratio := map[string]string{}
	for _, m := range loadDocumentation(t) {
		if m.Unit == "1" && m.Type == "Sum" {
			p, err := promName(m)
			require.NoError(t, err)
			ratio[p+"_ratio"] = p
		}
	}
	renamed := map[string]bool{}
	otlpNames := func(m map[string]string) error {
		for from, to := range map[string]string{"scope_name": "otel_scope_name", "scope_version": "otel_scope_version"} {
			v, ok := m[from]
			if !ok {
				return fmt.Errorf("no %s label", from)
			}
			delete(m, from)
			m[to] = v
		}
		name := m["__name__"]
		if p, ok := ratio[name]; ok {
			m["__name__"] = p
			renamed[name] = true
		} else if slices.Contains(slices.Collect(maps.Values(ratio)), name) {
			return fmt.Errorf("a unit-1 sum without the _ratio suffix")
		}
		return nil
	}
	for _, route := range []struct {
		name    string
		api     promAPI
		pushed  string
		renamed func(map[string]string) error
	}{
		{"remote write", vm.promAPI, `{job="",` + ours + `}`, nil},
		{"OTLP/HTTP", vmOTLP.promAPI, `{` + ours + `}`, otlpNames},
	} {
		problems, nScraped, nPushed := sameAsScraped(t, interval, vm.promAPI, scraped, route.api, route.pushed, route.renamed)
		assert.Empty(t, problems, "%s and scrape differ in VictoriaMetrics (%d scraped, %d pushed series)", route.name, nScraped, nPushed)
		assert.Equal(t, nScraped, nPushed, route.name)
		t.Logf("%s: %d series, the scrape route's names, labels and values", route.name, nPushed)
	}
	assert.NotEmpty(t, renamed, "no unit-1 sum on the OTLP route: the _ratio difference went unchecked")
	t.Logf("OTLP route's names with _ratio: %v", slices.Sorted(maps.Keys(renamed)))
}

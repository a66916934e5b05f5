package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// routeRoot lays out a root_path with two virtio-like disks, vda (254:0) and vdb (254:16), each with
// its own serial (so its own hw.id; SMART reports both as unsupported), and the cgroup v2 tree of a
// Kubernetes node with containerd (internal/cgroupio's fixture, its I/O moved onto vda and vdb).
func routeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	devs := []dsLine{
		{Major: 254, Minor: 0, Name: "vda", C: []uint64{500, 0, 4000, 100, 200, 0, 1600, 50, 0, 120, 150, 0, 0, 0, 0, 0, 0}},
		{Major: 254, Minor: 16, Name: "vdb", C: []uint64{300, 0, 2400, 60, 100, 0, 800, 20, 0, 70, 80, 0, 0, 0, 0, 0, 0}},
	}
	buildReceiverRoot(t, root, devs, formatDiskstats(devs), time.Now().Add(-time.Hour))
	src := filepath.Join("..", "receiver", "diskhealthreceiver", "internal", "cgroupio", "testdata", "v2-k8s-containerd", "t1", "sys", "fs", "cgroup")
	moved := strings.NewReplacer("259:0 ", "254:0 ", "8:0 ", "254:16 ")
	testkit.RootAt(t, root).CopyTree(src, filepath.Join("sys", "fs", "cgroup"), func(name string, data []byte) []byte {
		if filepath.Base(name) == "io.stat" {
			return []byte(moved.Replace(string(data)))
		}
		return data
	})
	return root
}

// churnCgroups gives every cgroup of the root I/O: every 500 ms until the test ends, each io.stat
// counts a few more bytes and requests (the cgroups source reports the cgroups with I/O since its
// previous read). Files are replaced whole, so a reader never sees half a file.
func churnCgroups(t *testing.T, root string) {
	t.Helper()
	churnCgroupsBy(t, root, func(string) uint64 { return 1 })
}

// churnCgroupsBy is churnCgroups with each io.stat's step scaled by weight(its path): cgroups that
// read far more than the others every step stay the busiest whenever the source looks.
func churnCgroupsBy(t *testing.T, root string, weight func(path string) uint64) {
	t.Helper()
	type file struct {
		path   string
		lines  [][]string
		weight uint64
	}
	var files []file
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "sys", "fs", "cgroup"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "io.stat" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f := file{path: p, weight: weight(p)}
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			f.lines = append(f.lines, strings.Fields(l))
		}
		files = append(files, f)
		return nil
	}))
	done := make(chan struct{})
	stopped := make(chan struct{})
	t.Cleanup(func() { close(done); <-stopped })
	go func() {
		defer close(stopped)
		for n := uint64(1); ; n++ {
			select {
			case <-done:
				return
			case <-time.After(500 * time.Millisecond):
			}
			for _, f := range files {
				var b strings.Builder
				for _, fields := range f.lines {
					for i, kv := range fields {
						if i > 0 {
							b.WriteByte(' ')
						}
						k, v, ok := strings.Cut(kv, "=")
						x, err := strconv.ParseUint(v, 10, 64)
						switch {
						case !ok || err != nil:
							b.WriteString(kv)
						case k == "rbytes" || k == "wbytes":
							fmt.Fprintf(&b, "%s=%d", k, x+n*f.weight*4096)
						case k == "rios" || k == "wios":
							fmt.Fprintf(&b, "%s=%d", k, x+n*f.weight)
						default:
							b.WriteString(kv)
						}
					}
					b.WriteByte('\n')
				}
				tmp := f.path + ".tmp"
				if os.WriteFile(tmp, []byte(b.String()), 0o644) == nil {
					_ = os.Rename(tmp, f.path)
				}
			}
		}
	}()
}

// routeArgs point a shipped config at the fixture root, scraping every 2 s.
func routeArgs(root string) []string {
	// The latency source reads the host's block layer (BPF), which no fixture root stands in for.
	return []string{telemetryOff, "--set=receivers.disk_health.root_path=" + root, "--set=receivers.disk_health.collection_interval=2s",
		"--set=receivers.disk_health.latency.enabled=false"}
}

// fileCopy is an extra config that adds a file exporter beside the shipped one(s), so the test sees
// what the route was given.
func fileCopy(t *testing.T, exporters, path string) string {
	t.Helper()
	extra := filepath.Join(t.TempDir(), "extra.yaml")
	require.NoError(t, os.WriteFile(extra, []byte(fmt.Sprintf(`exporters:
  file/sent:
    path: %s
service:
  pipelines:
    metrics:
      exporters: [%s, file/sent]
`, path, exporters)), 0o644))
	return "--config=" + extra
}

// identities lists, per metric, the distinct values of the attribute that tells its series apart
// (hw.id for hw.* and disk_health.physical_disk.*, cgroup.path for container.* and
// disk_health.container.*, system.device for system.disk.* and disk_health.disk.*), from the data
// point attributes only.
func identities(exports []pmetric.Metrics) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, md := range exports {
		forEachPoint(md, func(metric string, attrs map[string]any, _ int64) {
			key := identityKey(metric)
			if key == "" {
				return
			}
			if out[metric] == nil {
				out[metric] = map[string]bool{}
			}
			v, _ := attrs[key].(string)
			out[metric][v] = true
		})
	}
	return out
}

// hwMetric, cgroupMetric and diskMetric say which series a metric is per: a disk's hardware (hw.id),
// a cgroup (cgroup.path) or a block device (system.device); semconv's names and ours (disk_health.*).
func hwMetric(m string) bool {
	return strings.HasPrefix(m, "hw.") || strings.HasPrefix(m, "disk_health.physical_disk.") || strings.HasPrefix(m, "disk_health.logical_disk.")
}

func cgroupMetric(m string) bool {
	return strings.HasPrefix(m, "container.") || strings.HasPrefix(m, "disk_health.container.")
}

func diskMetric(m string) bool {
	return strings.HasPrefix(m, "system.disk.") || strings.HasPrefix(m, "disk_health.disk.")
}

func identityKey(metric string) string {
	switch {
	case hwMetric(metric):
		return "hw.id"
	case cgroupMetric(metric):
		return "cgroup.path"
	case diskMetric(metric):
		return "system.device"
	}
	return ""
}

// hasCgroups reports whether an export has per-cgroup points.
func hasCgroups(md pmetric.Metrics) bool {
	found := false
	forEachPoint(md, func(metric string, _ map[string]any, _ int64) {
		found = found || cgroupMetric(metric)
	})
	return found
}

// forEachPoint calls fn for every number and histogram data point with its point attributes and
// timestamp; the resource is not looked at, as a backend that drops it would not.
func forEachPoint(md pmetric.Metrics, fn func(metric string, attrs map[string]any, ts int64)) {
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		if m.Type() == pmetric.MetricTypeExponentialHistogram {
			dps := m.ExponentialHistogram().DataPoints()
			for l := range dps.Len() {
				fn(m.Name(), dps.At(l).Attributes().AsRaw(), int64(dps.At(l).Timestamp()))
			}
			return
		}
		dps := pdatawalk.NumberPoints(m)
		for l := range dps.Len() {
			fn(m.Name(), dps.At(l).Attributes().AsRaw(), int64(dps.At(l).Timestamp()))
		}
	})
}

// checkIdentities: every disk metric has both disks, every per-cgroup metric every cgroup.
func checkIdentities(t *testing.T, ids map[string]map[string]bool) (cgroups int) {
	t.Helper()
	for m, vals := range ids {
		if cgroupMetric(m) && len(vals) > cgroups {
			cgroups = len(vals)
		}
	}
	require.GreaterOrEqual(t, cgroups, 2, "the fixture has several cgroups")
	require.Contains(t, ids, "disk_health.physical_disk.smart.read.status")
	require.Contains(t, ids, "system.disk.io")
	for m, vals := range ids {
		switch {
		case hwMetric(m):
			assert.Equal(t, map[string]bool{"E2E Disk 0_E2E0000": true, "E2E Disk 1_E2E0001": true}, vals, "%s: one series per disk", m)
		case diskMetric(m):
			assert.Equal(t, map[string]bool{"vda": true, "vdb": true}, vals, "%s: one series per disk", m)
		case cgroupMetric(m):
			assert.Len(t, vals, cgroups, "%s: one series per cgroup", m)
		}
	}
	return cgroups
}

// noCollision: no two points of one metric have the same attributes and timestamp once the resource
// is dropped (what the Datadog Agent's OTLP ingest does by default).
func noCollision(t *testing.T, exports []pmetric.Metrics) int {
	t.Helper()
	seen := map[string]int{}
	n := 0
	for _, md := range exports {
		forEachPoint(md, func(metric string, attrs map[string]any, ts int64) {
			a, _ := json.Marshal(attrs) // encoding/json sorts map keys
			seen[fmt.Sprintf("%s %s %d", metric, a, ts)]++
			n++
		})
	}
	var dups []string
	for k, c := range seen {
		if c > 1 {
			dups = append(dups, fmt.Sprintf("%d× %s", c, k))
		}
	}
	sort.Strings(dups)
	assert.Empty(t, dups, "points that merge without their resource")
	return n
}

// TestRoutesKeepSeriesDistinct: with two disks and several cgroups, every shipped route keeps one
// series per disk and per cgroup: the Prometheus endpoint of config/default.yaml (what `make run`
// serves, without resource labels) and of config/prometheus.yaml, scraped by Debian's Prometheus; OTLP
// (config/datadog.yaml over gRPC, config/elastic-otlp.yaml over HTTP) read as a consumer that drops
// every resource attribute; and the Elasticsearch bulk documents of config/elasticsearch.yaml.
func TestRoutesKeepSeriesDistinct(t *testing.T) {
	bin := collectorBinary(t)
	root := routeRoot(t)
	churnCgroups(t, root)

	t.Run("prometheus", func(t *testing.T) {
		prom := testkit.Tool(t, "prometheus", "prometheus")
		for _, cfg := range []string{"default.yaml", "prometheus.yaml"} {
			t.Run(cfg, func(t *testing.T) {
				dir := t.TempDir()
				exporterAddr, healthAddr := freeAddr(t), freeAddr(t)
				t.Setenv("DISKHEALTH_PROMETHEUS_ENDPOINT", exporterAddr)
				t.Setenv("DISKHEALTH_HEALTH_ENDPOINT", healthAddr)
				sent := &exportTail{path: filepath.Join(dir, "sent.json")}
				exporters := "prometheus"
				if cfg == "default.yaml" {
					exporters = "debug, prometheus" // its endpoint is fixed: 127.0.0.1:9464, moved here
				}
				col := startCollector(t, bin, shippedConfig(t, cfg), append(routeArgs(root), fileCopy(t, exporters, sent.path),
					"--set=exporters.prometheus.endpoint="+exporterAddr)...)
				_, api := startPrometheus(t, prom, dir, exporterAddr)

				// Two reads (the gauges), the cgroups and SMART: then what the exporter was given is complete.
				i := col.waitExport(t, sent, 0, 30*time.Second, "disk_health.disk.utilization", func(md pmetric.Metrics) bool {
					return hasMetric(md, "disk_health.disk.utilization")
				})
				col.waitExport(t, sent, i, 30*time.Second, "per-cgroup I/O", hasCgroups)
				want := identities(sent.exports)
				cgroups := checkIdentities(t, want)

				// Every metric's series in Prometheus: as many as disks (by hw_id or system_device) or
				// cgroups (cgroup_path).
				documented := promNames(t, loadDocumentation(t))
				label := func(key string) string { return strings.ReplaceAll(key, ".", "_") }
				require.Eventually(t, func() bool {
					res, err := api.query(`count by (__name__) ({__name__=~"container_.+", job="diskhealth"})`)
					return err == nil && len(res) > 0
				}, 30*time.Second, 500*time.Millisecond, "no container_ series in Prometheus")
				time.Sleep(2 * time.Second) // one more scrape of everything
				checked := 0
				for promName, metric := range documented {
					key := identityKey(metric)
					if key == "" || want[metric] == nil || strings.HasSuffix(promName, "_bucket") {
						continue
					}
					res, err := api.query(fmt.Sprintf(`count(count by (%s) (%s{job="diskhealth"}))`, label(key), promName))
					require.NoError(t, err)
					if len(res) == 0 {
						continue // not translated under this name by this config (histograms)
					}
					n := int(res[0].float(t))
					checked++
					if cgroupMetric(metric) {
						assert.Equal(t, cgroups, n, "%s: one series per cgroup", promName)
					} else {
						assert.Equal(t, 2, n, "%s: one series per disk", promName)
					}
				}
				assert.Greater(t, checked, 10, "metrics checked in Prometheus")
				// The exporter found no two series with the same labels (it would say so, and drop them).
				assert.NotContains(t, col.output.String(), "collected before with the same name and label values")

				// NVMe-style join shape: every I/O series of a disk finds the disk's SMART status by hw_id.
				// These disks have no SMART: their unsupported status went out at the first read only, and
				// the exporter serves it until its metric_expiration (5 minutes).
				res := api.mustQuery(t, `count(system_disk_io_bytes_total{job="diskhealth"} * on (hw_id) group_left() (disk_health_physical_disk_smart_read_status{job="diskhealth", smart_read_status="unsupported"} == 1))`)
				require.Len(t, res, 1)
				assert.Equal(t, 4.0, res[0].float(t), "read and write series of both disks join their SMART status")
			})
		}
	})

	t.Run("otlp without resource", func(t *testing.T) {
		dir := t.TempDir()
		sink := startOTLPSink(t, bin, dir)
		grpcAddr, httpAddr := sink.grpcAddr, sink.httpAddr
		got := map[string]*exportTail{"grpc": {path: sink.grpcPath}, "http": {path: sink.httpPath}}
		t.Setenv("DD_AGENT_OTLP_ENDPOINT", grpcAddr)
		t.Setenv("ELASTIC_OTLP_ENDPOINT", "http://"+httpAddr)
		t.Setenv("ELASTIC_API_KEY", "aWQ6a2V5")
		startCollector(t, bin, shippedConfig(t, "datadog.yaml"), routeArgs(root)...)
		startCollector(t, bin, shippedConfig(t, "elastic-otlp.yaml"), routeArgs(root)...)
		for route, tail := range got {
			t.Run(route, func(t *testing.T) {
				// Three scrapes' worth, the gauges included.
				i := sink.waitExport(t, tail, 0, 30*time.Second, "disk_health.disk.utilization", func(md pmetric.Metrics) bool {
					return hasMetric(md, "disk_health.disk.utilization")
				})
				sink.waitExport(t, tail, i, 30*time.Second, "per-cgroup I/O", hasCgroups)
				time.Sleep(4 * time.Second)
				require.NoError(t, tail.poll())
				checkIdentities(t, identities(tail.exports))
				n := noCollision(t, tail.exports)
				t.Logf("%d points from %d exports, none merging without their resource", n, len(tail.exports))
			})
		}
	})

	t.Run("elasticsearch", func(t *testing.T) {
		es := &fakeES{}
		srv := httptest.NewServer(es)
		t.Cleanup(srv.Close)
		t.Setenv("ELASTICSEARCH_ENDPOINT", srv.URL)
		t.Setenv("ELASTICSEARCH_API_KEY", "aWQ6a2V5")
		col := startCollector(t, bin, shippedConfig(t, "elasticsearch.yaml"), append(routeArgs(root),
			// Flush each scrape at once instead of batching for 90 s.
			"--set=exporters.elasticsearch.sending_queue.batch.flush_timeout=100ms")...)
		var docs []bulkDoc
		require.Eventually(t, func() bool {
			docs, _, _ = es.snapshot()
			n := 0
			for _, d := range docs {
				if ms, _ := d.source["metrics"].(map[string]any); ms["disk_health.disk.utilization"] != nil {
					n++
				}
			}
			return n >= 2
		}, 60*time.Second, 200*time.Millisecond, "no disk_health.disk.utilization documents (collector output: %s)", col.output.String())
		_, _, errs := es.snapshot()
		require.Empty(t, errs)

		// Per metric, the distinct disk / cgroup identities among the documents' attributes.
		ids := map[string]map[string]bool{}
		seen := map[string]int{}
		for _, d := range docs {
			attrs, _ := d.source["attributes"].(map[string]any)
			ms, _ := d.source["metrics"].(map[string]any)
			names := make([]string, 0, len(ms))
			for m := range ms {
				names = append(names, m)
				key := identityKey(m)
				if key == "" {
					continue
				}
				if ids[m] == nil {
					ids[m] = map[string]bool{}
				}
				v, _ := attrs[key].(string)
				ids[m][v] = true
			}
			sort.Strings(names)
			a, _ := json.Marshal(attrs)
			idx := ""
			for _, meta := range d.action {
				idx, _ = meta["_index"].(string)
			}
			// Two documents of one data stream, timestamp and attributes are one time series point
			// twice once the resource is not a dimension.
			seen[fmt.Sprintf("%s %v %s %s", idx, d.source["@timestamp"], a, strings.Join(names, ","))]++
		}
		checkIdentities(t, ids)
		for k, c := range seen {
			assert.Equal(t, 1, c, "documents that merge without their resource: %s", k)
		}
		t.Logf("%d documents", len(docs))
	})
}

// nvmeRoot lays out a root_path with one NVMe controller, nvme0, and two namespaces, nvme0n1 and
// nvme0n2 (/sys/class/nvme/nvme0 and its namespaces' block devices, each with its own WWN).
func nvmeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	link := func(rel, target string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		r, err := filepath.Rel(filepath.Dir(p), filepath.Join(root, target))
		require.NoError(t, err)
		require.NoError(t, os.Symlink(r, p))
	}
	write("proc/stat", testkit.ProcStat(time.Now().Add(-time.Hour)))
	ctrl := "sys/devices/pci0000:00/0000:00:03.0/nvme/nvme0"
	write(ctrl+"/model", "E2E NVMe Ctrl\n")
	write(ctrl+"/serial", "CTRL0001\n")
	link("sys/class/nvme/nvme0", ctrl)
	var ds strings.Builder
	for n := 1; n <= 2; n++ {
		name := fmt.Sprintf("nvme0n%d", n)
		dir := ctrl + "/" + name
		write(dir+"/dev", fmt.Sprintf("259:%d\n", n-1))
		write(dir+"/size", "2097152\n")
		write(dir+"/nsid", fmt.Sprintf("%d\n", n))
		write(dir+"/wwid", fmt.Sprintf("eui.e2e000000000000%d\n", n))
		write(dir+"/queue/rotational", "0\n")
		link(dir+"/device", ctrl)
		link("sys/block/"+name, dir)
		link("sys/class/block/"+name, dir)
		fmt.Fprintf(&ds, " 259       %d %s 500 0 4000 100 200 0 1600 50 0 120 150 0 0 0 0 0 0\n", n-1, name)
	}
	write("proc/diskstats", ds.String())
	return root
}

// TestNVMeJoinInPrometheus: with config/prometheus.yaml, every namespace's I/O joins its controller's
// SMART read status in PromQL through hw_parent, both namespaces, not only the first.
func TestNVMeJoinInPrometheus(t *testing.T) {
	bin := collectorBinary(t)
	prom := testkit.Tool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	exporterAddr, healthAddr := freeAddr(t), freeAddr(t)
	t.Setenv("DISKHEALTH_PROMETHEUS_ENDPOINT", exporterAddr)
	t.Setenv("DISKHEALTH_HEALTH_ENDPOINT", healthAddr)
	startCollector(t, bin, shippedConfig(t, "prometheus.yaml"), routeArgs(nvmeRoot(t))...)
	_, api := startPrometheus(t, prom, dir, exporterAddr)

	// The controller's health, relabelled hw_parent, times each namespace's I/O.
	join := `max by (system_device, hw_parent) (system_disk_io_bytes_total{job="diskhealth"}) * on (hw_parent) group_left (hw_name)
  label_replace(max by (hw_id, hw_name) (disk_health_physical_disk_smart_read_status{job="diskhealth"}), "hw_parent", "$1", "hw_id", "(.+)")`
	var res []promSample
	require.Eventually(t, func() bool {
		var err error
		res, err = api.query(join)
		return err == nil && len(res) == 2
	}, 60*time.Second, 500*time.Millisecond, "the join did not return both namespaces (last: %v)", res)
	got := map[string]string{}
	for _, s := range res {
		got[s.Metric["system_device"]] = s.Metric["hw_name"] + " " + s.Metric["hw_parent"]
	}
	assert.Equal(t, map[string]string{"nvme0n1": "nvme0 eui.e2e0000000000001", "nvme0n2": "nvme0 eui.e2e0000000000001"}, got)
}

// TestNVMePathsInPrometheus: config/essentials.yaml, on a root with nvmesubsys' k6.1-ana tree (one
// namespace, nvme0n1, over three NVMe-oF controllers whose paths are ANA optimized, non-optimized and
// inaccessible), feeds every Grafana panel on NVMe paths in Prometheus, and the path rules' expressions
// (their for: aside) select nothing. When the optimized path's controller starts reconnecting,
// NVMePathLost and NVMeNoOptimizedPath select the namespace with its one live path left and the subsystem
// panel counts a connecting path; when the other live one's does too, NVMeNamespaceNoLivePath selects it
// instead. The thin namespace panel and NVMeNamespaceFilling read the SMART source, which no fixture root
// stands in for (promtool's cases in diskhealth-rules.test.yaml hold that rule).
func TestNVMePathsInPrometheus(t *testing.T) {
	bin := collectorBinary(t)
	prom := testkit.Tool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	root := testkit.NewRoot(t)
	root.CopyTree(filepath.Join("..", "receiver", "diskhealthreceiver", "internal", "nvmesubsys", "testdata", "k6.1-ana"), "", nil)
	root.Write("proc/stat", testkit.ProcStat(time.Now().Add(-time.Hour)))
	root.Write("proc/diskstats", " 259       0 nvme0n1 500 0 4000 100 200 0 1600 50 0 120 150 0 0 0 0 0 0\n")
	// The stack source's filesystem error part reads the mount table; a scrape with a part failing
	// reports no point.
	for _, m := range []string{"proc/1/mountinfo", "proc/self/mountinfo"} {
		root.Write(m, "1 0 259:0 / / rw,relatime - ext4 /dev/nvme0n1 rw\n")
	}
	exporterAddr, healthAddr := freeAddr(t), freeAddr(t)
	t.Setenv("DISKHEALTH_PROMETHEUS_ENDPOINT", exporterAddr)
	t.Setenv("DISKHEALTH_HEALTH_ENDPOINT", healthAddr)
	startCollector(t, bin, shippedConfig(t, "essentials.yaml"), routeArgs(root.Dir)...)
	_, api := startPrometheus(t, prom, dir, exporterAddr)

	nvmePaths := func(expr string) bool {
		return strings.Contains(expr, "disk_health_nvme_namespace_paths_") || strings.Contains(expr, "disk_health_nvme_subsystem_paths")
	}
	panels := map[string]string{}
	grafana, _ := grafanaQueries(t)
	for _, p := range grafana {
		for i, tg := range p.Targets {
			if nvmePaths(tg.Expr) {
				panels[fmt.Sprintf("%q #%d", p.Title, i)] = strings.ReplaceAll(tg.Expr, "$host", ".*")
			}
		}
	}
	require.Len(t, panels, 4, "the path panels' queries: live, optimized, best; paths by controller state")
	rules := map[string]string{}
	for name, expr := range ruleExprs(t) {
		if nvmePaths(expr) {
			rules[name] = expr
		}
	}
	require.Len(t, rules, 3, "NVMePathLost, NVMeNamespaceNoLivePath, NVMeNoOptimizedPath")
	// selected is what a query returns, by namespace or subsystem and controller state.
	selected := func(expr string) map[string]float64 {
		res, err := api.query(expr)
		if err != nil {
			return map[string]float64{"error: " + err.Error(): 0}
		}
		out := map[string]float64{}
		for _, s := range res {
			out[strings.TrimSpace(s.Metric["hw_name"]+" "+s.Metric["disk_health_nvme_controller_state"])] = s.float(t)
		}
		return out
	}
	// firing is what each path rule selects.
	firing := func() map[string]map[string]float64 {
		out := map[string]map[string]float64{}
		for name, expr := range rules {
			out[name] = selected(expr)
		}
		return out
	}
	var empty []string
	require.Eventually(t, func() bool {
		empty = empty[:0]
		for n, q := range panels {
			if res, err := api.query(q); err != nil || len(res) == 0 {
				empty = append(empty, n)
			}
		}
		return len(empty) == 0
	}, 60*time.Second, time.Second, "panels empty in Prometheus: %v", &empty)
	none := map[string]float64{}
	assert.Equal(t, map[string]map[string]float64{"NVMePathLost": none, "NVMeNamespaceNoLivePath": none, "NVMeNoOptimizedPath": none}, firing(),
		"two live paths of two, one optimized")

	// The optimized path's controller reconnects: one live path of the two, none optimized.
	root.Write("sys/devices/virtual/nvme-fabrics/ctl/nvme0/state", "connecting\n")
	connecting := `sum by (hw_name, disk_health_nvme_controller_state) (disk_health_nvme_subsystem_paths{disk_health_nvme_controller_state="connecting"})`
	want := map[string]map[string]float64{"NVMePathLost": {"nvme0n1": 1}, "NVMeNamespaceNoLivePath": none, "NVMeNoOptimizedPath": {"nvme0n1": 1}}
	var got map[string]map[string]float64
	require.Eventually(t, func() bool {
		got = firing()
		return assert.ObjectsAreEqual(want, got) && assert.ObjectsAreEqual(map[string]float64{"nvme-subsys0 connecting": 1}, selected(connecting))
	}, 30*time.Second, time.Second, "one path lost, the optimized one (last: %v)", &got)

	// The non-optimized path's controller too: none left.
	root.Write("sys/devices/virtual/nvme-fabrics/ctl/nvme1/state", "connecting\n")
	want = map[string]map[string]float64{"NVMePathLost": none, "NVMeNamespaceNoLivePath": {"nvme0n1": 0}, "NVMeNoOptimizedPath": none}
	require.Eventually(t, func() bool {
		got = firing()
		return assert.ObjectsAreEqual(want, got) && assert.ObjectsAreEqual(map[string]float64{"nvme-subsys0 connecting": 2}, selected(connecting))
	}, 30*time.Second, time.Second, "both live paths lost (last: %v)", &got)
}

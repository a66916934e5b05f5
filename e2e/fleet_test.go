package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

var vmagent = goPeer{"vmagent", "github.com/VictoriaMetrics/VictoriaMetrics/app/vmagent", "v1.151.0"}

// gpuNodeRoot lays out testkit.GPUNode, whose cgroups do I/O until the test ends.
func gpuNodeRoot(t *testing.T) string {
	t.Helper()
	r, busy := testkit.GPUNode(t)
	// The busy pods (the training jobs) read a thousand times what the others do, the most from the
	// start, too: the cgroups source's top_n (10 by default) picks the same ones on every host and
	// every scrape, however its reads and the steps below interleave.
	churnCgroupsBy(t, r.Dir, func(path string) uint64 {
		for _, pod := range busy {
			if strings.HasPrefix(path, r.Path(pod)+"/") {
				return 1000
			}
		}
		return 1
	})
	return r.Dir
}

// startVMAgent runs vmagent accepting remote write on a free port and sharding it over urls by
// the labels given (every label when none), keeping what it has not sent in dir.
func startVMAgent(t *testing.T, dir string, shardLabels []string, urls ...string) (*collector, string) {
	t.Helper()
	addr := freeAddr(t)
	args := []string{"-httpListenAddr=" + addr, "-remoteWrite.tmpDataPath=" + dir, "-loggerLevel=WARN", "-remoteWrite.shardByURL"}
	for _, u := range urls {
		args = append(args, "-remoteWrite.url="+u)
	}
	if len(shardLabels) > 0 {
		args = append(args, "-remoteWrite.shardByURL.labels="+strings.Join(shardLabels, ","))
	}
	p := startPeer(t, vmagent.path(t), args...)
	waitReady(t, p, "http://"+addr+"/health", "vmagent")
	return p, addr
}

// requireRunning fails the test, with the collector's output, if any of cols has exited.
func requireRunning(t *testing.T, cols []*collector) {
	t.Helper()
	for _, c := range cols {
		select {
		case <-c.exited:
			t.Fatalf("a collector exited: %v\n%s", c.waitErr, c.output.String())
		default:
		}
	}
}

// procUsage is a process's CPU time so far and its resident memory now, from /proc.
func procUsage(t *testing.T, pid int) (cpu time.Duration, rss int64) {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	// Fields after the command name, which is in parentheses and may hold spaces: utime and stime are
	// the 12th and 13th of them, in USER_HZ (100 on Linux).
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	require.NoError(t, err1)
	require.NoError(t, err2)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			rss = kb << 10
		}
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, rss
}

// promCounter sums a metric of a VictoriaMetrics component's own /metrics over its label sets that
// contain labels (all of them when it is empty).
func promCounter(t *testing.T, base, name, labels string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	sum := 0.0
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		if !strings.Contains(m[1], labels) {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		sum += v
	}
	return sum
}

// seriesByHost lists the series match selects that VictoriaMetrics has seen since a minute before
// since, by host_name, each as its key without the host's labels.
func (v vmServer) seriesByHost(t *testing.T, match string, since time.Time) map[string]map[string]bool {
	t.Helper()
	v.flush(t)
	data, err := v.get("/api/v1/series", url.Values{"match[]": {match}, "start": {strconv.FormatInt(since.Unix()-60, 10)}})
	require.NoError(t, err)
	var res []map[string]string
	require.NoError(t, json.Unmarshal(data, &res))
	out := map[string]map[string]bool{}
	for _, m := range res {
		h := m["host_name"]
		if out[h] == nil {
			out[h] = map[string]bool{}
		}
		out[h][hostless(m)] = true
	}
	return out
}

// byMetric counts series keys by metric name.
func byMetric(keys map[string]bool) map[string]int {
	out := map[string]int{}
	for k := range keys {
		name, _, _ := strings.Cut(k, " ")
		out[name]++
	}
	return out
}

// hostless is a series' key without the host's labels: what two hosts on the same root share.
func hostless(m map[string]string) string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		if k != "host_name" && k != "host_id" {
			c[k] = v
		}
	}
	return seriesKey(c)
}

// directCopy is an extra config that gives the metrics pipeline a second prometheus_remote_write
// exporter, the shipped one's settings with another endpoint and write-ahead log: what one collector
// sent, written straight into a backend of its own.
func directCopy(t *testing.T, endpoint string) string {
	t.Helper()
	var cfg struct {
		Exporters map[string]map[string]any `yaml:"exporters"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(shippedConfig(t, "prometheus-remote-write.yaml")), &cfg))
	exp := cfg.Exporters["prometheus_remote_write"]
	require.NotNil(t, exp)
	exp["endpoint"] = endpoint
	exp["wal"].(map[string]any)["directory"] = filepath.Join(t.TempDir(), "wal-direct")
	out, err := yaml.Marshal(map[string]any{
		"exporters": map[string]any{"prometheus_remote_write/direct": exp},
		"service": map[string]any{"pipelines": map[string]any{"metrics": map[string]any{
			"exporters": []string{"prometheus_remote_write", "prometheus_remote_write/direct"}}}},
	})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "direct.yaml")
	require.NoError(t, os.WriteFile(path, out, 0o644))
	return "--config=" + path
}

// TestFleetThroughVMAgentShards: a fleet in miniature. fleetSize collectors, each its own host
// (OTEL_RESOURCE_ATTRIBUTES: host.name, host.id) on a GPU-node-shaped fixture root, push with
// config/prometheus-remote-write.yaml unchanged into one vmagent that shards by host over two
// VictoriaMetrics single nodes (-remoteWrite.shardByURL, -remoteWrite.shardByURL.labels=host_name: a
// host's series meet on one node, so the dashboard's joins work there). The first collector also
// writes straight into a third node. Then: every host's series are on exactly one node, each the same
// set the direct copy holds; no sample is stored twice; the first host's every sample reaches its shard;
// and every panel query the fixture feeds returns data for every host on its node. The fleet's cost
// (series, samples/s, CPU and memory of each part, bytes per sample) is logged for BENCHMARKS.md.
func TestFleetThroughVMAgentShards(t *testing.T) {
	const fleetSize = 20
	const interval = 5 * time.Second
	bin := collectorBinary(t)
	dir := t.TempDir()
	root := gpuNodeRoot(t)
	nodes := []vmServer{startVictoriaMetrics(t, filepath.Join(dir, "vm0"), ""), startVictoriaMetrics(t, filepath.Join(dir, "vm1"), "")}
	direct := startVictoriaMetrics(t, filepath.Join(dir, "direct"), "")
	agent, agentAddr := startVMAgent(t, filepath.Join(dir, "vmagent"), []string{"host_name"},
		"http://"+nodes[0].addr+"/api/v1/write", "http://"+nodes[1].addr+"/api/v1/write")

	host := func(i int) string { return fmt.Sprintf("gpu-node-%02d", i) }
	start := time.Now()
	cols := make([]*collector, fleetSize)
	for i := range cols {
		env := []string{
			"OTEL_RESOURCE_ATTRIBUTES=" + fmt.Sprintf("host.name=%s,host.id=%032x", host(i), i+1),
			"DISKHEALTH_REMOTE_WRITE_ENDPOINT=http://" + agentAddr + "/api/v1/write",
			"DISKHEALTH_STATE_DIR=" + filepath.Join(dir, "state", host(i)),
		}
		// routeArgs' collection every 2 s, slowed to interval: the last --set wins.
		args := append(routeArgs(root), "--set=receivers.disk_health.collection_interval="+interval.String())
		if i == 0 {
			args = append(args, directCopy(t, "http://"+direct.addr+"/api/v1/write"))
		}
		cols[i] = startCollectorEnv(t, bin, env, shippedConfig(t, "prometheus-remote-write.yaml"), args...)
	}
	started := time.Since(start)

	// disk_health.source.status is left out: a source degraded by one slow scrape on a loaded machine
	// turns its state label, a new series for that host only, and the hosts' sets would never match.
	seriesOn := func(v vmServer) map[string]map[string]bool {
		return v.seriesByHost(t, `{host_name=~"gpu-node-.+",__name__!="disk_health_source_status"}`, start)
	}
	// Steady state: every host has sent its gauges (second collection on) and the direct copy has the
	// first host's whole set, unchanged over a collection.
	var want map[string]bool
	deadline := time.Now().Add(3 * time.Minute)
	for {
		requireRunning(t, cols)
		d := seriesOn(direct)[host(0)]
		complete := 0
		if len(d) > 0 && len(d) == len(want) {
			for _, v := range nodes {
				for _, set := range seriesOn(v) {
					if len(set) == len(want) {
						complete++
					}
				}
			}
		}
		want = d
		if complete == fleetSize {
			break
		}
		require.False(t, time.Now().After(deadline), "not every host's series arrived within 3 minutes (%d complete)", complete)
		time.Sleep(interval)
	}
	t.Logf("%d collectors started in %v; all hosts' series in after %v", fleetSize, started.Round(time.Millisecond), time.Since(start).Round(time.Second))

	// Cost: usage over a window of steady state.
	type usage struct {
		cpu time.Duration
		rss int64
	}
	sample := func() (map[string]usage, map[string]float64) {
		u := map[string]usage{}
		add := func(name string, p *collector) {
			cpu, rss := procUsage(t, p.cmd.Process.Pid)
			x := u[name]
			x.cpu += cpu
			x.rss += rss
			u[name] = x
		}
		for _, c := range cols[1:] {
			add("collector", c)
		}
		add("vmagent", agent)
		for _, v := range nodes {
			add("victoria-metrics", v.collector)
		}
		counters := map[string]float64{
			"rows": promCounter(t, nodes[0].base, "vm_rows_inserted_total", "") + promCounter(t, nodes[1].base, "vm_rows_inserted_total", ""),
			// What the collectors' requests took on vmagent's HTTP listener: snappy-compressed protobuf
			// bodies and their headers.
			"wire": promCounter(t, "http://"+agentAddr, "vm_tcplistener_read_bytes_total", `name="http"`),
			"sent": promCounter(t, "http://"+agentAddr, "vmagent_remotewrite_bytes_sent_total", ""),
		}
		return u, counters
	}
	const window = 30 * time.Second
	u0, c0 := sample()
	time.Sleep(window)
	u1, c1 := sample()

	// Every host's series are on one node only, the set the direct copy holds; both nodes are used.
	on := []map[string]map[string]bool{seriesOn(nodes[0]), seriesOn(nodes[1])}
	nodeOf := map[string]int{}
	perNode := [2]int{}
	for i := range fleetSize {
		h := host(i)
		a, b := on[0][h], on[1][h]
		require.False(t, len(a) > 0 && len(b) > 0, "%s: series on both nodes (%d and %d)", h, len(a), len(b))
		n := 0
		if len(b) > 0 {
			n = 1
		}
		nodeOf[h] = n
		perNode[n]++
		got := on[n][h]
		var missing, extra []string
		for k := range want {
			if !got[k] {
				missing = append(missing, k)
			}
		}
		for k := range got {
			if !want[k] {
				extra = append(extra, k)
			}
		}
		sort.Strings(missing)
		sort.Strings(extra)
		require.Empty(t, missing, "%s: series the collector sent that its shard lacks", h)
		require.Empty(t, extra, "%s: series on its shard the collector did not send", h)
	}
	assert.NotZero(t, perNode[0], "no host on node 0")
	assert.NotZero(t, perNode[1], "no host on node 1")

	// The first host's every sample that its direct copy holds reaches its shard; no sample is stored
	// twice, across both nodes. The shard's route has a hop more (vmagent), which load can hold up for any
	// time: the shards are read again until they have what the direct copy had, within two minutes,
	// instead of taking samples older than some age as delivered.
	ref, err := direct.export(`{host_name=~"gpu-node-.+"}`)
	require.NoError(t, err)
	var samples map[string]map[int64]int
	var total, compared int
	var lost []string
	for deadline := time.Now().Add(2 * time.Minute); ; {
		samples, total = map[string]map[int64]int{}, 0
		for _, v := range nodes {
			series, err := v.export(`{host_name=~"gpu-node-.+"}`)
			require.NoError(t, err)
			for _, s := range series {
				k := s.Metric["host_name"] + " " + hostless(s.Metric)
				if samples[k] == nil {
					samples[k] = map[int64]int{}
				}
				for _, ts := range s.Timestamps {
					samples[k][ts]++
					total++
				}
			}
		}
		lost, compared = nil, 0
		for _, s := range ref {
			k := s.Metric["host_name"] + " " + hostless(s.Metric)
			for _, ts := range s.Timestamps {
				compared++
				if samples[k][ts] == 0 {
					lost = append(lost, fmt.Sprintf("%s @%d", k, ts))
				}
			}
		}
		if len(lost) == 0 || time.Now().After(deadline) {
			break
		}
		requireRunning(t, cols)
		time.Sleep(interval)
	}
	var twice []string
	for k, stamps := range samples {
		for ts, n := range stamps {
			if n > 1 {
				twice = append(twice, fmt.Sprintf("%s @%d ×%d", k, ts, n))
			}
		}
	}
	sort.Strings(twice)
	require.Empty(t, twice, "samples stored more than once")
	sort.Strings(lost)
	require.Empty(t, lost, "samples of %s in the direct copy but on no shard within 2 minutes", host(0))
	require.NotZero(t, compared)

	// The dashboard, host by host on its node: every panel the fixture feeds has data.
	var empty []string
	panels := 0
	for i := range fleetSize {
		h := host(i)
		for name, q := range engineQueries(t, h) {
			if !strings.HasPrefix(name, "panel ") || !healthyHostFeeds(q) || strings.Contains(q, "disk_health_disk_operation_duration_seconds") {
				continue
			}
			panels++
			res, err := nodes[nodeOf[h]].query(q)
			require.NoError(t, err, q)
			if len(res) == 0 {
				empty = append(empty, h+": "+name)
			}
		}
	}
	sort.Strings(empty)
	require.Empty(t, empty, "dashboard panels without data for a host")

	// The numbers for BENCHMARKS.md ("What a fleet costs").
	secs := window.Seconds()
	perHost := len(want)
	t.Logf("series of one host, by metric: %v", byMetric(want))
	t.Logf("fleet: %d hosts, %d series each (%d in all), hosts per node %v, %d samples checked unique, %d of %s compared with the direct copy, %d panel queries with data",
		fleetSize, perHost, perHost*fleetSize, perNode, total, compared, host(0), panels)
	t.Logf("ingest: %.0f samples/s stored (%.1f per host; %d series / %v interval = %.1f), wire into vmagent %.2f bytes/sample, vmagent to the nodes %.2f bytes/sample",
		(c1["rows"]-c0["rows"])/secs, (c1["rows"]-c0["rows"])/secs/fleetSize, perHost, interval, float64(perHost)/interval.Seconds(),
		(c1["wire"]-c0["wire"])/(c1["rows"]-c0["rows"]), (c1["sent"]-c0["sent"])/(c1["rows"]-c0["rows"]))
	for _, name := range []string{"collector", "vmagent", "victoria-metrics"} {
		n := 1
		switch name {
		case "collector":
			n = fleetSize - 1
		case "victoria-metrics":
			n = 2
		}
		cpu := (u1[name].cpu - u0[name].cpu).Seconds() / secs / float64(n)
		t.Logf("%s (each of %d): CPU %.2f %% of a core, RSS %.1f MiB", name, n, 100*cpu, float64(u1[name].rss)/float64(n)/(1<<20))
	}
	for i, v := range nodes {
		v.flush(t)
		size := promCounter(t, v.base, "vm_data_size_bytes", `type="storage/`)
		rows := promCounter(t, v.base, "vm_rows", `type="storage/`)
		t.Logf("node %d: %.0f rows, %.0f bytes of data, %.2f bytes per sample on disk (small parts: an upper bound)", i, rows, size, size/rows)
	}
}

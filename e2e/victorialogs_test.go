package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
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

	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// vlServer is a single-node VictoriaLogs, built by goPeer, on a loopback port.
type vlServer struct {
	*collector
	addr, dir string
}

// startVictoriaLogs runs VictoriaLogs on its data in dir at addr ("" for a free port).
func startVictoriaLogs(t *testing.T, dir, addr string) vlServer {
	t.Helper()
	bin := victoriaLogs.path(t)
	if addr == "" {
		addr = freeAddr(t)
	}
	p := startPeer(t, bin, "-httpListenAddr="+addr, "-storageDataPath="+dir, "-loggerLevel=WARN")
	waitReady(t, p, "http://"+addr+"/health", "VictoriaLogs")
	return vlServer{collector: p, addr: addr, dir: dir}
}

// esEndpoint is the URL the elasticsearch exporter takes for VictoriaLogs' Elasticsearch bulk API.
func (v vlServer) esEndpoint() string { return "http://" + v.addr + "/insert/elasticsearch" }

// query runs a LogsQL query over everything stored and returns the documents, fields flattened
// with dots as VictoriaLogs stores them.
func (v vlServer) query(q string) ([]map[string]string, error) {
	// What was just ingested becomes searchable within a second (VictoriaLogs' in-memory parts).
	resp, err := http.PostForm("http://"+v.addr+"/select/logsql/query", url.Values{"query": {q}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("LogsQL %q: HTTP %d: %s", q, resp.StatusCode, body)
	}
	var out []map[string]string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var doc map[string]string
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			return nil, err
		}
		out = append(out, doc)
	}
	return out, sc.Err()
}

// TestElasticsearchIntoVictoriaLogs runs config/elasticsearch.yaml unchanged against VictoriaLogs'
// Elasticsearch bulk API: every metric the collector exported is queried back with LogsQL, with its
// attributes and host.
// (What VictoriaLogs ignores, the data stream, its templates and the API key, TestElasticsearchExporter
// checks against a stub.)
func TestElasticsearchIntoVictoriaLogs(t *testing.T) {
	bin := collectorBinary(t)
	dir := t.TempDir()
	vl := startVictoriaLogs(t, filepath.Join(dir, "vl"), "")
	t.Setenv("ELASTICSEARCH_ENDPOINT", vl.esEndpoint())
	t.Setenv("ELASTICSEARCH_API_KEY", "aWQ6a2V5")
	sent := filepath.Join(dir, "sent.json")
	extra := filepath.Join(dir, "extra.yaml")
	require.NoError(t, os.WriteFile(extra, []byte(fmt.Sprintf(`exporters:
  file/sent:
    path: %s
service:
  pipelines:
    metrics:
      exporters: [elasticsearch, file/sent]
`, sent)), 0o644))
	// The fixture root's cgroups and two disks, so the per-cgroup metrics are in the comparison too.
	root := routeRoot(t)
	churnCgroups(t, root)
	col := startCollector(t, bin, shippedConfig(t, "elasticsearch.yaml"), append([]string{"--config=" + extra}, routeArgs(root)...)...)
	tail := &exportTail{path: sent}
	// Gauges need a second read; the exporter flushes every 10 s.
	col.waitExport(t, tail, 0, 30*time.Second, "disk_health.disk.utilization", func(md pmetric.Metrics) bool {
		found := false
		pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
			found = found || m.Name() == "disk_health.disk.utilization"
		})
		return found
	})
	hostName, _ := hostIdentity(t)

	// Every metric of the first exports, with its identity, is queried back.
	require.NoError(t, tail.poll())
	type want struct{ metric, identity string }
	wanted := map[want]bool{}
	for _, md := range tail.exports[:2] {
		forEachPoint(md, func(metric string, attrs map[string]any, _ int64) {
			wanted[want{metric, pointIdentity(attrs)}] = true
		})
	}
	var missing []string
	deadline := time.Now().Add(45 * time.Second)
	for {
		docs, err := vl.query(`*`)
		require.NoError(t, err)
		have := map[want]bool{}
		for _, d := range docs {
			if !isMetricDoc(d) {
				continue
			}
			assert.Equal(t, hostName, d["resource.attributes.host.name"])
			attrs := map[string]any{}
			for k, v := range d {
				if a, ok := strings.CutPrefix(k, "attributes."); ok {
					attrs[a] = v
				}
			}
			for k := range d {
				if m, ok := strings.CutPrefix(k, "metrics."); ok {
					have[want{m, pointIdentity(attrs)}] = true
				}
			}
		}
		missing = missing[:0]
		for w := range wanted {
			if !have[w] {
				missing = append(missing, w.metric+" "+w.identity)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	sort.Strings(missing)
	require.Empty(t, missing, "exported but not in VictoriaLogs")
	t.Logf("%d metric/identity pairs queried back with LogsQL", len(wanted))
}

// isMetricDoc says whether a document holds metrics (the others are the logs pipeline's events).
func isMetricDoc(d map[string]string) bool {
	for k := range d {
		if strings.HasPrefix(k, "metrics.") {
			return true
		}
	}
	return false
}

// pointIdentity is a data point's identity as the ES documents keep it: its attributes, as strings.
func pointIdentity(attrs map[string]any) string {
	keys := make([]string, 0, len(attrs))
	for k, v := range attrs {
		keys = append(keys, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// TestElasticsearchOutageRestartVictoriaLogs: config/elasticsearch.yaml unchanged (bulk indexer
// retries, persistent queue in file_storage) into VictoriaLogs' Elasticsearch bulk API through an
// outage with a collector restart in the middle: every collection's document arrives, exactly once.
// While the backend is down the exporter (v0.157.0) does not finish a shutdown: its bulk indexer keeps
// retrying the request it holds (retry.max_retries), so the collector runs on after SIGTERM until it is
// killed; what it had not delivered must still be in the persistent queue.
func TestElasticsearchOutageRestartVictoriaLogs(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	var vl vlServer
	t.Setenv("ELASTICSEARCH_ENDPOINT", "http://"+addr+"/insert/elasticsearch")
	t.Setenv("ELASTICSEARCH_API_KEY", "aWQ6a2V5")
	outageRestart(t, outageRoute{
		config: "elasticsearch.yaml", exporter: "elasticsearch", killedOnStop: true,
		up:   func() { vl = startVictoriaLogs(t, filepath.Join(dir, "vl"), addr) },
		down: func() { vl.terminate(t, "VictoriaLogs") },
		stamps: func(disk string) (map[int64]int, error) {
			docs, err := vl.query(fmt.Sprintf(`attributes.system.device:=%q attributes.disk.io.direction:=read metrics.system.disk.io:*`, disk))
			if err != nil {
				return nil, err
			}
			// The otel mapping writes @timestamp in epoch ms, which VictoriaLogs keeps as a field: its own
			// _time is when the document arrived.
			out := map[int64]int{}
			for _, d := range docs {
				ms, err := strconv.ParseInt(d["@timestamp"], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("@timestamp %q: %w", d["@timestamp"], err)
				}
				out[ms]++
			}
			return out, nil
		},
	})
}

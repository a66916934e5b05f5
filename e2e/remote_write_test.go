package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// promSeries is one series of a range-vector (matrix) result.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// sampleTimes returns the series' sample timestamps (seconds) and values (as Prometheus prints them).
func (s promSeries) samples(t *testing.T) (ts []float64, vals []string) {
	t.Helper()
	for _, v := range s.Values {
		f, ok := v[0].(float64)
		require.True(t, ok, "timestamp %v", v[0])
		str, ok := v[1].(string)
		require.True(t, ok, "value %v", v[1])
		ts, vals = append(ts, f), append(vals, str)
	}
	return ts, vals
}

// queryMatrix evaluates a range-vector selector (expr ending in [d]) at time at.
func (p promAPI) queryMatrix(expr string, at time.Time) ([]promSeries, error) {
	data, err := p.get("/api/v1/query", url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}})
	if err != nil {
		return nil, err
	}
	var res struct {
		ResultType string       `json:"resultType"`
		Result     []promSeries `json:"result"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, err
	}
	if res.ResultType != "matrix" {
		return nil, fmt.Errorf("%s: result type %s", expr, res.ResultType)
	}
	return res.Result, nil
}

// seriesKey is a series' name and labels without the ones a scrape adds (job, instance).
func seriesKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "job" && k != "instance" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(m["__name__"])
	for _, k := range keys {
		if k != "__name__" {
			fmt.Fprintf(&b, " %s=%q", k, m[k])
		}
	}
	return b.String()
}

// sameAsScraped compares a pushed route with the scrape route: every scraped series (the query scraped
// on sAPI) is a pushed one (pushed, a selector, on pAPI) and the other way round, and the scraped value is
// one that was pushed in the last minute. normalize (if not nil) turns a pushed series' labels into the
// scrape route's where the route names them differently, or says why it cannot. It retries
// for four collections, as the last collection may still be on its way, and returns what differs and the
// two series counts.
func sameAsScraped(t *testing.T, interval time.Duration, sAPI promAPI, scraped string, pAPI promAPI, pushed string,
	normalize func(map[string]string) error) (problems []string, nScraped, nPushed int) {
	t.Helper()
	deadline := time.Now().Add(4 * interval)
	for {
		problems = problems[:0]
		now := time.Now()
		sc := sAPI.mustQuery(t, scraped)
		pm, err := pAPI.queryMatrix(pushed+"[1m]", now)
		require.NoError(t, err)
		pushedVals := map[string]map[string]bool{}
		for _, s := range pm {
			_, vals := s.samples(t)
			set := map[string]bool{}
			for _, v := range vals {
				set[v] = true
			}
			if normalize != nil {
				if err := normalize(s.Metric); err != nil {
					problems = append(problems, fmt.Sprintf("pushed %s: %v", seriesKey(s.Metric), err))
				}
			}
			pushedVals[seriesKey(s.Metric)] = set
		}
		scrapedKeys := map[string]bool{}
		for _, s := range sc {
			k := seriesKey(s.Metric)
			scrapedKeys[k] = true
			vals, ok := pushedVals[k]
			if !ok {
				problems = append(problems, "not pushed: "+k)
			} else if v := s.Value[1].(string); !vals[v] {
				problems = append(problems, fmt.Sprintf("scraped %s = %s, never pushed", k, v))
			}
		}
		for k := range pushedVals {
			if !scrapedKeys[k] {
				problems = append(problems, "pushed only: "+k)
			}
		}
		nScraped, nPushed = len(sc), len(pushedVals)
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	sort.Strings(problems)
	if len(problems) > 20 {
		problems = append(problems[:20], fmt.Sprintf("... %d more", len(problems)-20))
	}
	return problems, nScraped, nPushed
}

// startRemoteWriteProm runs Debian's Prometheus with its remote-write receiver on addr, scraping the
// collector's Prometheus endpoint every second (job diskhealth), on the TSDB in dir (kept across restarts).
func startRemoteWriteProm(t *testing.T, prom, dir, addr, scrapeTarget string) *collector {
	t.Helper()
	cfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: diskhealth
    static_configs:
      - targets: [%q]
`, scrapeTarget)), 0o644))
	p := startPeer(t, prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr, "--web.enable-remote-write-receiver",
		// the latency histograms arrive as native histograms, which a receiver must accept
		"--enable-feature=native-histograms")
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("Prometheus exited: %v\n%s", p.waitErr, p.output.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus not ready within 60 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestPrometheusRemoteWrite runs the built collector with config/prometheus-remote-write.yaml, pushing
// into Debian's Prometheus (--web.enable-remote-write-receiver), and with config/prometheus.yaml's
// endpoint in the same pipeline, scraped by the same Prometheus. Both routes carry the same series
// (names and labels, job/instance aside) and the same values. Then Prometheus is stopped for a while and
// started again on the same TSDB: the exporter's retries fill the outage, every collection is there.
func TestPrometheusRemoteWrite(t *testing.T) {
	bin := collectorBinary(t)
	prom := testkit.Tool(t, "prometheus", "prometheus")
	const interval = 5 * time.Second

	exporterAddr, healthAddr, promAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	t.Setenv("DISKHEALTH_PROMETHEUS_ENDPOINT", exporterAddr)
	t.Setenv("DISKHEALTH_HEALTH_ENDPOINT", healthAddr)
	t.Setenv("DISKHEALTH_REMOTE_WRITE_ENDPOINT", "http://"+promAddr+"/api/v1/write")
	rwConfig, err := filepath.Abs(filepath.Join("..", "config", "prometheus-remote-write.yaml"))
	require.NoError(t, err)

	dir := t.TempDir()
	server := startRemoteWriteProm(t, prom, dir, promAddr, exporterAddr)
	// prometheus.yaml, then prometheus-remote-write.yaml merged over it; both exporters in the pipeline.
	col := startCollector(t, bin, shippedConfig(t, "prometheus.yaml"), "--config="+rwConfig, telemetryOff,
		"--set=receivers.disk_health.collection_interval="+interval.String(),
		"--set=service.pipelines.metrics.exporters=[prometheus,prometheus_remote_write]")
	api := promAPI{base: "http://" + promAddr}
	// Float series only: the latency histograms are native histograms on both routes (compared with
	// fio and /proc/diskstats by the latency tests), whose samples this comparison does not decode.
	const ours = `__name__=~"(system|hw|container|disk_health)_.+",__name__!~".+_duration_seconds"`
	scraped, pushed := `{job="diskhealth",`+ours+`}`, `{job="",`+ours+`}`

	// Wait for the gauges (second read) on both routes.
	require.Eventually(t, func() bool {
		a, errA := api.query(`disk_health_disk_utilization_ratio{job="diskhealth"}`)
		b, errB := api.query(`disk_health_disk_utilization_ratio{job=""}`)
		select {
		case <-col.exited:
			t.Fatalf("the collector exited: %v", col.waitErr)
		default:
		}
		return errA == nil && errB == nil && len(a) > 0 && len(b) > 0
	}, 60*time.Second, 500*time.Millisecond, "disk_health_disk_utilization_ratio did not arrive on both routes")

	t.Run("same series and values as the scrape route", func(t *testing.T) {
		// The scraped value of every series is one the collector also pushed (the last collection may
		// still be on its way: retry for a few collections).
		problems, nScraped, nPushed := sameAsScraped(t, interval, api, scraped, api, pushed, nil)
		require.Empty(t, problems, "remote write and scrape differ (%d scraped, %d pushed series)", nScraped, nPushed)
		require.Equal(t, nScraped, nPushed)
		t.Logf("%d series, identical names, labels and values on both routes", nScraped)

		// What was compared carries the identities (host, device, disk) as labels.
		hostName, _ := hostIdentity(t)
		io := api.mustQuery(t, `system_disk_io_bytes_total{job=""}`)
		require.NotEmpty(t, io)
		devices := map[string]bool{}
		for _, s := range io {
			assert.Equal(t, hostName, s.Metric["host_name"])
			assert.NotEmpty(t, s.Metric["disk_health_disk_major_minor"])
			devices[s.Metric["system_device"]] = true
		}
		for d := range wholeDisks(t) {
			assert.True(t, devices[d], "%s: no pushed I/O series", d)
		}
		assert.NotEmpty(t, api.mustQuery(t, `system_filesystem_limit_bytes{job="",system_filesystem_mountpoint="/"}`))
	})

	t.Run("a Prometheus restart loses no sample", func(t *testing.T) {
		// One pushed counter series: a sample per collection.
		series := `system_disk_io_bytes_total{job="",disk_io_direction="read"}`
		before := api.mustQuery(t, series)
		require.NotEmpty(t, before)
		sel := fmt.Sprintf(`system_disk_io_bytes_total{job="",disk_io_direction="read",system_device=%q}`, before[0].Metric["system_device"])

		down := time.Now()
		require.NoError(t, server.cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-server.exited:
		case <-time.After(30 * time.Second):
			t.Fatal("Prometheus did not stop within 30 s")
		}
		const outage = 25 * time.Second // five collections; far inside retry_on_failure.max_elapsed_time
		time.Sleep(outage)
		server = startRemoteWriteProm(t, prom, dir, promAddr, exporterAddr)
		up := time.Now()
		t.Logf("Prometheus down for %v", up.Sub(down).Round(100*time.Millisecond))

		// The retried batches land within max_interval (10 s) of the restart, then the backlog drains.
		var ts []float64
		window := down.Add(-3 * interval)
		deadline := time.Now().Add(60 * time.Second)
		for {
			at := time.Now()
			m, err := api.queryMatrix(fmt.Sprintf("%s[%ds]", sel, int(at.Sub(window).Seconds())+1), at)
			require.NoError(t, err)
			ts = nil
			if len(m) == 1 {
				ts, _ = m[0].samples(t)
			}
			if len(ts) > 0 && ts[len(ts)-1] > float64(up.Unix())+interval.Seconds() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no pushed sample after the restart within 60 s (%d samples since %v)", len(ts), window)
			}
			time.Sleep(time.Second)
		}
		// A sample every collection: no gap longer than 1.5 intervals across the outage.
		require.NotEmpty(t, ts)
		assert.Less(t, ts[0], float64(down.Unix()), "the window starts before the outage")
		inOutage := 0
		for i, x := range ts {
			if x > float64(down.Unix()) && x < float64(up.Unix()) {
				inOutage++
			}
			if i > 0 {
				assert.LessOrEqual(t, x-ts[i-1], 1.5*interval.Seconds(), "gap between samples at %.3f and %.3f", ts[i-1], x)
			}
		}
		want := int(up.Sub(down)/interval) - 1
		assert.GreaterOrEqual(t, inOutage, want, "pushed samples timestamped inside the outage")
		// The scrape route, for contrast, has nothing for the time Prometheus was down.
		sm, err := api.queryMatrix(fmt.Sprintf(`system_disk_io_bytes_total{job="diskhealth",disk_io_direction="read",system_device=%q}[%ds]`,
			before[0].Metric["system_device"], int(up.Sub(down).Seconds())-2), up.Add(-time.Second))
		require.NoError(t, err)
		scrapedInOutage := 0
		for _, s := range sm {
			st, _ := s.samples(t)
			scrapedInOutage += len(st)
		}
		assert.Zero(t, scrapedInOutage, "scraped samples while Prometheus was down")
		t.Logf("%d pushed samples over %.0f s, %d of them collected while Prometheus was down (%d expected at least); scrape route: %d",
			len(ts), ts[len(ts)-1]-ts[0], inOutage, want, scrapedInOutage)
	})
}

// TestPrometheusRemoteWriteOutageRestart: config/prometheus-remote-write.yaml (its write-ahead log under
// DISKHEALTH_STATE_DIR) into Debian's Prometheus through an outage with a collector restart in the
// middle: every collection of both runs is there. (Prometheus keeps one sample per series and time, so
// a sample sent twice cannot show here; VictoriaMetrics' export can: TestRemoteWriteOutageRestartVictoriaMetrics.)
func TestPrometheusRemoteWriteOutageRestart(t *testing.T) {
	prom := testkit.Tool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	addr := freeAddr(t)
	t.Setenv("DISKHEALTH_REMOTE_WRITE_ENDPOINT", "http://"+addr+"/api/v1/write")
	api := promAPI{base: "http://" + addr}
	var server *collector
	var since time.Time
	outageRestart(t, outageRoute{
		config: "prometheus-remote-write.yaml", exporter: "prometheus_remote_write",
		up: func() {
			if since.IsZero() {
				since = time.Now()
			}
			server = startRemoteWriteProm(t, prom, dir, addr, "127.0.0.1:1")
		},
		down: func() { server.terminate(t, "Prometheus") },
		stamps: func(disk string) (map[int64]int, error) {
			at := time.Now()
			m, err := api.queryMatrix(fmt.Sprintf(`system_disk_io_bytes_total{disk_io_direction="read",system_device=%q}[%ds]`,
				disk, int(at.Sub(since).Seconds())+60), at)
			if err != nil {
				return nil, err
			}
			out := map[int64]int{}
			for _, s := range m {
				for _, v := range s.Values {
					if f, ok := v[0].(float64); ok {
						out[int64(f*1000+0.5)]++
					}
				}
			}
			return out, nil
		},
	})
}

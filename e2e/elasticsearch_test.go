package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// bulkDoc is one document of a _bulk request: its action line and its source.
type bulkDoc struct {
	action map[string]map[string]any
	source map[string]any
}

// fakeES speaks the part of the Elasticsearch API the elasticsearch exporter uses: GET / (the version
// check, which must carry X-Elastic-Product) and POST /_bulk, answering every item `create` 201.
type fakeES struct {
	mu      sync.Mutex
	docs    []bulkDoc
	headers []http.Header
	errs    []string
}

func (f *fakeES) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/":
		_, _ = io.WriteString(w, `{"name":"e2e","cluster_name":"e2e","version":{"number":"8.17.0","build_flavor":"default","lucene_version":"9.12.0"},"tagline":"You Know, for Search"}`)
	case r.Method == http.MethodPost && r.URL.Path == "/_bulk":
		items, err := f.bulk(r)
		if err != nil {
			f.fail(err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, _ := json.Marshal(map[string]any{"took": 1, "errors": false, "items": items})
		_, _ = w.Write(resp)
	default:
		f.fail(fmt.Sprintf("unexpected request %s %s", r.Method, r.URL))
		http.NotFound(w, r)
	}
}

func (f *fakeES) fail(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, msg)
}

// bulk reads an NDJSON bulk body (gzip or not) and records its action/source pairs.
func (f *fakeES) bulk(r *http.Request) ([]map[string]any, error) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		body = zr
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	var docs []bulkDoc
	var items []map[string]any
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var d bulkDoc
		if err := json.Unmarshal(sc.Bytes(), &d.action); err != nil {
			return nil, fmt.Errorf("action line: %w", err)
		}
		if !sc.Scan() {
			return nil, fmt.Errorf("action %s without a source line", sc.Bytes())
		}
		if err := json.Unmarshal(sc.Bytes(), &d.source); err != nil {
			return nil, fmt.Errorf("source line: %w", err)
		}
		for op, meta := range d.action {
			items = append(items, map[string]any{op: map[string]any{"_index": meta["_index"], "status": 201, "result": "created"}})
		}
		docs = append(docs, d)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.docs = append(f.docs, docs...)
	f.headers = append(f.headers, r.Header.Clone())
	return items, nil
}

func (f *fakeES) snapshot() ([]bulkDoc, []http.Header, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bulkDoc(nil), f.docs...), append([]http.Header(nil), f.headers...), append([]string(nil), f.errs...)
}

// find returns the first document holding metric with exactly the given data point attributes.
func findDoc(docs []bulkDoc, metric string, attrs map[string]any) (bulkDoc, bool) {
	for _, d := range docs {
		ms, _ := d.source["metrics"].(map[string]any)
		if _, ok := ms[metric]; !ok {
			continue
		}
		if a, _ := d.source["attributes"].(map[string]any); equalJSON(a, attrs) {
			return d, true
		}
	}
	return bulkDoc{}, false
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// uuidOf is the name of the /dev/disk/by-uuid link to the block device dev, "" if there is none (no
// udev here, or a filesystem without a device).
func uuidOf(dev uint64) string {
	links, _ := os.ReadDir("/dev/disk/by-uuid")
	for _, l := range links {
		var st unix.Stat_t
		if unix.Stat(filepath.Join("/dev/disk/by-uuid", l.Name()), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK && st.Rdev == dev {
			return l.Name()
		}
	}
	return ""
}

// dfSourceType is `df --output=source,fstype /`.
func dfSourceType(t *testing.T) (source, fstype string) {
	t.Helper()
	out, err := exec.Command("df", "--output=source,fstype", "/").Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 2)
	f := strings.Fields(lines[1])
	require.Len(t, f, 2)
	return f[0], f[1]
}

// TestElasticsearchExporter runs the built collector with config/elasticsearch.yaml against a local
// server that speaks the bulk API (no Elasticsearch can be installed here) and checks, field by field,
// the otel-mode documents it receives for one I/O and one filesystem metric against what this host's
// sysfs, statfs and df say.
func TestElasticsearchExporter(t *testing.T) {
	bin := collectorBinary(t)
	es := &fakeES{}
	srv := httptest.NewServer(es)
	// Registered before the collector's cleanup, so it runs after it: the collector's final flush at
	// shutdown still finds the server.
	t.Cleanup(srv.Close)
	const apiKey = "ZTJlOnNlY3JldA=="
	t.Setenv("ELASTICSEARCH_ENDPOINT", srv.URL)
	t.Setenv("ELASTICSEARCH_API_KEY", apiKey)
	startMs := float64(time.Now().UnixMilli())
	col := startCollector(t, bin, shippedConfig(t, "elasticsearch.yaml"), telemetryOff)

	disks := wholeDisks(t)
	require.NotEmpty(t, disks)
	var disk string
	for d := range disks {
		disk = d
		break
	}
	sizeSectors, err := os.ReadFile(filepath.Join("/sys/block", disk, "size"))
	require.NoError(t, err)
	sectors, err := strconv.ParseFloat(strings.TrimSpace(string(sizeSectors)), 64)
	require.NoError(t, err)
	size, _ := dfRoot(t)
	source, fstype := dfSourceType(t)
	var st unix.Stat_t
	require.NoError(t, unix.Stat("/", &st))
	rootMajMin := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	hostName, hostID := hostIdentity(t)

	ioAttrs := map[string]any{"system.device": disk}
	psiAttrs := map[string]any{"disk_health.linux.pressure.stall_type": "some"}
	_, err = os.Stat("/proc/pressure/io")
	hasPSI := err == nil
	fsAttrs := map[string]any{"system.device": source, "system.filesystem.mode": "rw", "system.filesystem.mountpoint": "/", "system.filesystem.type": fstype,
		"disk_health.filesystem.domain": rootMajMin, "disk_health.filesystem.uuid": uuidOf(st.Dev)}
	var docs []bulkDoc
	var headers []http.Header
	// The exporter flushes every 10 s (its default); the first scrape is 1 s after start.
	deadline := time.Now().Add(45 * time.Second)
	for {
		var errs []string
		docs, headers, errs = es.snapshot()
		require.Empty(t, errs)
		_, okIO := findDoc(docs, "system.disk.limit", ioAttrs)
		_, okFS := findDoc(docs, "system.filesystem.limit", fsAttrs)
		_, okPSI := findDoc(docs, "disk_health.io.linux.pressure.total", psiAttrs)
		okSMART := len(smartStatusDocs(docs, ioHWID(docs, disk))) > 0
		if okIO && okFS && okSMART && (okPSI || !hasPSI) {
			break
		}
		select {
		case <-col.exited:
			t.Fatalf("the collector exited: %v", col.waitErr)
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no system.disk.limit and SMART read status for %s, system.filesystem.limit for / and pressure within 45 s (%d documents)", disk, len(docs))
		}
	}
	nowMs := float64(time.Now().UnixMilli())

	// Requests: gzip-compressed, authenticated with the API key from the environment.
	require.NotEmpty(t, headers)
	for _, h := range headers {
		assert.Equal(t, "gzip", h.Get("Content-Encoding"))
		scheme, key, _ := strings.Cut(h.Get("Authorization"), " ")
		assert.True(t, strings.EqualFold("ApiKey", scheme), "Authorization scheme %q", scheme)
		assert.Equal(t, apiKey, key)
	}

	resourceBase := map[string]any{"host.name": hostName, "os.type": "linux"}
	if hostID != "" {
		resourceBase["host.id"] = hostID
	}
	checkDoc := func(t *testing.T, d bulkDoc, metric, template, unit string, attrs, resource map[string]any) float64 {
		t.Helper()
		// The action: create into the data stream named by the receiver's scope, with the exporter's
		// dynamic template for the metric's type.
		require.Len(t, d.action, 1)
		create, ok := d.action["create"]
		require.True(t, ok, "action %v", d.action)
		assert.Equal(t, "metrics-diskhealthreceiver.otel-default", create["_index"])
		assert.Equal(t, true, create["require_data_stream"])
		templates, _ := create["dynamic_templates"].(map[string]any)
		assert.Equal(t, template, templates["metrics."+metric])
		// Metrics of one resource with the same attributes, unit and timestamp share a document; each
		// has its template.
		ms, _ := d.source["metrics"].(map[string]any)
		require.Contains(t, ms, metric)
		assert.Len(t, templates, len(ms))
		for m := range ms {
			assert.Contains(t, templates, "metrics."+m)
		}

		src := d.source
		assert.Equal(t, map[string]any{"type": "metrics", "dataset": "diskhealthreceiver.otel", "namespace": "default"}, src["data_stream"])
		assert.Equal(t, attrs, src["attributes"])
		assert.Equal(t, unit, src["unit"])
		scope := src["scope"].(map[string]any)
		assert.Equal(t, "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver", scope["name"])
		assert.NotEmpty(t, scope["version"])
		res := src["resource"].(map[string]any)
		assert.Contains(t, res["schema_url"], "https://opentelemetry.io/schemas/")
		gotRes := res["attributes"].(map[string]any)
		for k, v := range resource {
			assert.Equal(t, v, gotRes[k], "resource.attributes.%s", k)
		}
		ts, ok := src["@timestamp"].(float64)
		require.True(t, ok, "@timestamp %v", src["@timestamp"])
		assert.True(t, ts >= startMs-1000 && ts <= nowMs, "@timestamp %v outside the test's run", ts)
		if start, ok := src["start_timestamp"].(float64); ok {
			assert.LessOrEqual(t, start, ts)
		}
		assert.NotEmpty(t, src["_metric_names_hash"])
		v, ok := src["metrics"].(map[string]any)[metric].(float64)
		require.True(t, ok, "metrics.%s", metric)
		return v
	}

	t.Run("io", func(t *testing.T) {
		d, _ := findDoc(docs, "system.disk.limit", ioAttrs)
		res := map[string]any{"disk_health.disk.major_minor": disks[disk], "disk_health.disk.class": "disk"}
		for k, v := range resourceBase {
			res[k] = v
		}
		// system.disk.limit is a non-monotonic sum: a gauge in Elasticsearch.
		got := checkDoc(t, d, "system.disk.limit", "gauge_long", "By", ioAttrs, res)
		assert.Equal(t, sectors*512, got, "system.disk.limit of %s against /sys/block/%s/size", disk, disk)

		// A cumulative counter of the same device: counter_long, never more than the kernel counts now.
		rd, ok := findDoc(docs, "system.disk.io", map[string]any{"system.device": disk, "disk.io.direction": "read"})
		require.True(t, ok, "system.disk.io read for %s", disk)
		readBytes := checkDoc(t, rd, "system.disk.io", "counter_long", "By", map[string]any{"system.device": disk, "disk.io.direction": "read"}, res)
		assert.Greater(t, readBytes, 0.0)
		assert.LessOrEqual(t, readBytes, diskstatsReadBytes(t, disk))
	})

	t.Run("smart", func(t *testing.T) {
		// The SMART source: the disk's read status, one document for its current state at 1 (and one
		// at 0 for a state it left, which a read of this host's disk does not do here), on the disk's
		// SMART resource, whose hw.id is the one its I/O documents carry. A disk without SMART (this
		// machine's virtio disk) sends it at its first read only: the documents read hold that export.
		hwID := ioHWID(docs, disk)
		require.NotEmpty(t, hwID)
		states := map[string]float64{}
		statusDocs := smartStatusDocs(docs, hwID)
		require.NotEmpty(t, statusDocs)
		for _, d := range statusDocs {
			attrs, _ := d.source["attributes"].(map[string]any)
			state, _ := attrs["smart.read.status"].(string)
			res := map[string]any{"hw.id": hwID, "hw.type": "physical_disk"}
			for k, v := range resourceBase {
				res[k] = v
			}
			// sda for sda; the controller, nvme0, for namespace nvme0n1.
			name, _ := d.source["resource"].(map[string]any)["attributes"].(map[string]any)["hw.name"].(string)
			assert.True(t, name != "" && strings.HasPrefix(disk, name), "hw.name %q for %s", name, disk)
			// The disk's identity is on the point too (issue 11), so each disk's documents stay apart.
			point := map[string]any{"smart.read.status": state, "hw.id": hwID, "hw.name": name, "hw.type": "physical_disk"}
			v := checkDoc(t, d, "disk_health.physical_disk.smart.read.status", "gauge_long", "1", point, res)
			states[state] += v
		}
		var current []string
		for s, v := range states {
			if v == 1 {
				current = append(current, s)
			}
		}
		assert.Subset(t, []string{"ok", "standby_skipped", "permission_denied", "unsupported", "timeout", "error"}, slices.Sorted(maps.Keys(states)))
		assert.Len(t, current, 1, "states at 1: %v", states)
	})

	t.Run("pressure", func(t *testing.T) {
		if !hasPSI {
			t.Skip("SKIPPED: this kernel has no /proc/pressure/io")
		}
		d, ok := findDoc(docs, "disk_health.io.linux.pressure.total", psiAttrs)
		require.True(t, ok)
		got := checkDoc(t, d, "disk_health.io.linux.pressure.total", "counter_double", "s", psiAttrs, resourceBase)
		assert.Greater(t, got, 0.0)
		assert.LessOrEqual(t, got, pressureTotal(t))
	})

	t.Run("filesystem", func(t *testing.T) {
		d, _ := findDoc(docs, "system.filesystem.limit", fsAttrs)
		res := map[string]any{"disk_health.disk.major_minor": rootMajMin}
		for k, v := range resourceBase {
			res[k] = v
		}
		got := checkDoc(t, d, "system.filesystem.limit", "gauge_long", "By", fsAttrs, res)
		assert.Equal(t, size, got, "system.filesystem.limit of / against df -B1")
	})
}

// ioHWID is the hw.id the I/O documents of a device carry.
func ioHWID(docs []bulkDoc, dev string) string {
	d, ok := findDoc(docs, "system.disk.limit", map[string]any{"system.device": dev})
	if !ok {
		return ""
	}
	id, _ := d.source["resource"].(map[string]any)["attributes"].(map[string]any)["hw.id"].(string)
	return id
}

// smartStatusDocs are the SMART read status documents (one per state) of the disk with that hw.id.
func smartStatusDocs(docs []bulkDoc, hwID string) []bulkDoc {
	var out []bulkDoc
	for _, d := range docs {
		ms, _ := d.source["metrics"].(map[string]any)
		if _, ok := ms["disk_health.physical_disk.smart.read.status"]; !ok || hwID == "" {
			continue
		}
		if d.source["resource"].(map[string]any)["attributes"].(map[string]any)["hw.id"] == hwID {
			out = append(out, d)
		}
	}
	return out
}

// pressureTotal is /proc/pressure/io's "some" total, in seconds.
func pressureTotal(t *testing.T) float64 {
	t.Helper()
	data, err := os.ReadFile("/proc/pressure/io")
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "some ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				us, err := strconv.ParseFloat(v, 64)
				require.NoError(t, err)
				return us / 1e6
			}
		}
	}
	t.Fatalf("no some total in /proc/pressure/io: %q", data)
	return 0
}

// diskstatsReadBytes is the bytes read from a device so far: /proc/diskstats field 6 (sectors) × 512.
func diskstatsReadBytes(t *testing.T, dev string) float64 {
	t.Helper()
	data, err := os.ReadFile("/proc/diskstats")
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[2] == dev {
			s, err := strconv.ParseFloat(f[5], 64)
			require.NoError(t, err)
			return s * 512
		}
	}
	t.Fatalf("%s not in /proc/diskstats", dev)
	return 0
}

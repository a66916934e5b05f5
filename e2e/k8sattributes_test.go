package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// fakeAPIServer answers what an informer asks of the Kubernetes API for pods: a list, a watch, and the
// streaming list (a watch with sendInitialEvents=true: the pods as ADDED events, then a bookmark marking
// the end of the initial events). It serves the pods whose spec.nodeName matches the request's field
// selector and records every request, so a test can say which resources and verbs the client used.
type fakeAPIServer struct {
	*httptest.Server
	pods []map[string]any
	// noStreamingList answers a streaming list as an API server without it does (an error), so the
	// client falls back to list + watch.
	noStreamingList bool

	mu       sync.Mutex
	requests []string // "VERB path?query", verb as RBAC names it (list, watch)
}

func newFakeAPIServer(t *testing.T, noStreamingList bool, pods ...map[string]any) *fakeAPIServer {
	f := &fakeAPIServer{pods: pods, noStreamingList: noStreamingList}
	f.Server = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPIServer) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

func (f *fakeAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	watching := q.Get("watch") == "true" || q.Get("watch") == "1"
	verb := "list"
	if watching {
		verb = "watch"
	}
	f.mu.Lock()
	f.requests = append(f.requests, fmt.Sprintf("%s %s %s %s", r.Method, verb, r.URL.Path, r.URL.RawQuery))
	f.mu.Unlock()
	if r.Method != http.MethodGet || r.URL.Path != "/api/v1/pods" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"not served: %s"}`, r.URL.Path)
		return
	}
	var items []map[string]any
	node := strings.TrimPrefix(q.Get("fieldSelector"), "spec.nodeName=")
	for _, p := range f.pods {
		if q.Get("fieldSelector") == "" || p["spec"].(map[string]any)["nodeName"] == node {
			items = append(items, p)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if watching && q.Get("sendInitialEvents") == "true" && f.noStreamingList {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400,"message":"sendInitialEvents is not supported"}`)
		return
	}
	if !watching {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"kind": "PodList", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": "100"}, "items": items,
		})
		return
	}
	enc := json.NewEncoder(w)
	if q.Get("sendInitialEvents") == "true" {
		for _, p := range items {
			_ = enc.Encode(map[string]any{"type": "ADDED", "object": p})
		}
		_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{
			"kind": "Pod", "apiVersion": "v1",
			"metadata": map[string]any{"resourceVersion": "100", "annotations": map[string]any{"k8s.io/initial-events-end": "true"}},
		}})
	}
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	// Nothing changes: keep the watch open until the client goes (or the server closes).
	<-r.Context().Done()
}

// fakePod is a pod object as the API server returns it (the fields the processor reads).
func fakePod(uid, namespace, name, node string, labels map[string]any, owner map[string]any) map[string]any {
	meta := map[string]any{
		"uid": uid, "namespace": namespace, "name": name, "resourceVersion": "100",
		"creationTimestamp": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "labels": labels,
	}
	if owner != nil {
		meta["ownerReferences"] = []any{owner}
	}
	return map[string]any{
		"kind": "Pod", "apiVersion": "v1", "metadata": meta,
		"spec":   map[string]any{"nodeName": node, "containers": []any{map[string]any{"name": "main", "image": "busybox"}}},
		"status": map[string]any{"phase": "Running", "podIP": "10.0.0.7", "startTime": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)},
	}
}

// cgroupResources are the per-cgroup resources of an export, by their k8s.pod.uid.
func cgroupResources(md pmetric.Metrics) map[string]pcommon.Map {
	out := map[string]pcommon.Map{}
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		attrs := rms.At(i).Resource().Attributes()
		uid, ok := attrs.Get("k8s.pod.uid")
		if !ok || !slices.Contains(metricNames(rmMetrics(rms.At(i))), "container.disk.io") {
			continue
		}
		out[uid.Str()] = attrs
	}
	return out
}

func rmMetrics(rm pmetric.ResourceMetrics) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm.CopyTo(md.ResourceMetrics().AppendEmpty())
	return md
}

// TestK8sAttributesFromFakeAPIServer runs config/kubernetes.yaml (its k8s_attributes processor as
// shipped, auth_type none instead of the service account) on a fixture root with two pods' cgroups,
// against a fake API server. The per-cgroup points of the pod the API server knows get its name,
// namespace and workload; the other pod's keep only their uid; disks get nothing. The processor asks
// only for this node's pods, and only lists and watches them: what deploy/kubernetes/clusterrole.yaml
// grants.
func TestK8sAttributesFromFakeAPIServer(t *testing.T) {
	bin := collectorBinary(t)
	// client-go streams the initial list (a watch with sendInitialEvents) and falls back to list + watch
	// where the API server cannot: both are served.
	for _, mode := range []string{"streaming list", "list then watch"} {
		t.Run(mode, func(t *testing.T) { testK8sAttributes(t, bin, mode == "list then watch") })
	}
}

func testK8sAttributes(t *testing.T, bin string, noStreamingList bool) {
	const (
		node       = "node-a"
		knownUID   = "3f6c1f2e-8b1a-4c55-9a59-1d2f0e6b7a01"
		unknownUID = "9b2d7c4e-1f3a-4e8b-b6d2-5a4c3e2f1a02"
		container  = "06ea17a8981d25b0315ff17bd1ebad3d95c15a3f8b764eaadb93612d9b61a54e"
	)
	api := newFakeAPIServer(t, noStreamingList,
		fakePod(knownUID, "ml", "trainer-7d9f8b6c5-x2x4q", node,
			map[string]any{"app": "trainer", "pod-template-hash": "7d9f8b6c5"},
			map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "trainer-7d9f8b6c5", "uid": "5e0c1a7e-0000-4000-8000-000000000001", "controller": true}),
		// A pod on another node: the node filter keeps it out of what the processor is served.
		fakePod("0a0a0a0a-0000-4000-8000-00000000000b", "other", "elsewhere-0", "node-b", nil, nil),
	)
	u, err := url.Parse(api.URL)
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)

	// The fixture root: one disk, and the cgroups of two pods (a guaranteed pod's container, a
	// best-effort pod) doing I/O on it.
	root := t.TempDir()
	devs := []dsLine{{Major: 252, Minor: 0, Name: "vda", C: make([]uint64, 17)}}
	buildReceiverRoot(t, root, devs, formatDiskstats(devs), time.Now().Add(-time.Hour))
	cg := filepath.Join(root, "sys", "fs", "cgroup")
	known := filepath.Join("kubepods.slice", "kubepods-pod"+strings.ReplaceAll(knownUID, "-", "_")+".slice", "cri-containerd-"+container+".scope")
	unknown := filepath.Join("kubepods.slice", "kubepods-besteffort.slice", "kubepods-besteffort-pod"+strings.ReplaceAll(unknownUID, "-", "_")+".slice")
	require.NoError(t, os.MkdirAll(filepath.Join(cg, known), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(cg, unknown), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cg, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644))
	dirs := []string{"kubepods.slice", filepath.Dir(known), known, filepath.Dir(unknown), unknown}
	// writeStats replaces every io.stat whole (a rename), so a scrape never reads one half-written.
	writeStats := func(n uint64) error {
		for _, d := range dirs {
			line := fmt.Sprintf("252:0 rbytes=%d wbytes=%d rios=%d wios=%d dbytes=0 dios=0\n", n*4096, n*8192, n, 2*n)
			tmp := filepath.Join(cg, d, "io.stat.tmp")
			if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
				return err
			}
			if err := os.Rename(tmp, filepath.Join(cg, d, "io.stat")); err != nil {
				return err
			}
		}
		return nil
	}
	require.NoError(t, writeStats(1))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // I/O in every cgroup between any two scrapes
		defer close(done)
		for n := uint64(2); ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			if err := writeStats(n); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })

	t.Setenv("KUBERNETES_SERVICE_HOST", host)
	t.Setenv("KUBERNETES_SERVICE_PORT", port)
	t.Setenv("K8S_NODE_NAME", node)
	t.Setenv("POD_IP", "127.0.0.1")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "host.name="+node+",k8s.node.name="+node)
	t.Setenv("OTLP_ENDPOINT", freeAddr(t)) // the logs pipeline's gateway: nobody there
	out := filepath.Join(t.TempDir(), "got.json")
	extra := filepath.Join(t.TempDir(), "extra.yaml")
	require.NoError(t, os.WriteFile(extra, []byte(fmt.Sprintf(`exporters:
  file/got:
    path: %s
service:
  pipelines:
    metrics:
      exporters: [file/got]
`, out)), 0o644))
	col := startCollector(t, bin, shippedConfig(t, "kubernetes.yaml"), append([]string{"--config=" + extra, telemetryOff,
		"--set=receivers.disk_health.root_path=" + root,
		"--set=receivers.disk_health.collection_interval=1s",
		"--set=processors.k8s_attributes.auth_type=none",
		"--set=exporters.prometheus.endpoint=" + freeAddr(t),
		"--set=extensions.health_check.endpoint=" + freeAddr(t)},
		onlySources(func(name string) bool { return name == "iostat" || name == "cgroups" })...)...)
	tail := &exportTail{path: out}

	i := col.waitExport(t, tail, 0, 45*time.Second, "a per-cgroup point enriched with k8s.pod.name", func(md pmetric.Metrics) bool {
		res := cgroupResources(md)
		_, ok := res[knownUID]
		if ok {
			_, ok = res[knownUID].Get("k8s.pod.name")
		}
		return ok
	})
	md := tail.exports[i]
	res := cgroupResources(md)
	enriched := res[knownUID].AsRaw()
	t.Logf("enriched per-cgroup resource: %v", enriched)
	for k, want := range map[string]string{
		"k8s.pod.uid":         knownUID,
		"k8s.pod.name":        "trainer-7d9f8b6c5-x2x4q",
		"k8s.namespace.name":  "ml",
		"k8s.replicaset.name": "trainer-7d9f8b6c5",
		"k8s.deployment.name": "trainer",
		"container.id":        container,
		"k8s.node.name":       node,
	} {
		assert.Equal(t, want, enriched[k], k)
	}
	// The pod the API server does not know keeps its uid and gets nothing made up.
	if other, ok := res[unknownUID]; assert.True(t, ok, "the second pod's cgroup is in the same export") {
		for _, k := range []string{"k8s.pod.name", "k8s.namespace.name", "k8s.deployment.name"} {
			_, has := other.Get(k)
			assert.False(t, has, "unknown pod got %s", k)
		}
	}
	// Disk resources are not pods.
	rms := md.ResourceMetrics()
	disks := 0
	for j := range rms.Len() {
		attrs := rms.At(j).Resource().Attributes()
		if _, ok := attrs.Get("k8s.pod.uid"); ok {
			continue
		}
		if slices.Contains(metricNames(rmMetrics(rms.At(j))), "system.disk.io") {
			disks++
			_, has := attrs.Get("k8s.pod.name")
			assert.False(t, has, "a disk resource got k8s.pod.name")
		}
	}
	assert.Positive(t, disks, "the export has the disk's I/O too")

	// What the processor asked: only pods, only list and watch, only this node's.
	reqs := api.recorded()
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		f := strings.SplitN(r, " ", 4)
		require.Len(t, f, 4, r)
		assert.Equal(t, "GET", f[0], r)
		assert.Contains(t, []string{"list", "watch"}, f[1], r)
		assert.Equal(t, "/api/v1/pods", f[2], r)
		q, err := url.ParseQuery(f[3])
		require.NoError(t, err)
		assert.Equal(t, "spec.nodeName="+node, q.Get("fieldSelector"), r)
	}
	t.Logf("%d API requests, all list/watch of this node's pods: %v", len(reqs), reqs)
}

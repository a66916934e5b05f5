package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

const (
	helmValues = "helm/values.yaml"
	// The upstream opentelemetry-collector chart, unchanged, beside the checkout (../shared, as CI
	// places it too).
	helmChart        = "../../shared/reference/helm-charts/charts/opentelemetry-collector"
	helmChartVersion = "0.170.0"
	// The chart's ConfigMap key and where its pod mounts it.
	helmConfigKey = "relay"
)

// helmBinary is helm v4, built once per checkout into .tools by `make helm` (pinned there like ocb),
// which prints its path.
func helmBinary(t *testing.T) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("make", "-s", "--no-print-directory", "-C", "..", "helm")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		unavailable(t, "cannot build helm (make helm): %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	bin := lines[len(lines)-1]
	if _, err := os.Stat(bin); err != nil {
		unavailable(t, "make helm printed %q: %v", bin, err)
	}
	return bin
}

// renderedChart is what `helm template` makes of deploy/helm/values.yaml with the upstream chart: the
// node agent's DaemonSet and the ConfigMap it mounts, decoded strictly into the API types.
type renderedChart struct {
	ds     appsv1.DaemonSet
	cm     corev1.ConfigMap
	config map[string]any // the collector config in the ConfigMap
	role   rbacv1.ClusterRole
	bound  rbacv1.ClusterRoleBinding
	kinds  []string
}

func renderChart(t *testing.T) renderedChart {
	t.Helper()
	chart, err := filepath.Abs(helmChart)
	require.NoError(t, err)
	meta, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	if err != nil {
		unavailable(t, "the opentelemetry-collector chart is not beside the checkout (%s): %v", helmChart, err)
	}
	var chartMeta struct {
		Version string `json:"version"`
	}
	require.NoError(t, yaml.Unmarshal(meta, &chartMeta))
	require.Equal(t, helmChartVersion, chartMeta.Version, "the chart the values file is written for")
	helm := helmBinary(t)

	// helm keeps caches and its repository list under $HOME: the test's own directories instead.
	home := t.TempDir()
	cmd := exec.Command(helm, "template", "diskhealth", chart, "--namespace", "diskhealth", "--values", helmValues)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "helm template: %s", stderr.String())

	var r renderedChart
	var daemonSets, configMaps int
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &head))
		if head.Kind == "" {
			continue
		}
		r.kinds = append(r.kinds, head.Kind)
		switch head.Kind {
		case "DaemonSet":
			daemonSets++
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &r.ds), "the rendered DaemonSet")
		case "ConfigMap":
			configMaps++
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &r.cm), "the rendered ConfigMap")
		case "ClusterRole":
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &r.role), "the rendered ClusterRole")
		case "ClusterRoleBinding":
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &r.bound), "the rendered ClusterRoleBinding")
		}
	}
	slices.Sort(r.kinds)
	require.Equal(t, 1, daemonSets, "one DaemonSet in:\n%s", out)
	require.Equal(t, 1, configMaps, "one ConfigMap in:\n%s", out)
	require.Contains(t, r.cm.Data, helmConfigKey)
	require.NoError(t, yaml.Unmarshal([]byte(r.cm.Data[helmConfigKey]), &r.config))
	return r
}

// TestHelmValuesRenderOurDaemonSet renders deploy/helm/values.yaml with the upstream chart (helm
// template; the chart's values.schema.json checks the values file) and compares the result with what
// we ship: the collector config is config/kubernetes.yaml (plus the chart's own service.telemetry), with
// none of the chart's default receivers and only components this distribution has; the pod runs our
// image and binary with the shipped DaemonSet's security context, host mounts and resources, tolerates
// GPU and control-plane nodes, and opens no host port.
func TestHelmValuesRenderOurDaemonSet(t *testing.T) {
	r := renderChart(t)
	assert.Equal(t, []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet", "ServiceAccount"}, r.kinds)

	// The chart's default receivers (its values.yaml) are gone.
	var chartValues struct {
		Config struct {
			Receivers map[string]any `json:"receivers"`
		} `json:"config"`
	}
	data, err := os.ReadFile(filepath.Join(helmChart, "values.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &chartValues))
	require.NotEmpty(t, chartValues.Config.Receivers)
	receivers, _ := r.config["receivers"].(map[string]any)
	for name := range chartValues.Config.Receivers {
		assert.NotContains(t, receivers, name, "the chart's default receiver %s is still configured", name)
	}

	// Every component the config names is one this distribution is built with (builder-config.yaml).
	have := distributionComponents(t, imageName(t))
	for _, kind := range []string{"receivers", "processors", "exporters", "extensions", "connectors"} {
		section, _ := r.config[kind].(map[string]any)
		for id := range section {
			typ, _, _ := strings.Cut(id, "/")
			assert.Contains(t, have[kind], typ, "%s %s is not in builder-config.yaml", kind, id)
		}
	}

	// The config is the shipped one with the shipped DaemonSet's args applied; the chart adds only its
	// service.telemetry (the collector's own telemetry on the pod IP, port 8888, not exposed).
	var shipped appsv1.DaemonSet
	decodeStrict(t, "kubernetes/daemonset.yaml", &shipped)
	sc := shipped.Spec.Template.Spec.Containers[0]
	got := deepCopyJSON(t, r.config)
	service, _ := got["service"].(map[string]any)
	delete(service, "telemetry")
	assert.Equal(t, normalizeConfig(shippedConfig(t, sc)), normalizeConfig(got),
		"deploy/helm/values.yaml's config (merged with the chart's defaults) differs from config/kubernetes.yaml with the shipped DaemonSet's args")
	pod := r.ds.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]

	assert.Equal(t, defaultImage(t), c.Image, "the image `make image` builds")
	assert.Equal(t, []string{"/otelcol-diskhealth"}, c.Command)
	assert.Equal(t, []string{"--config=/conf/relay.yaml"}, c.Args)
	assert.Equal(t, sc.SecurityContext, c.SecurityContext, "the shipped DaemonSet's security context")
	assert.Equal(t, sc.Resources, c.Resources, "the shipped DaemonSet's requests and limits")
	assert.Equal(t, hostMounts(t, shipped.Spec.Template.Spec), hostMounts(t, pod), "the shipped DaemonSet's host mounts")
	assert.False(t, pod.HostNetwork)
	assert.False(t, pod.HostPID)
	require.NotNil(t, pod.AutomountServiceAccountToken)
	assert.True(t, *pod.AutomountServiceAccountToken, "k8s_attributes needs the token")

	// k8s_attributes may list and watch pods with the pod's ServiceAccount, and nothing more: the
	// shipped ClusterRole's rules.
	var role rbacv1.ClusterRole
	decodeStrict(t, "kubernetes/clusterrole.yaml", &role)
	assert.Equal(t, role.Rules, r.role.Rules, "the shipped ClusterRole's rules")
	assert.Equal(t, r.role.Name, r.bound.RoleRef.Name)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: pod.ServiceAccountName, Namespace: "diskhealth"}}, r.bound.Subjects)

	for _, taint := range []corev1.Taint{
		{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule},
		{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
	} {
		assert.True(t, slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool { return tolerates(tol, taint) }),
			"no toleration for %s", taint.Key)
	}

	// Every ${env:X} the config needs without a default is set in the pod.
	env := map[string]bool{}
	for _, e := range c.Env {
		env[e.Name] = true
	}
	for _, name := range requiredEnv(t, r.cm.Data[helmConfigKey]) {
		assert.True(t, env[name], "the config needs ${env:%s}", name)
	}

	// Only the Prometheus exporter's port, and no host port: a node agent listens on nothing else.
	for _, p := range c.Ports {
		assert.Zero(t, p.HostPort, "port %s", p.Name)
	}
	assert.Equal(t, []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9464, Protocol: corev1.ProtocolTCP}}, c.Ports)
}

// TestHelmDaemonSetUnderContainerd runs the pod of the DaemonSet the chart renders from
// deploy/helm/values.yaml, with the ConfigMap it renders, under containerd (ctr, runc, containerd's
// default seccomp profile), translated as TestDaemonSetUnderRuntimes translates the shipped one: its
// Prometheus endpoint must serve this host's disks.
func TestHelmDaemonSetUnderContainerd(t *testing.T) {
	list := imageName(t)
	if os.Geteuid() != 0 {
		unavailable(t, "containerd here runs as root; run `make test` as root (CI does)")
	}
	r := renderChart(t)
	assertServesThisHost(t, runPod(t, runUnderContainerd, r.ds.Spec.Template.Spec, r.cm, list), "containerd")
}

// tolerates: a toleration lets a pod onto a node with the taint (any value) when its effect is the
// taint's or empty (every effect), and it names the taint's key with Exists, or no key with Exists
// (every taint).
func tolerates(tol corev1.Toleration, taint corev1.Taint) bool {
	return (tol.Effect == "" || tol.Effect == taint.Effect) && tol.Operator == corev1.TolerationOpExists &&
		(tol.Key == "" || tol.Key == taint.Key)
}

// defaultImage is the image reference the manifests name: image.sh's name, tagged with the
// distribution's version.
func defaultImage(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../builder-config.yaml")
	require.NoError(t, err)
	var manifest struct {
		Dist struct {
			Version string `json:"version"`
		} `json:"dist"`
	}
	require.NoError(t, yaml.Unmarshal(data, &manifest))
	return "localhost/otelcol-diskhealth:" + manifest.Dist.Version
}

// distributionComponents lists the component types (by kind: receivers, processors, …) of the
// collector in the image, as its `components` command reports them, after checking that each comes
// from a module builder-config.yaml lists.
func distributionComponents(t *testing.T, list string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile("../builder-config.yaml")
	require.NoError(t, err)
	var manifest map[string]any
	require.NoError(t, yaml.Unmarshal(data, &manifest))
	listed := map[string]bool{}
	for _, kind := range []string{"receivers", "processors", "exporters", "extensions", "connectors"} {
		entries, _ := manifest[kind].([]any)
		for _, e := range entries {
			m, _ := e.(map[string]any)
			gomod, _ := m["gomod"].(string)
			listed[kind+" "+gomod] = true
		}
	}

	bin := filepath.Join(t.TempDir(), "otelcol-diskhealth")
	files := exportImage(t, list+"-"+runtime.GOARCH)
	require.NoError(t, os.WriteFile(bin, files["otelcol-diskhealth"], 0o755))
	type component struct {
		Name   string `json:"name"`
		Module string `json:"module"`
	}
	var components struct {
		Receivers  []component `json:"receivers"`
		Processors []component `json:"processors"`
		Exporters  []component `json:"exporters"`
		Extensions []component `json:"extensions"`
		Connectors []component `json:"connectors"`
	}
	require.NoError(t, yaml.Unmarshal(run(t, bin, "components"), &components))
	out := map[string][]string{}
	for kind, list := range map[string][]component{"receivers": components.Receivers, "processors": components.Processors,
		"exporters": components.Exporters, "extensions": components.Extensions, "connectors": components.Connectors} {
		for _, c := range list {
			require.True(t, listed[kind+" "+c.Module], "the image's %s %s (%s) is not in builder-config.yaml", kind, c.Name, c.Module)
			out[kind] = append(out[kind], c.Name)
		}
	}
	require.NotEmpty(t, out["receivers"])
	return out
}

// hostMount is one hostPath volume as a container sees it.
type hostMount struct {
	MountPath, HostPath, Type string
	ReadOnly                  bool
	Propagation               string
}

// hostMounts lists the hostPath mounts of a pod's one container, by mount path.
func hostMounts(t *testing.T, pod corev1.PodSpec) map[string]hostMount {
	t.Helper()
	require.Len(t, pod.Containers, 1)
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	out := map[string]hostMount{}
	for _, m := range pod.Containers[0].VolumeMounts {
		v, ok := volumes[m.Name]
		require.True(t, ok, "mount %s names no volume", m.Name)
		if v.HostPath == nil {
			continue
		}
		hm := hostMount{MountPath: m.MountPath, HostPath: v.HostPath.Path, ReadOnly: m.ReadOnly}
		if v.HostPath.Type != nil {
			hm.Type = string(*v.HostPath.Type)
		}
		if m.MountPropagation != nil {
			hm.Propagation = string(*m.MountPropagation)
		}
		out[m.MountPath] = hm
	}
	require.NotEmpty(t, out)
	return out
}

// loadYAML reads a YAML file as the JSON value it stands for (a manifest as the API server gets it).
func loadYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, yaml.Unmarshal(data, &out), path)
	return out
}

func deepCopyJSON(t *testing.T, in map[string]any) map[string]any {
	t.Helper()
	data, err := yaml.Marshal(in)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, yaml.Unmarshal(data, &out))
	return out
}

// normalizeConfig makes a collector config comparable: a component with no settings is the same
// whether written `batch:` (null) or `batch: {}` (a Helm value must be {}: null removes the key).
func normalizeConfig(in map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		switch vv := v.(type) {
		case nil:
			out[k] = map[string]any{}
		case map[string]any:
			out[k] = normalizeConfig(vv)
		default:
			out[k] = v
		}
	}
	return out
}

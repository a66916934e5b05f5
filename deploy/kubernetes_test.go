package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// updateEnv is the project's one golden switch (internal/testkit.UpdateEnv; this module does not depend on
// the root one): DISKHEALTH_UPDATE_GOLDEN=1 go test ./... -run ConfigMap rewrites configmap.yaml from
// config/kubernetes.yaml and fails, so the run that rewrites it is never the run that passes.
const updateEnv = "DISKHEALTH_UPDATE_GOLDEN"

const (
	collectorConfig = "../config/kubernetes.yaml"
	configMapFile   = "kubernetes/configmap.yaml"
	configKey       = "config.yaml"
)

// decodeStrict decodes one manifest into its API type, refusing fields the type does not have, so a
// misspelt or misplaced field fails here instead of being dropped by the API server. encoding/json
// matches field names case-insensitively, the API server does not: every key of the manifest must also
// come back, spelt the same, when the decoded object is encoded again.
func decodeStrict(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(data, into), path)
	var orig, again any
	require.NoError(t, yaml.Unmarshal(data, &orig))
	enc, err := yaml.Marshal(into)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(enc, &again))
	for _, p := range missingKeys(orig, again, "") {
		t.Errorf("%s: field %s is not spelt as the API spells it", path, p)
	}
}

// missingKeys lists the map keys of want (recursively, lists by index) that got lacks.
func missingKeys(want, got any, at string) []string {
	var out []string
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		for k, v := range w {
			gv, ok := g[k]
			if !ok {
				out = append(out, at+"."+k)
				continue
			}
			out = append(out, missingKeys(v, gv, at+"."+k)...)
		}
	case []any:
		g, _ := got.([]any)
		for i, v := range w {
			if i >= len(g) {
				out = append(out, fmt.Sprintf("%s[%d]", at, i))
				continue
			}
			out = append(out, missingKeys(v, g[i], fmt.Sprintf("%s[%d]", at, i))...)
		}
	}
	return out
}

func TestMissingKeys(t *testing.T) {
	want := map[string]any{"a": map[string]any{"b": 1, "c": []any{map[string]any{"d": 1}}}}
	got := map[string]any{"a": map[string]any{"B": 1, "c": []any{map[string]any{}}}}
	missing := missingKeys(want, got, "")
	slices.Sort(missing)
	assert.Equal(t, []string{".a.b", ".a.c[0].d"}, missing)
	assert.Empty(t, missingKeys(want, want, ""))
}

// renderConfigMap prints the ConfigMap that carries the collector config as a literal block scalar, so
// the file in the cluster is the file in config/.
func renderConfigMap(config []byte) ([]byte, error) {
	if len(config) == 0 || config[len(config)-1] != '\n' || bytes.HasSuffix(config, []byte("\n\n")) {
		return nil, errors.New("the config must end in exactly one newline: a literal block scalar keeps one")
	}
	var b bytes.Buffer
	b.WriteString("# Generated from config/kubernetes.yaml; do not edit. Regenerate with\n" +
		"#   DISKHEALTH_UPDATE_GOLDEN=1 go test ./... -run TestConfigMap   (in deploy/)\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: otelcol-diskhealth\n" +
		"  labels:\n    app.kubernetes.io/name: otelcol-diskhealth\ndata:\n  " + configKey + ": |\n")
	for _, line := range strings.SplitAfter(strings.TrimSuffix(string(config), "\n"), "\n") {
		line = strings.TrimSuffix(line, "\n")
		if line != "" {
			b.WriteString("    " + line)
		}
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

func TestConfigMapCarriesKubernetesConfig(t *testing.T) {
	want, err := os.ReadFile(collectorConfig)
	require.NoError(t, err)
	if os.Getenv(updateEnv) != "" {
		out, err := renderConfigMap(want)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(configMapFile, out, 0o644))
		t.Fatalf("%s rewritten (%s is set): review the diff and run the tests again without it", configMapFile, updateEnv)
	}
	var cm corev1.ConfigMap
	decodeStrict(t, configMapFile, &cm)
	assert.Equal(t, "v1", cm.APIVersion)
	assert.Equal(t, "ConfigMap", cm.Kind)
	require.Contains(t, cm.Data, configKey)
	// Byte for byte: the DaemonSet runs exactly the config that the validate test checks.
	assert.Equal(t, string(want), cm.Data[configKey],
		"configmap.yaml drifted from config/kubernetes.yaml; run `DISKHEALTH_UPDATE_GOLDEN=1 go test ./... -run TestConfigMap` in deploy/")
}

func TestRenderConfigMapRoundTrip(t *testing.T) {
	for _, in := range []string{
		"a: 1\n",
		"receivers:\n  x:\n\n    y: \"q # not a comment\"\n# comment\n",
		"k: |\n  block\n    indented\n",
	} {
		out, err := renderConfigMap([]byte(in))
		require.NoError(t, err)
		var cm corev1.ConfigMap
		require.NoError(t, yaml.UnmarshalStrict(out, &cm))
		assert.Equal(t, in, cm.Data[configKey])
	}
	for _, bad := range []string{"", "no newline", "two\n\n"} {
		_, err := renderConfigMap([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}

func TestServiceAccount(t *testing.T) {
	var sa corev1.ServiceAccount
	decodeStrict(t, "kubernetes/serviceaccount.yaml", &sa)
	assert.Equal(t, "v1", sa.APIVersion)
	assert.Equal(t, "ServiceAccount", sa.Kind)
	assert.Equal(t, "otelcol-diskhealth", sa.Name)
	require.NotNil(t, sa.AutomountServiceAccountToken)
	assert.True(t, *sa.AutomountServiceAccountToken, "k8s_attributes authenticates with the account's token")
}

// TestRBAC: the ServiceAccount may list and watch pods, and nothing else (what the k8s_attributes
// processor of config/kubernetes.yaml asks for; the e2e test against a fake API server records it).
func TestRBAC(t *testing.T) {
	var sa corev1.ServiceAccount
	decodeStrict(t, "kubernetes/serviceaccount.yaml", &sa)
	var role rbacv1.ClusterRole
	decodeStrict(t, "kubernetes/clusterrole.yaml", &role)
	assert.Equal(t, "rbac.authorization.k8s.io/v1", role.APIVersion)
	assert.Equal(t, "ClusterRole", role.Kind)
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}}}, role.Rules,
		"read-only, pods only")
	assert.Nil(t, role.AggregationRule)

	var binding rbacv1.ClusterRoleBinding
	decodeStrict(t, "kubernetes/clusterrolebinding.yaml", &binding)
	assert.Equal(t, "rbac.authorization.k8s.io/v1", binding.APIVersion)
	assert.Equal(t, "ClusterRoleBinding", binding.Kind)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name}, binding.RoleRef)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: "diskhealth"}}, binding.Subjects)

	// The processor in the config is the one the role is for: service-account auth, this node only,
	// nothing extracted that needs another resource (labels, annotations, uids of owners).
	config, err := os.ReadFile(collectorConfig)
	require.NoError(t, err)
	var cfg struct {
		Processors map[string]struct {
			AuthType string `json:"auth_type"`
			Filter   struct {
				NodeFromEnvVar string `json:"node_from_env_var"`
			} `json:"filter"`
			Extract map[string]any `json:"extract"`
		} `json:"processors"`
	}
	require.NoError(t, yaml.Unmarshal(config, &cfg))
	k8s, ok := cfg.Processors["k8s_attributes"]
	require.True(t, ok, "config/kubernetes.yaml has no k8s_attributes processor")
	assert.Equal(t, "serviceAccount", k8s.AuthType)
	assert.Equal(t, "K8S_NODE_NAME", k8s.Filter.NodeFromEnvVar)
	for key := range k8s.Extract {
		assert.Equal(t, "metadata", key, "extract.%s may need access beyond pods", key)
	}
	metadata, _ := k8s.Extract["metadata"].([]any)
	for _, m := range metadata {
		name, _ := m.(string)
		assert.False(t, strings.HasSuffix(name, ".uid") && name != "k8s.pod.uid", "%s needs an owner informer", name)
		assert.NotEqual(t, "k8s.cluster.uid", name)
	}
}

// stateDir is where the DaemonSet keeps the collector's sending queues (a hostPath).
const stateDir = "/var/lib/otelcol-diskhealth"

// profiles are the shipped DaemonSets: the default, least-privilege one, and the SMART and storage-stack
// one beside it. caps are the capabilities each adds back after dropping all; escalation whether it may
// leave allowPrivilegeEscalation unset (the API server refuses false with SYS_ADMIN); seccomp its profile.
var profiles = []struct {
	name, file string
	caps       []corev1.Capability
	escalation bool
	seccomp    corev1.SeccompProfileType
}{
	{"default", "kubernetes/daemonset.yaml", []corev1.Capability{"BPF", "PERFMON"}, false, corev1.SeccompProfileTypeUnconfined},
	{"smart", "kubernetes/daemonset-smart.yaml", []corev1.Capability{"SYS_ADMIN", "SYS_RAWIO"}, true, corev1.SeccompProfileTypeRuntimeDefault},
}

func TestDaemonSet(t *testing.T) {
	for _, p := range profiles {
		t.Run(p.name, func(t *testing.T) {
			testDaemonSet(t, p.file, p.caps, p.escalation, p.seccomp)
		})
	}
}

func testDaemonSet(t *testing.T, file string, caps []corev1.Capability, escalation bool, seccomp corev1.SeccompProfileType) {
	var ds appsv1.DaemonSet
	decodeStrict(t, file, &ds)
	assert.Equal(t, "apps/v1", ds.APIVersion)
	assert.Equal(t, "DaemonSet", ds.Kind)
	require.NotEmpty(t, ds.Name)

	// The selector must match the template, or the API server rejects the DaemonSet.
	require.NotNil(t, ds.Spec.Selector)
	require.NotEmpty(t, ds.Spec.Selector.MatchLabels)
	for k, v := range ds.Spec.Selector.MatchLabels {
		assert.Equal(t, v, ds.Spec.Template.Labels[k], "selector label %s", k)
	}

	pod := ds.Spec.Template.Spec
	var sa corev1.ServiceAccount
	decodeStrict(t, "kubernetes/serviceaccount.yaml", &sa)
	assert.Equal(t, sa.Name, pod.ServiceAccountName)
	require.NotNil(t, pod.AutomountServiceAccountToken)
	assert.True(t, *pod.AutomountServiceAccountToken, "k8s_attributes needs the token")
	assert.False(t, pod.HostNetwork)
	assert.False(t, pod.HostPID)
	assert.False(t, pod.HostIPC)

	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.NotEmpty(t, c.Name)
	assert.NotEmpty(t, c.Image)

	// Volumes: every mount names a declared volume; the host paths the receiver reads are there,
	// read-only.
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		_, ok := volumes[m.Name]
		assert.True(t, ok, "mount %s names no volume", m.Name)
		mounts[m.MountPath] = m
	}
	hostMounts := map[string]string{"/hostfs": "/", "/hostfs/proc": "/proc", "/hostfs/sys": "/sys", "/hostfs/dev": "/dev", "/etc/machine-id": "/etc/machine-id"}
	for path, hostPath := range hostMounts {
		m, ok := mounts[path]
		if !assert.True(t, ok, "no mount at %s", path) {
			continue
		}
		assert.True(t, m.ReadOnly, "%s must be read-only", path)
		v := volumes[m.Name]
		if assert.NotNil(t, v.HostPath, "%s is not a hostPath", path) {
			assert.Equal(t, hostPath, v.HostPath.Path, path)
		}
	}
	// The sending queues' state directory (file_storage) is the node's, writable, at the path the
	// config uses: it outlives the pod.
	stateMount, ok := mounts[stateDir]
	if assert.True(t, ok, "no mount at %s", stateDir) {
		assert.False(t, stateMount.ReadOnly, "%s must be writable", stateDir)
		if v := volumes[stateMount.Name]; assert.NotNil(t, v.HostPath, "%s is not a hostPath", stateDir) {
			// Each profile's own: file_storage locks its files, so two pods of a node never share them.
			assert.True(t, strings.HasPrefix(v.HostPath.Path, stateDir), v.HostPath.Path)
			require.NotNil(t, v.HostPath.Type)
			assert.Equal(t, corev1.HostPathDirectoryOrCreate, *v.HostPath.Type)
		}
	}

	// Without propagation a filesystem mounted on the host after the pod started would be invisible,
	// and statfs would measure the parent filesystem instead.
	require.NotNil(t, mounts["/hostfs"].MountPropagation)
	assert.Equal(t, corev1.MountPropagationHostToContainer, *mounts["/hostfs"].MountPropagation)

	// The config comes from the ConfigMap, at the path the container's args name.
	var cm corev1.ConfigMap
	decodeStrict(t, configMapFile, &cm)
	cfgMount, ok := mounts["/etc/otelcol"]
	require.True(t, ok, "no config mount")
	require.NotNil(t, volumes[cfgMount.Name].ConfigMap)
	assert.Equal(t, cm.Name, volumes[cfgMount.Name].ConfigMap.Name)
	assert.Contains(t, c.Args, "--config=/etc/otelcol/"+configKey)

	// The persistent queue of every exporter with one is file_storage, in the mounted state directory.
	assert.Contains(t, cm.Data[configKey], "directory: ${env:DISKHEALTH_STATE_DIR:-"+stateDir+"}")
	assert.Contains(t, cm.Data[configKey], "storage: file_storage")

	// Every ${env:X} the collector config uses without a default is set in the pod.
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for _, name := range requiredEnv(t, cm.Data[configKey]) {
		assert.Contains(t, env, name, "config/kubernetes.yaml needs ${env:%s}", name)
	}
	if assert.Contains(t, env, "K8S_NODE_NAME") && assert.NotNil(t, env["K8S_NODE_NAME"].ValueFrom) {
		assert.Equal(t, "spec.nodeName", env["K8S_NODE_NAME"].ValueFrom.FieldRef.FieldPath)
	}
	assert.Contains(t, env["OTEL_RESOURCE_ATTRIBUTES"].Value, "host.name=$(K8S_NODE_NAME)")

	// Probes on the health_check extension's port.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	assert.Equal(t, int32(13133), ports["health"])
	assert.Equal(t, int32(9464), ports["metrics"])
	assert.Contains(t, cm.Data[configKey], "endpoint: ${env:POD_IP}:13133")
	for name, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if !assert.NotNil(t, probe, name) || !assert.NotNil(t, probe.HTTPGet, name) {
			continue
		}
		assert.Equal(t, intstr.FromString("health"), probe.HTTPGet.Port, name)
		assert.Equal(t, "/", probe.HTTPGet.Path, name)
	}

	// Requests and limits for CPU and memory; requests not above limits.
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := c.Resources.Requests[res]
		lim, okLim := c.Resources.Limits[res]
		if assert.True(t, okReq, "request %s", res) && assert.True(t, okLim, "limit %s", res) {
			assert.LessOrEqual(t, req.Cmp(lim), 0, "%s request above limit", res)
		}
	}

	// Capabilities instead of privileged: everything dropped, only the profile's added back (the BPF
	// probe's two; SMART's and the stack's two).
	sc := c.SecurityContext
	require.NotNil(t, sc)
	require.NotNil(t, sc.Privileged)
	assert.False(t, *sc.Privileged)
	require.NotNil(t, sc.ReadOnlyRootFilesystem)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	require.NotNil(t, sc.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	added := slices.Clone(sc.Capabilities.Add)
	slices.Sort(added)
	assert.Equal(t, caps, added)
	if escalation {
		// The API server rejects allowPrivilegeEscalation=false with CAP_SYS_ADMIN.
		if sc.AllowPrivilegeEscalation != nil {
			assert.True(t, *sc.AllowPrivilegeEscalation)
		}
	} else {
		require.NotNil(t, sc.AllowPrivilegeEscalation)
		assert.False(t, *sc.AllowPrivilegeEscalation)
		assert.NotContains(t, added, corev1.Capability("SYS_ADMIN"))
	}
	require.NotNil(t, sc.SeccompProfile)
	assert.Equal(t, seccomp, sc.SeccompProfile.Type)
}

// requiredEnv lists the ${env:NAME} references of a collector config that have no :- default.
func requiredEnv(t *testing.T, config string) []string {
	t.Helper()
	var out []string
	for rest := config; ; {
		i := strings.Index(rest, "${env:")
		if i < 0 {
			break
		}
		rest = rest[i+len("${env:"):]
		end := strings.IndexByte(rest, '}')
		require.GreaterOrEqual(t, end, 0, "unterminated ${env:")
		ref := rest[:end]
		if !strings.Contains(ref, ":-") {
			out = append(out, ref)
		}
	}
	return out
}

func TestRequiredEnv(t *testing.T) {
	assert.Equal(t, []string{"A", "C"}, requiredEnv(t, "x: ${env:A}\ny: ${env:B:-1}\nz: ${env:C}:9\n"))
	assert.Empty(t, requiredEnv(t, "plain: value\n"))
}

func TestManifestsAreKubernetesObjects(t *testing.T) {
	// Every manifest in kubernetes/ is one of the objects tested above, so kubectl apply -f on the
	// folder creates exactly these.
	files, err := filepath.Glob("kubernetes/*.yaml")
	require.NoError(t, err)
	var kinds []string
	for _, f := range files {
		var meta struct {
			Kind string `json:"kind"`
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, yaml.Unmarshal(data, &meta), f)
		kinds = append(kinds, meta.Kind)
	}
	slices.Sort(kinds)
	assert.Equal(t, []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet", "DaemonSet", "ServiceAccount"}, kinds)
}

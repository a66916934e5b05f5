package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// configEnv is what a user sets for the shipped configs' required ${env:X} (each config's header
// documents its own); placeholders are enough for validate, which does not connect.
var configEnv = map[string]string{
	"ELASTICSEARCH_ENDPOINT":           "https://elasticsearch.invalid:9200",
	"ELASTICSEARCH_API_KEY":            "aWQ6a2V5",
	"ELASTIC_OTLP_ENDPOINT":            "https://otlp.invalid:443",
	"ELASTIC_API_KEY":                  "aWQ6a2V5",
	"POD_IP":                           "127.0.0.1",
	"DISKHEALTH_REMOTE_WRITE_ENDPOINT": "https://mimir.invalid/api/v1/push",
	// No ${env:} reference: config/kubernetes.yaml's k8s_attributes reads it (filter.node_from_env_var).
	"K8S_NODE_NAME": "node-a",
}

// requiredEnvRefs lists the ${env:NAME} references of a config that have no :- default.
func requiredEnvRefs(config string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`).FindAllStringSubmatch(config, -1) {
		if m[2] == "" && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

func TestRequiredEnvRefs(t *testing.T) {
	assert.Equal(t, []string{"A", "C"}, requiredEnvRefs("x: ${env:A}\ny: ${env:B:-1}\nz: ${env:C}:9 ${env:A}\n"))
	assert.Empty(t, requiredEnvRefs("plain: value\n"))
}

// TestShippedConfigsValidate runs `otelcol-diskhealth validate` on every config in config/. The
// Kubernetes config points root_path at /hostfs, which exists only in the pod: it is validated in a
// chroot laid out like the pod (the binary, the config, /proc and an empty /hostfs).
func TestShippedConfigsValidate(t *testing.T) {
	bin := collectorBinary(t)
	files, err := filepath.Glob(filepath.Join("..", "config", "*.yaml"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	for _, want := range []string{"default.yaml", "elasticsearch.yaml", "elastic-otlp.yaml", "datadog.yaml", "prometheus.yaml", "kubernetes.yaml"} {
		assert.Contains(t, names, want)
	}
	for k, v := range configEnv {
		t.Setenv(k, v)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, ref := range requiredEnvRefs(string(data)) {
				assert.Contains(t, configEnv, ref, "the config needs ${env:%s}: document it in its header and add it here", ref)
			}
			if !strings.Contains(string(data), "root_path: /hostfs") {
				out, err := exec.Command(bin, "validate", "--config", f).CombinedOutput()
				assert.NoError(t, err, "%s", out)
				return
			}
			testkit.RequireRoot(t, "validating a /hostfs config (in a chroot)")
			root := t.TempDir()
			require.NoError(t, os.Chmod(root, 0o755))
			for _, dir := range []string{"hostfs", "proc", "etc/otelcol"} {
				require.NoError(t, os.MkdirAll(filepath.Join(root, dir), 0o755))
			}
			require.NoError(t, os.Link(bin, filepath.Join(root, "otelcol-diskhealth")))
			require.NoError(t, os.WriteFile(filepath.Join(root, "etc/otelcol/config.yaml"), data, 0o644))
			// The container runtime mounts /proc (memory_limiter reads the cgroup limit through it).
			validate := func() ([]byte, error) {
				return exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
					`mount -t proc proc "$1/proc" && exec chroot "$1" /otelcol-diskhealth validate --config /etc/otelcol/config.yaml`,
					"sh", root).CombinedOutput()
			}
			out, err := validate()
			assert.NoError(t, err, "%s", out)

			// And without /hostfs, validate says what is missing.
			require.NoError(t, os.Remove(filepath.Join(root, "hostfs")))
			out, err = validate()
			require.Error(t, err)
			assert.Contains(t, string(out), `root_path: "/hostfs"`)
		})
	}
}

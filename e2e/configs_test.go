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

// collectorArch is a built collector and how to run it: natively, or the arm64 build under
// qemu-user-static (its emulator is static, so it also runs inside a chroot).
type collectorArch struct {
	name, bin, emulator string
}

func (c collectorArch) command(args ...string) *exec.Cmd {
	if c.emulator == "" {
		return exec.Command(c.bin, args...)
	}
	return exec.Command(c.emulator, append([]string{c.bin}, args...)...)
}

// arm64Collector is the arm64 binary `make image` built (DISKHEALTH_OTELCOL_ARM64 from `make test`).
// Without it the test skips, unless make named it or it runs in CI.
func arm64Collector(t *testing.T) collectorArch {
	t.Helper()
	bin, fromEnv := os.LookupEnv("DISKHEALTH_OTELCOL_ARM64")
	if !fromEnv || bin == "" {
		bin = filepath.Join("..", "_build", "image", "linux", "arm64", "otelcol-diskhealth")
	}
	emu, err := exec.LookPath("qemu-aarch64-static")
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		if fromEnv {
			t.Fatalf("DISKHEALTH_OTELCOL_ARM64=%s: %v", bin, err)
		}
		testkit.Unavailable(t, "the arm64 collector or qemu-user-static is missing (%v); `make test` builds and installs them", err)
	}
	return collectorArch{name: "arm64", bin: bin, emulator: emu}
}

// TestArm64Collector is the arm64 image binary's smoke run under qemu-user-static: it starts, says its
// version, and lists this distribution's components.
func TestArm64Collector(t *testing.T) {
	c := arm64Collector(t)
	out, err := c.command("--version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "otelcol-diskhealth version 0.1.0")
	out, err = c.command("components").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, want := range []string{"name: disk_health", "name: prometheus", "name: elasticsearch", "name: k8s_attributes"} {
		assert.Contains(t, string(out), want)
	}
}

// TestShippedConfigsValidate runs `otelcol-diskhealth validate` on every config in config/, with the
// native build and with the arm64 build under qemu-user-static. The Kubernetes config points
// root_path at /hostfs, which exists only in the pod: it is validated in a chroot laid out like the
// pod (the binary, the config, /proc and an empty /hostfs).
func TestShippedConfigsValidate(t *testing.T) {
	collectors := []collectorArch{{name: "native", bin: collectorBinary(t)}}
	if c, ok := optional(t, arm64Collector); ok {
		collectors = append(collectors, c)
	}
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
	for _, c := range collectors {
		for _, f := range files {
			t.Run(c.name+"/"+filepath.Base(f), func(t *testing.T) {
				data, err := os.ReadFile(f)
				require.NoError(t, err)
				for _, ref := range requiredEnvRefs(string(data)) {
					assert.Contains(t, configEnv, ref, "the config needs ${env:%s}: document it in its header and add it here", ref)
				}
				if !strings.Contains(string(data), "root_path: /hostfs") {
					out, err := c.command("validate", "--config", f).CombinedOutput()
					assert.NoError(t, err, "%s", out)
					return
				}
				testkit.RequireRoot(t, "validating a /hostfs config (in a chroot)")
				root := t.TempDir()
				require.NoError(t, os.Chmod(root, 0o755))
				for _, dir := range []string{"hostfs", "proc", "etc/otelcol"} {
					require.NoError(t, os.MkdirAll(filepath.Join(root, dir), 0o755))
				}
				in := collectorArch{name: c.name, bin: "/otelcol-diskhealth"}
				copyExecutable(t, c.bin, filepath.Join(root, "otelcol-diskhealth"))
				if c.emulator != "" {
					in.emulator = "/qemu-static"
					copyExecutable(t, c.emulator, filepath.Join(root, "qemu-static"))
				}
				require.NoError(t, os.WriteFile(filepath.Join(root, "etc/otelcol/config.yaml"), data, 0o644))
				// The container runtime mounts /proc (memory_limiter reads the cgroup limit through it).
				validate := func() ([]byte, error) {
					argv := in.command("validate", "--config", "/etc/otelcol/config.yaml").Args
					return exec.Command("unshare", append([]string{"-m", "--propagation", "private", "sh", "-c",
						`root=$1; shift; mount -t proc proc "$root/proc" && exec chroot "$root" "$@"`, "sh", root}, argv...)...).CombinedOutput()
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
}

// optional runs get in a subtest of its own so that its skip does not skip the caller; ok is false
// when it skipped.
func optional[T any](t *testing.T, get func(*testing.T) T) (v T, ok bool) {
	t.Helper()
	t.Run("build present", func(t *testing.T) { v, ok = get(t), true })
	return v, ok
}

func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, data, 0o755))
}

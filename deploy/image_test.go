package deploy

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The images `make image` (deploy/image.sh) builds with buildah: a manifest list per target, each
// holding one image per architecture, tagged <list>-<arch> as well.
var (
	imageArches  = []string{"amd64", "arm64"}
	imageTargets = map[string]string{"": "10001:10001", "-smart": "0:0"} // tag suffix -> USER
	elfMachine   = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
)

// imageFiles is every regular file an image holds: the binary, the CA bundle, the drive database and
// the config it runs. Nothing else (no shell, no package database).
var imageFiles = []string{
	"etc/otelcol/config.yaml",
	"etc/ssl/certs/ca-certificates.crt",
	"otelcol-diskhealth",
	"usr/share/smartmontools/drivedb.h",
}

// imageName is the manifest list `make image` built (DISKHEALTH_IMAGE from `make test`, else the
// name image.sh gives it). Without it the test skips, unless make named it.
func imageName(t *testing.T) string {
	t.Helper()
	name, fromEnv := os.LookupEnv("DISKHEALTH_IMAGE")
	if !fromEnv || name == "" {
		name = defaultImage(t)
	}
	if _, err := exec.LookPath("podman"); err != nil {
		if fromEnv {
			t.Fatalf("DISKHEALTH_IMAGE=%s but podman is missing: %v", name, err)
		}
		unavailable(t, "podman is missing; `make test` builds the image and installs it")
	}
	if err := exec.Command("podman", "image", "exists", name).Run(); err != nil {
		if fromEnv {
			t.Fatalf("DISKHEALTH_IMAGE=%s is not in podman's storage: %v", name, err)
		}
		unavailable(t, "%s is not built; `make image` builds it", name)
	}
	return name
}

// unavailable ends a test that cannot have what it needs by the kit's CI rule (internal/testkit.Unavailable;
// this module stands apart): in CI (CI set to anything but a false value) a failure, elsewhere a loud skip.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if v := os.Getenv("CI"); v != "" {
		if ci, err := strconv.ParseBool(v); err != nil || ci {
			t.Fatalf("%s (in CI a peer that cannot be had fails the test)", msg)
		}
	}
	t.Skipf("SKIPPED: %s", msg)
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), stderr.String())
	return out
}

// imageConfig is what `podman image inspect` says of one image.
type imageConfig struct {
	Architecture string
	Os           string
	Size         int64
	Config       struct {
		User         string
		Env          []string
		Entrypoint   []string
		Cmd          []string
		ExposedPorts map[string]struct{}
	}
}

func inspectImage(t *testing.T, ref string) imageConfig {
	t.Helper()
	var out []imageConfig
	require.NoError(t, json.Unmarshal(run(t, "podman", "image", "inspect", ref), &out))
	require.Len(t, out, 1)
	return out[0]
}

// exportImage returns the regular files of ref's root filesystem (path without the leading /).
func exportImage(t *testing.T, ref string) map[string][]byte {
	t.Helper()
	// A scratch image has no command to run: create never starts it.
	id := strings.TrimSpace(string(run(t, "podman", "create", ref)))
	defer func() { _ = exec.Command("podman", "rm", "-f", id).Run() }()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(run(t, "podman", "export", id)))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[strings.TrimPrefix(h.Name, "/")] = b
	}
	return files
}

// TestImageManifest checks the images `make image` built: both architectures in each manifest list,
// each image's user, entrypoint, environment and ports, exactly the files it must hold, a static binary
// of its own architecture, and the sizes docs/deployment.md states.
func TestImageManifest(t *testing.T) {
	list := imageName(t)
	cfg, err := os.ReadFile("../config/prometheus.yaml")
	require.NoError(t, err)
	sizes := documentedSizes(t)
	for suffix, user := range imageTargets {
		var ml struct {
			Manifests []struct {
				Platform struct{ Architecture, OS string }
			}
		}
		require.NoError(t, json.Unmarshal(run(t, "buildah", "manifest", "inspect", list+suffix), &ml))
		var platforms []string
		for _, m := range ml.Manifests {
			platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
		}
		slices.Sort(platforms)
		assert.Equal(t, []string{"linux/amd64", "linux/arm64"}, platforms, list+suffix)

		for _, arch := range imageArches {
			ref := list + suffix + "-" + arch
			t.Run(strings.TrimPrefix(suffix+"-"+arch, "-"), func(t *testing.T) {
				img := inspectImage(t, ref)
				assert.Equal(t, arch, img.Architecture)
				assert.Equal(t, "linux", img.Os)
				assert.Equal(t, user, img.Config.User)
				assert.Equal(t, []string{"/otelcol-diskhealth"}, img.Config.Entrypoint)
				assert.Equal(t, []string{"--config=/etc/otelcol/config.yaml"}, img.Config.Cmd)
				assert.Contains(t, img.Config.Env, "DISKHEALTH_ROOT_PATH=/hostfs")
				assert.Contains(t, img.Config.ExposedPorts, "9464/tcp")
				assert.Contains(t, img.Config.ExposedPorts, "13133/tcp")
				// Every ${env:X} without a default that the config needs is set by the image.
				for _, name := range requiredEnv(t, string(cfg)) {
					assert.True(t, slices.ContainsFunc(img.Config.Env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") }),
						"the image sets no %s", name)
				}

				files := exportImage(t, ref)
				assert.Equal(t, imageFiles, slices.Sorted(maps.Keys(files)))
				assert.Equal(t, string(cfg), string(files["etc/otelcol/config.yaml"]))
				assert.Contains(t, string(files["usr/share/smartmontools/drivedb.h"]), "{ \"", "a drive database")
				bin, err := elf.NewFile(bytes.NewReader(files["otelcol-diskhealth"]))
				require.NoError(t, err)
				assert.Equal(t, elfMachine[arch], bin.Machine)
				for _, p := range bin.Progs {
					assert.NotEqual(t, elf.PT_INTERP, p.Type, "the binary must be static: a scratch image has no loader")
				}

				want, ok := sizes[arch]
				require.True(t, ok, "docs/deployment.md states no size for %s", arch)
				assert.InEpsilon(t, want, float64(img.Size)/(1<<20), 0.05,
					"docs/deployment.md says %.1f MiB for %s; the image is %.1f MiB", want, arch, float64(img.Size)/(1<<20))
			})
		}
	}
}

// documentedSizes reads the image sizes (MiB, by architecture) from docs/deployment.md's table, whose
// rows are "| linux/<arch> | <n> MiB |".
func documentedSizes(t *testing.T) map[string]float64 {
	t.Helper()
	doc, err := os.ReadFile("../docs/deployment.md")
	require.NoError(t, err)
	out := map[string]float64{}
	for _, m := range regexp.MustCompile(`(?m)^\| linux/(\w+) \| ([0-9.]+) MiB \|`).FindAllStringSubmatch(string(doc), -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		out[m[1]] = v
	}
	return out
}

// TestImageRunsUnderPodman runs the default image for real, under podman with runc, as the command in
// docs/deployment.md does: non-root (the image's USER), every capability dropped, a read-only root, the
// host's / at /hostfs read-only. The Prometheus endpoint must serve this host's disks and root filesystem, and
// the latency source, which a non-root uid cannot run, says so in one line.
func TestImageRunsUnderPodman(t *testing.T) {
	ref := imageName(t) + "-amd64"
	if os.Geteuid() != 0 {
		unavailable(t, "podman here runs as root; run `make test` as root (CI does)")
	}
	promAddr, healthAddr := freeAddr(t), freeAddr(t)
	name := fmt.Sprintf("diskhealth-test-%d", os.Getpid())
	// podman needs runc here (crun refuses the hybrid cgroup hierarchy) and limits within this sandbox's.
	args := []string{"run", "-d", "--name", name, "--runtime", "runc",
		"--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096",
		"--network", "host", "--cap-drop", "ALL", "--read-only",
		"-v", "/:/hostfs:ro,rslave",
		"-e", "DISKHEALTH_PROMETHEUS_ENDPOINT=" + promAddr, "-e", "DISKHEALTH_HEALTH_ENDPOINT=" + healthAddr,
		// Arguments after the image replace CMD: the config, and no telemetry listener of the
		// collector's own to collide with other collectors the tests run at the same time.
		ref, "--config=/etc/otelcol/config.yaml", "--set=service.telemetry.metrics.level=none"}
	run(t, "podman", args...)
	logs := func() string {
		out, _ := exec.Command("podman", "logs", name).CombinedOutput()
		return string(out)
	}
	defer func() {
		if t.Failed() {
			t.Logf("collector output:\n%s", logs())
		}
		_ = exec.Command("podman", "rm", "-f", "-t", "5", name).Run()
	}()

	var statfs syscall.Statfs_t
	require.NoError(t, syscall.Statfs("/", &statfs))
	wantLimit := float64(statfs.Blocks) * float64(statfs.Frsize)
	limitRe := regexp.MustCompile(`(?m)^system_filesystem_limit_bytes\{[^}]*system_filesystem_mountpoint="/"[^}]*\} (\S+)$`)
	ioRe := regexp.MustCompile(`(?m)^system_disk_io_bytes_total\{[^}]*system_device="[^"]+"`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		body := scrape(promAddr)
		if m := limitRe.FindStringSubmatch(body); m != nil && ioRe.MatchString(body) {
			got, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err)
			// The root filesystem measured through /hostfs as the image's non-root user is the host's.
			require.Equal(t, wantLimit, got)
			break
		}
		state, _ := exec.Command("podman", "inspect", "--format", "{{.State.Status}}", name).Output()
		if s := strings.TrimSpace(string(state)); s != "running" {
			t.Fatalf("the container is %s", s)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no disk I/O and / filesystem series within 60 s; last scrape:\n%s", body)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var latency []string
	for _, line := range strings.Split(logs(), "\n") {
		if strings.Contains(line, "latency") {
			latency = append(latency, line)
		}
	}
	require.Len(t, latency, 1, "one line about the latency source:\n%s", strings.Join(latency, "\n"))
	require.Contains(t, latency[0], "lacks CAP_BPF, CAP_PERFMON")
	resp, err := http.Get("http://" + healthAddr + "/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "health_check")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

func scrape(addr string) string {
	return scrapeWith(&http.Client{Timeout: 2 * time.Second}, addr)
}

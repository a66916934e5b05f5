package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// thirdPartyVersion is the version the module is served under: a release tag, as users write it, made
// unique per run. The go command keeps a version it has extracted in the machine's module cache for
// good, so a fixed v0.1.0 served the code of the first run that ever zipped it (the old metric names
// after every rename since).
var thirdPartyVersion = fmt.Sprintf("v0.1.0-e2e.%d", time.Now().UnixNano())

// thirdPartyManifest is a user's own distribution (docs/configuration.md "Add disk_health to your own collector"):
// disk_health beside hostmetrics, k8sattributes, prometheus and otlp from the same collector release
// (k8sattributes v0.160.0 is the newest the module proxy serves here). No `replaces:` line names our
// module: it resolves through a module proxy, as a published release does.
const thirdPartyManifest = `dist:
  module: example.com/mycollector
  name: mycollector
  description: a user's own collector
  version: 1.0.0
  output_path: %s

receivers:
  - gomod: github.com/diskhealth/diskhealth %s
    import: github.com/diskhealth/diskhealth/receiver/diskhealthreceiver
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/receiver/hostmetricsreceiver v0.165.1
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v0.165.0

processors:
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/processor/k8sattributesprocessor v0.160.0

exporters:
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter v0.165.1
  - gomod: go.opentelemetry.io/collector/exporter/otlpexporter v0.165.0

providers:
  - gomod: go.opentelemetry.io/collector/confmap/provider/envprovider v1.71.0
  - gomod: go.opentelemetry.io/collector/confmap/provider/fileprovider v1.71.0
  - gomod: go.opentelemetry.io/collector/confmap/provider/yamlprovider v1.71.0

# k8sattributes v0.160.0 pulls in the old monolithic collector module, whose internal/statusutil clashes
# with the split-out one at v0.165.0 (the same line as in this repository's builder-config.yaml).
replaces:
  - go.opentelemetry.io/collector => go.opentelemetry.io/collector v0.165.0
`

// zipProgram writes this repository's module as a module proxy serves it, with the go command's own
// rules (golang.org/x/mod/zip, which refuses what `go get` would refuse: a path with ':', a file past
// the size limits …): <proxy>/github.com/diskhealth/diskhealth/@v/{list,<v>.info,<v>.mod,<v>.zip}.
const zipProgram = `package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	repo, proxy, version := os.Args[1], os.Args[2], os.Args[3]
	mv := module.Version{Path: "github.com/diskhealth/diskhealth", Version: version}
	dir := filepath.Join(proxy, mv.Path, "@v")
	must(os.MkdirAll(dir, 0o755))
	f, err := os.Create(filepath.Join(dir, version+".zip"))
	must(err)
	must(zip.CreateFromDir(f, mv, repo))
	must(f.Close())
	mod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	must(err)
	must(os.WriteFile(filepath.Join(dir, version+".mod"), mod, 0o644))
	info := fmt.Sprintf("{\"Version\":%q,\"Time\":%q}\n", version, time.Now().UTC().Format(time.RFC3339))
	must(os.WriteFile(filepath.Join(dir, version+".info"), []byte(info), 0o644))
	must(os.WriteFile(filepath.Join(dir, "list"), []byte(version+"\n"), 0o644))
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

// TestThirdPartyDistribution builds a third-party ocb manifest holding disk_health beside contrib's
// components, with our module fetched through a module proxy (a file:// one made from this working
// tree, in front of the usual one) and no replace directive, then validates and runs its collector
// with disk_health configured until disk_health's metrics reach the Prometheus exporter.
func TestThirdPartyDistribution(t *testing.T) {
	ocb, err := filepath.Abs(filepath.Join("..", ".tools", "ocb"))
	require.NoError(t, err)
	if _, err := os.Stat(ocb); err != nil {
		testkit.Unavailable(t, "ocb is missing (%v): `make build` installs it", err)
	}
	repo, err := filepath.Abs("..")
	require.NoError(t, err)
	work := t.TempDir()
	proxy := filepath.Join(work, "proxy")

	upstream, err := exec.Command("go", "env", "GOPROXY").Output()
	require.NoError(t, err)
	env := append(os.Environ(),
		"GOPROXY=file://"+proxy+","+strings.TrimSpace(string(upstream)),
		// Not published, so not in the checksum database: its hash is taken as served.
		"GONOSUMDB=github.com/diskhealth/diskhealth", "GOFLAGS=-mod=mod", "GOWORK=off")
	run := func(timeout time.Duration, dir string, name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	zipper := filepath.Join(work, "zipper")
	require.NoError(t, os.MkdirAll(zipper, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(zipper, "main.go"), []byte(zipProgram), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(zipper, "go.mod"), []byte("module zipper\n\ngo 1.26.0\n\nrequire golang.org/x/mod v0.39.0\n"), 0o644))
	if out, err := run(5*time.Minute, zipper, "go", "mod", "tidy"); err != nil {
		testkit.Unavailable(t, "golang.org/x/mod cannot be had: %v\n%s", err, out)
	}
	out, err := run(5*time.Minute, zipper, "go", "run", ".", repo, proxy, thirdPartyVersion)
	require.NoError(t, err, "the module as the go command would zip it:\n%s", out)

	build := filepath.Join(work, "build")
	manifest := fmt.Sprintf(thirdPartyManifest, build, thirdPartyVersion)
	require.NotContains(t, manifest, "github.com/diskhealth/diskhealth =>")
	require.NoError(t, os.WriteFile(filepath.Join(work, "manifest.yaml"), []byte(manifest), 0o644))
	// ocb writes the sources and go.mod, then fails in its own `go mod tidy`: a test dependency of one
	// of hostmetrics' scrapers is not served here (env-facts). `go mod tidy -e` and `go build` finish it,
	// as `make build-hostmetrics` does; any other ocb failure shows in the build below.
	out, ocbErr := run(20*time.Minute, work, ocb, "--config", "manifest.yaml", "--skip-strict-versioning")
	t.Logf("ocb: %v\n%s", ocbErr, lastLines(out, 20))
	out, err = run(10*time.Minute, build, "go", "mod", "tidy", "-e")
	require.NoError(t, err, "%s", out)
	gomod, err := os.ReadFile(filepath.Join(build, "go.mod"))
	require.NoError(t, err)
	require.Contains(t, string(gomod), "github.com/diskhealth/diskhealth "+thirdPartyVersion)
	require.NotContains(t, string(gomod), "github.com/diskhealth/diskhealth =>", "no replace directive for our module")
	out, err = run(20*time.Minute, build, "go", "build", "-trimpath", "-o", "mycollector", ".")
	require.NoError(t, err, "%s", out)
	bin := filepath.Join(build, "mycollector")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	config := fmt.Sprintf(`receivers:
  disk_health:
    collection_interval: 1s
  hostmetrics:
    collection_interval: 1s
    scrapers:
      disk:
processors:
  k8s_attributes:
    passthrough: true
exporters:
  prometheus:
    endpoint: %s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [disk_health, hostmetrics]
      processors: [k8s_attributes]
      exporters: [prometheus]
`, addr)
	cfgPath := filepath.Join(work, "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(config), 0o644))
	out, err = run(time.Minute, work, bin, "validate", "--config", cfgPath)
	require.NoError(t, err, "validate:\n%s", out)

	c := startCollector(t, bin, config)
	deadline := time.Now().Add(60 * time.Second)
	for {
		body, err := scrapeText("http://" + addr + "/metrics")
		if err == nil && strings.Contains(body, "disk_health_disk_utilization") && strings.Contains(body, "system_disk_io") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no disk_health metric on the Prometheus exporter within 60 s (last error %v); last scrape:\n%s\ncollector output:\n%s", err, lastLines(body, 40), c.output.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func scrapeText(url string) (string, error) {
	resp, err := http.Get(url) //nolint:gosec,noctx // a loopback address the test chose
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// lastLines is the end of a long output.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

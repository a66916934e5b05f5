package deploy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestImageLayoutRuns stands in for `docker run` of the default image, which needs an engine this
// machine lacks: the built collector runs in a root holding only what the Dockerfile's final stage
// copies from the build context, as the image's USER, with the image's ENV and ENTRYPOINT/CMD, the host's
// / bind-mounted read-only at /hostfs (docker run -v /:/hostfs:ro,rslave), and /proc, /sys (read-only),
// /dev and /etc/hosts as the engine provides them. The Prometheus endpoint must then serve this host's disk and
// root filesystem. Needs root (mount namespace, chroot) and the built collector.
func TestImageLayoutRuns(t *testing.T) {
	bin := builtCollector(t)
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: emulating the image needs root (unshare -m, mount, chroot)")
	}
	img := loadImage(t, "")
	uid, gid := uidOf(t, img.user)

	root := t.TempDir()
	require.NoError(t, os.Chmod(root, 0o755))
	for dst, src := range img.copies {
		if src == buildOutput(t) {
			src = bin
		} else {
			src = filepath.Join("..", src)
		}
		copyFile(t, src, filepath.Join(root, dst))
	}
	for _, dir := range []string{"hostfs", "proc", "sys", "dev", "etc"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, dir), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc", "hosts"), []byte("127.0.0.1\tlocalhost\n::1\tlocalhost\n"), 0o644))

	// `docker run -e` overrides for the listen addresses: this test shares the host's network.
	promAddr, healthAddr := freeAddr(t), freeAddr(t)
	env := []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	for k, v := range img.env {
		switch k {
		case "DISKHEALTH_PROMETHEUS_ENDPOINT":
			v = promAddr
		case "DISKHEALTH_HEALTH_ENDPOINT":
			v = healthAddr
		}
		env = append(env, k+"="+v)
	}
	// Arguments appended to `docker run IMAGE` replace CMD; the collector's own telemetry listener is
	// switched off so that it does not collide with other collectors the tests run at the same time.
	argv := append(append([]string{}, img.entrypoint...), img.cmd...)
	argv = append(argv, "--set=service.telemetry.metrics.level=none")
	script := fmt.Sprintf(`set -e
mount --rbind / %[1]s/hostfs
mount -o remount,bind,ro %[1]s/hostfs
mount --make-rslave %[1]s/hostfs
mount -t proc proc %[1]s/proc
mount -t sysfs -o ro sysfs %[1]s/sys
mount --rbind /dev %[1]s/dev
exec chroot --userspec=%[2]d:%[3]d %[1]s "$@"`, root, uid, gid)
	logPath := filepath.Join(t.TempDir(), "collector.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()
	cmd := exec.Command("unshare", append([]string{"-m", "--propagation", "private", "sh", "-c", script, "sh"}, argv...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logFile, logFile
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	defer func() {
		stop()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("collector output:\n%s", out)
		}
	}()

	var statfs syscall.Statfs_t
	require.NoError(t, syscall.Statfs("/", &statfs))
	wantLimit := float64(statfs.Blocks) * float64(statfs.Frsize)
	limitRe := regexp.MustCompile(`(?m)^system_filesystem_limit_bytes\{[^}]*system_filesystem_mountpoint="/"[^}]*\} (\S+)$`)
	ioRe := regexp.MustCompile(`(?m)^system_disk_io_bytes_total\{[^}]*system_device="[^"]+"`)

	deadline := time.Now().Add(30 * time.Second)
	var body string
	for {
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("the collector exited in the image layout: %v", err)
		case <-time.After(500 * time.Millisecond):
		}
		body = scrape(promAddr)
		if m := limitRe.FindStringSubmatch(body); m != nil && ioRe.MatchString(body) {
			got, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err)
			// The root filesystem measured through /hostfs as the image's non-root user is the host's.
			require.Equal(t, wantLimit, got)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no disk I/O and / filesystem series within 30 s; last scrape:\n%s", body)
		}
	}
	// The non-root image has no CAP_BPF/CAP_PERFMON: the latency source says so in one line and the
	// rest works (above).
	out, err := os.ReadFile(logPath)
	require.NoError(t, err)
	var latency []string
	for _, line := range strings.Split(string(out), "\n") {
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

// builtCollector finds the collector `make build` wrote (DISKHEALTH_OTELCOL from `make test`, else
// ../_build); without it the test skips, unless make named it.
func builtCollector(t *testing.T) string {
	t.Helper()
	p, fromEnv := os.LookupEnv("DISKHEALTH_OTELCOL")
	if !fromEnv || p == "" {
		p = filepath.Join("..", buildOutput(t))
	}
	if _, err := os.Stat(p); err != nil {
		if fromEnv {
			t.Fatalf("DISKHEALTH_OTELCOL=%s: %v", p, err)
		}
		t.Skipf("SKIPPED: the built collector is missing (%v); `make test` builds it", err)
	}
	return p
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	fi, err := in.Stat()
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm()|0o444)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, errors.Join(err, out.Close()))
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

func scrape(addr string) string {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b))
}

package deploy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// containerd is a containerd daemon of the test's own (its root, state and socket in a temporary
// directory, the CRI plugin off), talked to with ctr.
type containerd struct {
	sock, ns string
}

func startContainerd(t *testing.T) *containerd {
	t.Helper()
	if _, err := exec.LookPath("containerd"); err != nil {
		run(t, "sh", "-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends containerd >/dev/null")
	}
	// Unix socket paths are short: not under t.TempDir(), whose name holds the test's.
	dir, err := os.MkdirTemp("", "ctrd")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &containerd{sock: filepath.Join(dir, "sock"), ns: "diskhealth"}
	conf := fmt.Sprintf("version = 2\nroot = %q\nstate = %q\n[grpc]\n  address = %q\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  disable = true\n",
		filepath.Join(dir, "root"), filepath.Join(dir, "state"), c.sock)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o600))
	logf, err := os.Create(filepath.Join(dir, "log"))
	require.NoError(t, err)
	cmd := exec.Command("containerd", "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(unix.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logf.Close()
	})
	deadline := time.Now().Add(30 * time.Second)
	for exec.Command("ctr", "-a", c.sock, "version").Run() != nil {
		require.True(t, time.Now().Before(deadline), "containerd did not answer within 30 s")
		time.Sleep(200 * time.Millisecond)
	}
	return c
}

func (c *containerd) ctr(t *testing.T, args ...string) []byte {
	t.Helper()
	return run(t, "ctr", append([]string{"-a", c.sock, "-n", c.ns}, args...)...)
}

// importImage copies ref from podman's storage into containerd's (an OCI archive, as a registry-less
// node would load it).
func (c *containerd) importImage(t *testing.T, ref string) {
	t.Helper()
	archive := filepath.Join(t.TempDir(), "image.tar")
	run(t, "podman", "save", "--format", "oci-archive", "-o", archive, ref)
	c.ctr(t, "image", "import", archive)
}

// podContainer is one container of a pod spec as the kubelet would run it, as far as a node without a
// kubelet can: each runtime renders it as its own flags.
type podContainer struct {
	capDrop, capAdd []string // capability names without CAP_
	readOnly        bool     // read-only root filesystem
	seccompDefault  bool     // the runtime's default seccomp profile (RuntimeDefault); else Unconfined
	user            string   // runAsUser:runAsGroup
	env             []string // NAME=value, in order
	mounts          []mount
	command         []string // the container's command: empty for the image's ENTRYPOINT
	argv            []string // the container's args
	podEnv          map[string]string
}

// mount is a bind mount of a host path (or a directory the test made for a volume) into the container.
type mount struct {
	src, dst         string
	readOnly, rslave bool
}

// translate turns the pod spec's container into what a runtime needs: its capabilities (drop, add), read-only
// root, seccomp profile, environment (fieldRefs from fieldValues, $(VAR) expanded as the kubelet
// does) and volume mounts (hostPath as bind mounts with their read-only flag and propagation,
// configMap as a directory holding its keys, read-only).
func translate(t *testing.T, spec corev1.PodSpec, cms map[string]corev1.ConfigMap, fieldValues map[string]string) podContainer {
	t.Helper()
	require.Len(t, spec.Containers, 1)
	ctr := spec.Containers[0]
	sc := ctr.SecurityContext
	require.NotNil(t, sc)
	pc := podContainer{command: ctr.Command, argv: ctr.Args, podEnv: map[string]string{}}
	require.False(t, sc.Privileged != nil && *sc.Privileged, "privileged pods are not translated")
	if sc.Capabilities != nil {
		for _, c := range sc.Capabilities.Drop {
			pc.capDrop = append(pc.capDrop, string(c))
		}
		for _, c := range sc.Capabilities.Add {
			pc.capAdd = append(pc.capAdd, string(c))
		}
	}
	if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		pc.readOnly = true
	}
	require.NotNil(t, sc.SeccompProfile)
	switch sc.SeccompProfile.Type {
	case corev1.SeccompProfileTypeRuntimeDefault:
		pc.seccompDefault = true
	case corev1.SeccompProfileTypeUnconfined:
	default:
		t.Fatalf("seccomp profile %s is not translated", sc.SeccompProfile.Type)
	}
	require.NotNil(t, sc.RunAsUser)
	gid := *sc.RunAsUser
	if sc.RunAsGroup != nil {
		gid = *sc.RunAsGroup
	}
	pc.user = fmt.Sprintf("%d:%d", *sc.RunAsUser, gid)

	for _, e := range ctr.Env {
		v := e.Value
		if e.ValueFrom != nil {
			require.NotNil(t, e.ValueFrom.FieldRef, e.Name)
			fv, ok := fieldValues[e.ValueFrom.FieldRef.FieldPath]
			require.True(t, ok, "no value for fieldRef %s", e.ValueFrom.FieldRef.FieldPath)
			v = fv
		}
		// $(VAR) refers to a variable defined before it.
		v = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(v, func(ref string) string {
			if val, ok := pc.podEnv[ref[2:len(ref)-1]]; ok {
				return val
			}
			return ref
		})
		pc.podEnv[e.Name] = v
		pc.env = append(pc.env, e.Name+"="+v)
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range ctr.VolumeMounts {
		v, ok := volumes[m.Name]
		require.True(t, ok, "volume %s", m.Name)
		var src string
		switch {
		case v.HostPath != nil:
			src = v.HostPath.Path
			if v.HostPath.Type != nil && *v.HostPath.Type == corev1.HostPathDirectoryOrCreate {
				// The kubelet creates it on the node; here it is the test's own directory.
				src = t.TempDir()
			}
		case v.ConfigMap != nil:
			cm, ok := cms[v.ConfigMap.Name]
			require.True(t, ok, "configMap %s", v.ConfigMap.Name)
			src = t.TempDir()
			// Every key as a file of its name, or only the listed items, each at its path (the Helm chart's
			// `relay` key as relay.yaml).
			files := map[string]string{}
			for k := range cm.Data {
				files[k] = k
			}
			if len(v.ConfigMap.Items) > 0 {
				files = map[string]string{}
				for _, it := range v.ConfigMap.Items {
					_, ok := cm.Data[it.Key]
					require.True(t, ok, "configMap %s has no key %s", cm.Name, it.Key)
					files[it.Key] = it.Path
				}
			}
			for k, path := range files {
				require.NoError(t, os.WriteFile(filepath.Join(src, path), []byte(cm.Data[k]), 0o644))
			}
		default:
			t.Fatalf("volume %s: only hostPath and configMap are translated", m.Name)
		}
		pc.mounts = append(pc.mounts, mount{src: src, dst: m.MountPath, readOnly: m.ReadOnly,
			rslave: m.MountPropagation != nil && *m.MountPropagation == corev1.MountPropagationHostToContainer})
	}
	// The kubelet mounts the service account's token where client-go looks for it and names the API
	// server in the environment. No control plane runs here: nothing answers at that address, so
	// k8s_attributes starts, finds no pod and attaches nothing, as on a node cut off from its API server.
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		sa := t.TempDir()
		for name, data := range map[string]string{"token": "not-a-real-token", "namespace": "diskhealth", "ca.crt": ""} {
			require.NoError(t, os.WriteFile(filepath.Join(sa, name), []byte(data), 0o644))
		}
		pc.mounts = append(pc.mounts, mount{src: sa, dst: "/var/run/secrets/kubernetes.io/serviceaccount", readOnly: true})
		pc.env = append(pc.env, "KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=6443")
	}
	// The kubelet bind-mounts a managed /etc/hosts into every container (localhost and the pod's own
	// name): without it a scratch image cannot resolve "localhost", where the collector's own telemetry
	// listens by default.
	hosts := filepath.Join(t.TempDir(), "hosts")
	require.NoError(t, os.WriteFile(hosts, []byte(fmt.Sprintf("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s\n",
		fieldValues["status.podIP"], fieldValues["spec.nodeName"])), 0o644))
	pc.mounts = append(pc.mounts, mount{src: hosts, dst: "/etc/hosts", readOnly: true})
	return pc
}

// ctrFlags renders pc as ctr run flags.
func (pc podContainer) ctrFlags() []string {
	var f []string
	for _, c := range pc.capDrop {
		f = append(f, "--cap-drop", "CAP_"+c)
	}
	for _, c := range pc.capAdd {
		f = append(f, "--cap-add", "CAP_"+c)
	}
	if pc.readOnly {
		f = append(f, "--read-only")
	}
	if pc.seccompDefault {
		f = append(f, "--seccomp") // containerd's own default profile
	}
	for _, e := range pc.env {
		f = append(f, "--env", e)
	}
	for _, m := range pc.mounts {
		opts := []string{"rbind"}
		if m.readOnly {
			opts = append(opts, "ro")
		}
		if m.rslave {
			opts = append(opts, "rslave")
		}
		f = append(f, "--mount", fmt.Sprintf("type=bind,src=%s,dst=%s,options=%s", m.src, m.dst, strings.Join(opts, ":")))
	}
	return f
}

// podmanFlags renders pc as podman run flags (runc, and limits within this sandbox's, as podman needs
// here; network none: the pod's own namespace with loopback only).
func (pc podContainer) podmanFlags() []string {
	f := []string{"--runtime", "runc", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096",
		"--network", "none", "--user", pc.user}
	for _, c := range pc.capDrop {
		f = append(f, "--cap-drop", c)
	}
	for _, c := range pc.capAdd {
		f = append(f, "--cap-add", c)
	}
	if pc.readOnly {
		f = append(f, "--read-only")
	}
	if !pc.seccompDefault {
		f = append(f, "--security-opt", "seccomp=unconfined")
	}
	for _, e := range pc.env {
		f = append(f, "--env", e)
	}
	for _, m := range pc.mounts {
		opts := "rw"
		if m.readOnly {
			opts = "ro"
		}
		if m.rslave {
			opts += ",rslave"
		}
		f = append(f, "--volume", m.src+":"+m.dst+":"+opts)
	}
	return f
}

// podRun is one container started by a runtime: its network namespace and its output.
type podRun struct {
	netns string
	logs  func() string
}

// runUnderContainerd starts pc under containerd (a daemon of the test's own, runc, `ctr run`).
func runUnderContainerd(t *testing.T, pc podContainer, list string) podRun {
	t.Helper()
	// ctr 1.6 cannot override the image's USER as the kubelet does with runAsUser: it runs the
	// variant built with that user (the same files; uid 0 is the -smart image).
	ref := ""
	for suffix, user := range imageTargets {
		if user == pc.user {
			ref = list + suffix + "-" + runtime.GOARCH
		}
	}
	require.NotEmpty(t, ref, "no image runs as %s", pc.user)
	c := startContainerd(t)
	c.importImage(t, ref)
	id := fmt.Sprintf("daemonset-%d", os.Getpid())
	logPath := filepath.Join(t.TempDir(), "container.log")
	// ctr's arguments after the ID replace the whole process; the kubelet's args replace only CMD.
	command := pc.command
	if len(command) == 0 {
		command = inspectImage(t, ref).Config.Entrypoint
	}
	args := append(append([]string{"run", "-d", "--log-uri", "file://" + logPath}, pc.ctrFlags()...), ref, id)
	c.ctr(t, append(append(args, command...), pc.argv...)...)
	t.Cleanup(func() {
		_ = exec.Command("ctr", "-a", c.sock, "-n", c.ns, "task", "kill", "-s", "SIGKILL", id).Run()
		time.Sleep(time.Second)
		_ = exec.Command("ctr", "-a", c.sock, "-n", c.ns, "task", "rm", "-f", id).Run()
		_ = exec.Command("ctr", "-a", c.sock, "-n", c.ns, "container", "rm", id).Run()
	})
	var pid int
	for _, line := range strings.Split(string(c.ctr(t, "task", "ls")), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == id {
			_, err := fmt.Sscan(f[1], &pid)
			require.NoError(t, err)
			require.Equal(t, "RUNNING", f[2])
		}
	}
	require.NotZero(t, pid, "no task %s", id)
	return podRun{netns: fmt.Sprintf("/proc/%d/ns/net", pid), logs: func() string {
		out, _ := os.ReadFile(logPath)
		return string(out)
	}}
}

// runUnderPodman starts pc under podman with runc and containers/common's default seccomp profile
// (the one CRI-O, and so OpenShift, uses).
func runUnderPodman(t *testing.T, pc podContainer, list string) podRun {
	t.Helper()
	ref := list + "-" + runtime.GOARCH
	name := fmt.Sprintf("daemonset-%d", os.Getpid())
	// The shipped manifest sets args only: podman, like the kubelet, appends them to the image's ENTRYPOINT.
	require.Empty(t, pc.command, "a container command is not translated for podman")
	args := append(append([]string{"run", "-d", "--name", name}, pc.podmanFlags()...), ref)
	run(t, "podman", append(args, pc.argv...)...)
	t.Cleanup(func() { _ = exec.Command("podman", "rm", "-f", "-t", "5", name).Run() })
	pid := strings.TrimSpace(string(run(t, "podman", "inspect", "--format", "{{.State.Pid}}", name)))
	return podRun{netns: "/proc/" + pid + "/ns/net", logs: func() string {
		out, _ := exec.Command("podman", "logs", name).CombinedOutput()
		return string(out)
	}}
}

// TestDaemonSetUnderRuntimes runs the shipped DaemonSet's container (deploy/kubernetes/daemonset.yaml and
// its ConfigMap, as shipped) under the runtimes Kubernetes nodes use, each with its own default seccomp
// profile — what `seccompProfile: RuntimeDefault` means there: containerd (ctr, runc) and podman with
// runc (containers/common's profile, as CRI-O). The manifest's capabilities, user, read-only root,
// environment and host mounts apply, in a network namespace of the pod's own. Every source of the
// config must deliver: the I/O and filesystem series of this host's disks and `/`, health checks, and
// the block-latency probe attached.
func TestDaemonSetUnderRuntimes(t *testing.T) {
	list := imageName(t)
	if os.Geteuid() != 0 {
		unavailable(t, "the runtimes here run as root; run `make test` as root (CI does)")
	}
	var ds appsv1.DaemonSet
	decodeStrict(t, "kubernetes/daemonset.yaml", &ds)
	var cm corev1.ConfigMap
	decodeStrict(t, configMapFile, &cm)
	for name, start := range map[string]func(*testing.T, podContainer, string) podRun{
		"containerd": runUnderContainerd,
		"podman":     runUnderPodman,
	} {
		t.Run(name, func(t *testing.T) {
			runPod(t, name, start, ds.Spec.Template.Spec, cm, list)
		})
	}
}

// runPod translates a pod spec (one container, its config in cm) for a runtime, starts it there with
// the images of list, and checks that it delivers what the collector config promises on this host: the
// I/O and filesystem series of this host's disks and `/` on the Prometheus endpoint (port 9464 of the
// pod's IP), the health check (13133), and the block-latency probe attached under the runtime's default
// seccomp profile.
func runPod(t *testing.T, runtimeName string, start func(*testing.T, podContainer, string) podRun, spec corev1.PodSpec, cm corev1.ConfigMap, list string) {
	t.Helper()
	hostname, err := os.Hostname()
	require.NoError(t, err)
	// The downward API's values on this node: the pod's own network namespace has loopback only.
	pc := translate(t, spec, map[string]corev1.ConfigMap{cm.Name: cm}, map[string]string{
		"spec.nodeName": hostname, "status.podIP": "127.0.0.1", "status.hostIP": "127.0.0.1",
		"metadata.namespace": "diskhealth", "metadata.name": "otelcol-diskhealth-test",
	})
	pod := start(t, pc, list)
	defer func() {
		if t.Failed() {
			t.Logf("container output:\n%s", pod.logs())
		}
	}()
	client := inNetns(t, pod.netns)
	ioRe := regexp.MustCompile(`(?m)^system_disk_io_bytes_total\{[^}]*system_device="[^"]+"`)
	fsRe := regexp.MustCompile(`(?m)^system_filesystem_limit_bytes\{[^}]*system_filesystem_mountpoint="/"`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		body := scrapeWith(client, pc.podEnv["POD_IP"]+":9464")
		if ioRe.MatchString(body) && fsRe.MatchString(body) {
			break
		}
		require.True(t, time.Now().Before(deadline), "no disk I/O and / filesystem series within 60 s; last scrape:\n%s", body)
		time.Sleep(500 * time.Millisecond)
	}
	assert.Contains(t, pod.logs(), "Block latency probe attached.",
		"the manifest's capabilities let the probe load under %s's default seccomp profile", runtimeName)
	resp, err := client.Get("http://" + pc.podEnv["POD_IP"] + ":13133/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "health_check")
}

// inNetns returns an HTTP client whose connections are made in the network namespace at path (the
// pod's): the socket is created on a thread that entered it, and stays there.
func inNetns(t *testing.T, path string) *http.Client {
	t.Helper()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			// This thread is left in the namespace and never reused: the goroutine ends locked.
			runtime.LockOSThread()
			fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err == nil {
				err = unix.Setns(fd, unix.CLONE_NEWNET)
				_ = unix.Close(fd)
			}
			if err != nil {
				ch <- result{nil, fmt.Errorf("entering %s: %w", path, err)}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
}

func scrapeWith(c *http.Client, addr string) string {
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b))
}

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
	"slices"
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

// runtimes are the container runtimes Kubernetes nodes use, each run with its own default seccomp
// profile where a manifest says RuntimeDefault, in the order of the measured table.
var runtimes = []struct {
	name, label string
	start       func(*testing.T, podContainer, string) podRun
}{
	{"containerd", "containerd 1.6 (ctr, runc)", runUnderContainerd},
	{"podman", "podman 4 + runc (containers/common)", runUnderPodman},
}

// statusRe is one series of disk_health.source.status as the Prometheus exporter serves it.
var (
	statusRe = regexp.MustCompile(`(?m)^disk_health_source_status\{([^}]*)\} 1$`)
	labelRe  = regexp.MustCompile(`([a-z_]+)="([^"]*)"`)
)

// sourceStatus reads disk_health.source.status out of a scrape: source → state and reason.
func sourceStatus(body string) map[string][2]string {
	out := map[string][2]string{}
	for _, m := range statusRe.FindAllStringSubmatch(body, -1) {
		labels := map[string]string{}
		for _, l := range labelRe.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		out[labels["disk_health_source_name"]] = [2]string{labels["disk_health_source_state"], labels["disk_health_source_reason"]}
	}
	return out
}

// statusCell is a source's state in the measured table: ok, or its state and reason.
func statusCell(s [2]string) string {
	if s[0] == "ok" {
		return "ok"
	}
	return s[0] + ": " + s[1]
}

// runtimesTable is where docs/deployment.md holds TestDaemonSetUnderRuntimes's measured table.
const (
	deploymentDoc    = "../docs/deployment.md"
	tableBegin       = "<!-- measured by TestDaemonSetUnderRuntimes: do not edit -->\n"
	tableEnd         = "<!-- end of the measured table -->\n"
	statusWaitWindow = 35 * time.Second // the status is emitted every collection_interval (30 s)
)

// TestDaemonSetUnderRuntimes runs the containers of both shipped DaemonSets (deploy/kubernetes/daemonset.yaml,
// the default profile, and daemonset-smart.yaml, SMART and the storage stack; with their ConfigMap, as
// shipped) under the runtimes Kubernetes nodes use, each with its own default seccomp profile where the
// manifest asks for RuntimeDefault — containerd (ctr, runc) and podman with runc (containers/common's
// profile, as CRI-O). The manifest's capabilities, user, read-only root, environment and host mounts
// apply, in a network namespace of the pod's own. For each runtime × profile every source of the
// registry has its disk_health.source.status series, every source the profile enables delivers (ok) or
// says why not (its reason), the default profile serves this host's disks and `/` with the block-latency
// probe attached, and the measured table is exactly the one in docs/deployment.md
// (DISKHEALTH_UPDATE_GOLDEN=1 rewrites it).
func TestDaemonSetUnderRuntimes(t *testing.T) {
	list := imageName(t)
	if os.Geteuid() != 0 {
		unavailable(t, "the runtimes here run as root; run `make test` as root (CI does)")
	}
	var cm corev1.ConfigMap
	decodeStrict(t, configMapFile, &cm)
	type row struct {
		profile, runtime string
		status           map[string][2]string
	}
	var rows []row
	// The shipped profiles, and the default one under RuntimeDefault (not shipped): the measurement
	// behind its Unconfined (docs/deployment.md "Profiles").
	type variant struct {
		id, name, file string
		runtimeDefault bool
	}
	var variants []variant
	for _, p := range profiles {
		variants = append(variants, variant{id: p.name, name: p.name, file: p.file})
	}
	variants = append(variants, variant{id: "default-runtimedefault", name: "default, RuntimeDefault (not shipped)", file: profiles[0].file, runtimeDefault: true})
	for _, p := range variants {
		var ds appsv1.DaemonSet
		decodeStrict(t, p.file, &ds)
		if p.runtimeDefault {
			ds.Spec.Template.Spec.Containers[0].SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeRuntimeDefault
		}
		for _, rt := range runtimes {
			t.Run(p.id+"/"+rt.name, func(t *testing.T) {
				seen := runPod(t, rt.start, ds.Spec.Template.Spec, cm, list)
				status := seen.status
				rows = append(rows, row{p.name, rt.label, status})
				var enabled []string
				for name, s := range status {
					require.Contains(t, []string{"ok", "degraded", "off"}, s[0], name)
					if s[1] == "not_configured" {
						assert.Equal(t, "off", s[0], name)
						continue
					}
					enabled = append(enabled, name)
					if s[0] != "ok" {
						assert.NotEqual(t, "none", s[1], "%s is %s and says why", name, s[0])
					}
				}
				require.NotEmpty(t, enabled, "the profile runs a source")
				switch {
				case p.runtimeDefault:
					// containers/common's profile refuses bpf() without CAP_SYS_ADMIN: said as data.
					want := [2]string{"ok", "none"}
					if rt.name == "podman" {
						want = [2]string{"off", "seccomp"}
					}
					assert.Equal(t, want, status["latency"], "latency under %s's default profile", rt.name)
				case p.name == "default":
					assert.NotContains(t, enabled, "smart")
					assert.NotContains(t, enabled, "stack")
					assertServesThisHost(t, seen, rt.name)
				case p.name == "smart":
					slices.Sort(enabled)
					assert.Equal(t, []string{"smart", "stack"}, enabled)
				}
			})
		}
	}
	if t.Failed() || len(rows) != len(variants)*len(runtimes) {
		return
	}
	var sources []string
	for name := range rows[0].status {
		sources = append(sources, name)
	}
	slices.Sort(sources)
	var b strings.Builder
	b.WriteString("| profile | runtime (default seccomp) | " + strings.Join(sources, " | ") + " |\n")
	b.WriteString("|---|---|" + strings.Repeat("---|", len(sources)) + "\n")
	for _, r := range rows {
		cells := []string{r.profile, r.runtime}
		for _, s := range sources {
			cells = append(cells, statusCell(r.status[s]))
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	table := b.String()
	t.Logf("measured:\n%s", table)
	doc, err := os.ReadFile(deploymentDoc)
	require.NoError(t, err)
	before, rest, ok := strings.Cut(string(doc), tableBegin)
	require.True(t, ok, "%s has no %q", deploymentDoc, tableBegin)
	old, after, ok := strings.Cut(rest, tableEnd)
	require.True(t, ok, "%s has no %q", deploymentDoc, tableEnd)
	if os.Getenv(updateEnv) != "" && old != table {
		require.NoError(t, os.WriteFile(deploymentDoc, []byte(before+tableBegin+table+tableEnd+after), 0o644))
		t.Fatalf("%s rewritten (%s is set): review the diff and run the test again without it", deploymentDoc, updateEnv)
	}
	assert.Equal(t, table, old, "docs/deployment.md holds the table this test measured (%s=1 rewrites it)", updateEnv)
}

// podSeen is what a pod served: its last scrape of the Prometheus endpoint, each source's
// disk_health.source.status (source → state, reason) and the container's output.
type podSeen struct {
	body   string
	status map[string][2]string
	logs   string
}

// runPod translates a pod spec (one container, its config in cm) for a runtime, starts it there with
// the images of list, and returns what it served once every source has said how it is: the
// Prometheus endpoint (port 9464 of the pod's IP) is read until disk_health.source.status has been
// emitted twice (the second one has seen every source's first scrape). The health check (13133) must
// answer.
func runPod(t *testing.T, start func(*testing.T, podContainer, string) podRun, spec corev1.PodSpec, cm corev1.ConfigMap, list string) podSeen {
	t.Helper()
	hostname, err := os.Hostname()
	require.NoError(t, err)
	// The downward API's values on this node: the pod's own network namespace has loopback only.
	pc := translate(t, spec, map[string]corev1.ConfigMap{cm.Name: cm}, map[string]string{
		"spec.nodeName": hostname, "status.podIP": "127.0.0.1", "status.hostIP": "127.0.0.1",
		"metadata.namespace": "diskhealth", "metadata.name": "otelcol-diskhealth-test",
	})
	pod := start(t, pc, list)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("container output:\n%s", pod.logs())
		}
	})
	client := inNetns(t, pod.netns)
	var seen podSeen
	var first time.Time
	deadline := time.Now().Add(90 * time.Second)
	for {
		seen.body = scrapeWith(client, pc.podEnv["POD_IP"]+":9464")
		seen.status = sourceStatus(seen.body)
		if len(seen.status) > 0 && first.IsZero() {
			first = time.Now()
		}
		if !first.IsZero() && time.Since(first) > statusWaitWindow {
			break
		}
		require.True(t, time.Now().Before(deadline), "no disk_health.source.status within 90 s; last scrape:\n%s", seen.body)
		time.Sleep(time.Second)
	}
	resp, err := client.Get("http://" + pc.podEnv["POD_IP"] + ":13133/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "health_check")
	seen.logs = pod.logs()
	return seen
}

// assertServesThisHost: the pod served this host's disks and `/`, with the block-latency probe attached.
func assertServesThisHost(t *testing.T, seen podSeen, runtimeName string) {
	t.Helper()
	assert.Equal(t, [2]string{"ok", "none"}, seen.status["latency"], "the probe loads under %s with the profile's capabilities and seccomp", runtimeName)
	assert.Contains(t, seen.logs, "Block latency probe attached.")
	assert.Regexp(t, `(?m)^system_disk_io_bytes_total\{[^}]*system_device="[^"]+"`, seen.body, "this host's disks")
	assert.Regexp(t, `(?m)^system_filesystem_limit_bytes\{[^}]*system_filesystem_mountpoint="/"`, seen.body, "this host's /")
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

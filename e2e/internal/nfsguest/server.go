//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The NFS server of the guest: the kernel's nfsd with rpcbind, rpc.mountd and an export per mount,
// all on a tmpfs, served over the loopback interface.

const exportRoot = "/srv/nfs"

// exports are the guest's /etc/exports: a directory per mount, each its own export (an fsid of its
// own: tmpfs has no UUID to name it by), so that each mount is a superblock of its own with its
// own counters.
func exports() string {
	var b strings.Builder
	for i, m := range mounts {
		fmt.Fprintf(&b, "%s 127.0.0.0/8(rw,sync,no_subtree_check,no_root_squash,insecure,fsid=%d)\n", exportDir(m), i+1)
	}
	return b.String()
}

func exportDir(m mount) string { return exportRoot + "/" + m.dir }

// startServer loads the NFS modules, brings up the loopback interface and starts rpcbind, mountd
// and nfsd with the exports.
func startServer(logf func(string, ...any)) error {
	list, err := os.ReadFile("/lib/modules/nfs/nfs.list")
	if err != nil {
		return err
	}
	for _, m := range strings.Fields(string(list)) {
		if out, err := exec.Command("insmod", "/lib/modules/nfs/"+m).CombinedOutput(); err != nil {
			return fmt.Errorf("insmod %s: %w: %s", m, err, out)
		}
	}
	// A minimal /etc for the user space. rpcbind drops to the _rpc user (Debian's build), and mountd and exportfs keep their tables in
	// /var/lib/nfs; v4recovery is nfsd's legacy client tracking, so that it starts without nfsdcld.
	files := map[string]string{
		"/etc/passwd":        "root:x:0:0:root:/root:/bin/sh\n_rpc:x:100:65534::/run/rpcbind:/bin/false\n",
		"/etc/group":         "root:x:0:\nnogroup:x:65534:\n",
		"/etc/exports":       exports(),
		"/var/lib/nfs/etab":  "",
		"/var/lib/nfs/rmtab": "",
		"/etc/nfs.conf":      "",
		"/etc/hosts":         "127.0.0.1 localhost\n",
		"/etc/services":      "sunrpc 111/tcp portmapper\nsunrpc 111/udp portmapper\nnfs 2049/tcp\nnfs 2049/udp\n", // rpcbind resolves "portmapper", rpc.nfsd "nfs"
		"/etc/protocols":     "ip 0 IP\ntcp 6 TCP\nudp 17 UDP\n",                                                   // mount.nfs resolves "tcp"
		"/etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
	}
	for _, d := range []string{"/etc", "/var/lib/nfs/v4recovery", "/run/rpcbind", exportRoot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			return err
		}
	}
	if err := os.Chown("/run/rpcbind", 100, 65534); err != nil {
		return err
	}
	// The kernel registers nfsd with rpcbind at /var/run/rpcbind.sock.
	if err := os.MkdirAll("/var", 0o755); err != nil {
		return err
	}
	if err := os.Symlink("/run", "/var/run"); err != nil && !os.IsExist(err) {
		return err
	}
	steps := [][]string{
		{"ifconfig", "lo", "127.0.0.1", "up"},
		{"mount", "-t", "nfsd", "nfsd", "/proc/fs/nfsd"},
		{"mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", exportRoot},
	}
	for _, m := range mounts {
		steps = append(steps, []string{"mkdir", "-p", exportDir(m), m.point})
	}
	steps = append(steps, []string{"rpcbind"})
	for _, s := range steps {
		if err := run(logf, s...); err != nil {
			return err
		}
	}
	if err := waitFile("/run/rpcbind.sock", 20*time.Second); err != nil {
		_ = run(logf, "ps")
		return err
	}
	// The grace period after a restart of the server, 90 s by default, is the shortest the kernel
	// takes: the hang part restarts the server and must not wait out the default.
	if err := os.WriteFile("/proc/fs/nfsd/nfsv4gracetime", []byte("10"), 0o644); err != nil {
		return fmt.Errorf("nfsv4gracetime: %w", err)
	}
	for _, s := range [][]string{{"exportfs", "-ra"}, {"rpc.mountd"}, {"rpc.nfsd", strconv.Itoa(nfsdThreads)}, {"exportfs", "-v"}} {
		if err := run(logf, s...); err != nil {
			return err
		}
	}
	return nil
}

const nfsdThreads = 4

// run runs a command, logging it and its output.
func run(logf func(string, ...any), args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	logf("$ %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func waitFile(p string, timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s did not appear within %v", p, timeout)
}

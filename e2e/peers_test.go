package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Helpers for the tests that run the collector against a peer: free loopback ports, a peer process
// stopped with the test, and the shipped configs. The peers themselves come from packages_test.go.

// telemetryOff keeps the collector's own metrics listener (localhost:8888 by default) closed, so that
// two collectors, or a collector of another test package running at the same time, never collide.
const telemetryOff = "--set=service.telemetry.metrics.level=none"

// handedOut are the ports freeAddr returned in this test binary: the kernel may offer a port again
// once its probe listener closed, and two peers given the same port fail to start (a Prometheus and
// the collector's health_check both on one port did).
var handedOut sync.Map

// freeAddr returns a loopback address with a port that was free a moment ago and that no earlier
// call returned.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		_ = l.Close()
		if _, taken := handedOut.LoadOrStore(addr, true); !taken {
			return addr
		}
	}
	t.Fatal("no loopback port that was not handed out already")
	return ""
}

// shippedConfig reads one of the example configs in config/.
func shippedConfig(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "config", name))
	require.NoError(t, err)
	return string(data)
}

// startPeer runs a peer program (Prometheus, ...) like startCollector runs the collector: stopped when
// the test ends, its output logged if the test failed.
func startPeer(t *testing.T, name string, args ...string) *collector {
	t.Helper()
	c := &collector{cmd: exec.Command(name, args...), output: &syncBuffer{}, exited: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = c.output, c.output
	require.NoError(t, c.cmd.Start())
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			t.Logf("%s output (%v):\n%s", filepath.Base(name), c.waitErr, c.output.String())
		}
	})
	return c
}

// hostIdentity is what resource_detection should put on every resource here: the OS hostname and
// /etc/machine-id (empty when the host has none).
func hostIdentity(t *testing.T) (name, id string) {
	t.Helper()
	name, err := os.Hostname()
	require.NoError(t, err)
	if b, err := os.ReadFile("/etc/machine-id"); err == nil {
		id = strings.TrimSpace(string(b))
	}
	return name, id
}

// wholeDisks lists this host's whole disks as the receiver classifies them by default (a /sys/block
// entry with a device link: not loop, ram, dm or a partition), with their major:minor.
func wholeDisks(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir("/sys/block")
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if _, err := os.Stat(filepath.Join("/sys/block", name, "device")); err != nil {
			continue
		}
		if strings.HasPrefix(name, "loop") || strings.HasPrefix(name, "ram") || strings.HasPrefix(name, "zram") {
			continue
		}
		dev, err := os.ReadFile(filepath.Join("/sys/block", name, "dev"))
		require.NoError(t, err)
		out[name] = strings.TrimSpace(string(dev))
	}
	return out
}

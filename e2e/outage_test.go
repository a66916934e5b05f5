package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// outageRoute is one shipped route as outageRestart drives it.
type outageRoute struct {
	config   string // the shipped config
	exporter string // its exporter in the metrics pipeline
	up       func() // starts the backend, again on the same address and data
	down     func() // stops it
	// stamps says how many times the backend holds each collection of the disk's read bytes, by the
	// collection's time in ms.
	stamps func(disk string) (map[int64]int, error)
	// killedOnStop: the route's exporter may not finish shutting down while the backend is down, so the
	// collector is killed 30 s after SIGTERM, as Kubernetes would; what it had queued must survive that.
	killedOnStop bool
}

// outageRun is what outageRestart leaves for a route's own checks: each run's collector and what its
// pipeline produced (a file exporter beside the route's).
type outageRun struct {
	col  *collector
	sent *exportTail
}

// outageRestart: the backend is up, then down while the collector (collecting every 2 s) runs, is
// stopped with SIGTERM and started again on the same state directory; then the backend comes back.
// Every collection of both runs arrives, each exactly once. It returns the two runs, the second still
// running.
func outageRestart(t *testing.T, r outageRoute, extraArgs ...string) [2]outageRun {
	t.Helper()
	bin := collectorBinary(t)
	const interval = 2 * time.Second
	dir := t.TempDir()
	t.Setenv("DISKHEALTH_STATE_DIR", filepath.Join(dir, "state"))
	disk := ""
	for d := range wholeDisks(t) {
		disk = d
		break
	}
	require.NotEmpty(t, disk, "this host has no whole disk")

	// Each run records its collections with a file exporter beside the route's.
	run := func(n int) (*collector, *exportTail) {
		sent := filepath.Join(dir, fmt.Sprintf("sent-%d.json", n))
		extra := filepath.Join(dir, fmt.Sprintf("extra-%d.yaml", n))
		require.NoError(t, os.WriteFile(extra, []byte(fmt.Sprintf(`exporters:
  file/sent:
    path: %s
service:
  pipelines:
    metrics:
      exporters: [%s, file/sent]
`, sent, r.exporter)), 0o644))
		c := startCollector(t, bin, shippedConfig(t, r.config), append([]string{"--config=" + extra, telemetryOff,
			"--set=receivers.disk_health.collection_interval=" + interval.String()}, extraArgs...)...)
		return c, &exportTail{path: sent}
	}
	sentStamps := func(tail *exportTail) []int64 {
		var out []int64
		for _, md := range tail.exports {
			if p, ok := find(devicePoints(md)[disk], "system.disk.io", "read"); ok {
				out = append(out, int64(p.ts)/1e6)
			}
		}
		return out
	}
	collections := func(c *collector, tail *exportTail, n int) {
		deadline := time.Now().Add(time.Duration(n+10) * interval)
		for {
			require.NoError(t, tail.poll())
			if len(sentStamps(tail)) >= n {
				return
			}
			select {
			case <-c.exited:
				t.Fatalf("the collector exited: %v", c.waitErr)
			case <-time.After(100 * time.Millisecond):
			}
			require.False(t, time.Now().After(deadline), "fewer than %d collections of %s", n, disk)
		}
	}

	r.up()
	first, sent1 := run(1)
	require.Eventually(t, func() bool {
		got, err := r.stamps(disk)
		return err == nil && len(got) > 0
	}, 60*time.Second, 500*time.Millisecond, "nothing arrived while the backend is up")
	r.down()
	down := time.Now()
	require.NoError(t, sent1.poll())
	collections(first, sent1, len(sentStamps(sent1))+5) // five collections while the backend is down
	start := time.Now()
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGTERM))
	stop := "SIGTERM exit"
	select {
	case <-first.exited:
	case <-time.After(30 * time.Second):
		require.True(t, r.killedOnStop, "the collector did not exit within 30 s of SIGTERM")
		// What the kubelet does after the default terminationGracePeriodSeconds (30 s).
		require.NoError(t, first.cmd.Process.Kill())
		<-first.exited
		stop = "no exit after SIGTERM, SIGKILL"
	}
	stopTook := time.Since(start)
	require.NoError(t, sent1.poll())
	queued := dirSize(t, filepath.Join(dir, "state"))

	second, sent2 := run(2)
	collections(second, sent2, 3)
	r.up()
	up := time.Now()

	// The second run keeps collecting: wait until all it has sent so far, and all of the first run,
	// is in the backend.
	var want []int64
	var got map[int64]int
	var missing []int64
	deadline := time.Now().Add(90 * time.Second)
	for {
		require.NoError(t, sent2.poll())
		want = append(sentStamps(sent1), sentStamps(sent2)...)
		var err error
		got, err = r.stamps(disk)
		missing = missing[:0]
		if err == nil {
			for _, w := range want {
				if got[w] == 0 {
					missing = append(missing, w)
				}
			}
		}
		if err == nil && len(missing) == 0 || time.Now().After(deadline) {
			require.NoError(t, err)
			break
		}
		time.Sleep(time.Second)
	}
	require.Empty(t, missing, "collections (ms) missing in the backend, of %d: run 1 %v, run 2 %v; the backend has %v", len(want), sentStamps(sent1), sentStamps(sent2), got)
	var twice []string
	for _, w := range want {
		if got[w] > 1 {
			twice = append(twice, fmt.Sprintf("%d×%d", w, got[w]))
		}
	}
	sort.Strings(twice)
	require.Empty(t, twice, "collections the backend holds more than once")
	t.Logf("backend down %v; run 1 %d collections (%s in %v, state directory %d bytes), run 2 %d so far; all %d there exactly once %v after it came back",
		up.Sub(down).Round(100*time.Millisecond), len(sentStamps(sent1)), stop, stopTook.Round(time.Millisecond), queued, len(sentStamps(sent2)), len(want),
		time.Since(up).Round(100*time.Millisecond))
	return [2]outageRun{{first, sent1}, {second, sent2}}
}

// readStampsOf counts, in exports, the read-bytes points of disk by their time in ms: what a backend
// that stores OTLP as it came holds of a route's collections.
func readStampsOf(exports []pmetric.Metrics, disk string) map[int64]int {
	out := map[int64]int{}
	for _, md := range exports {
		for _, p := range devicePoints(md)[disk] {
			if p.metric == "system.disk.io" && p.dir == "read" {
				out[int64(p.ts)/1e6]++
			}
		}
	}
	return out
}

// dirSize is the bytes the files under dir take on disk.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	}))
	return n
}

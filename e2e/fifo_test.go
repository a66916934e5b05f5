package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestFIFOAtEachInputKind (issue 19): a FIFO without a writer at one input of each kind — /proc/diskstats,
// /proc/stat, /proc/pressure/io, the mount tables, a sysfs identity attribute, an ext4 errors_count, an md
// array_state, a cgroup's io.stat — blocked its source's reads forever (open waits for a writer), and with
// them the collector's start or its shutdown. The built collector must start, every source not fed by that
// input must report, and SIGTERM must end the process within the shutdown bound.
func TestFIFOAtEachInputKind(t *testing.T) {
	bin := collectorBinary(t)
	const (
		iostat     = "system.disk."
		filesystem = "system.filesystem."
		pressure   = "disk_health.io.linux.pressure."
		cgroups    = "container.disk."
		// shutdownBound is the harness's grace before SIGKILL: a process stuck in a read never makes it.
		shutdownBound = 5 * time.Second
	)
	all := []string{iostat, filesystem, pressure, cgroups}
	for _, tc := range []struct {
		name, rel string
		feeds     []string // the sources that input feeds: they may report less or nothing
	}{
		{"diskstats", "proc/diskstats", []string{iostat}},
		{"stat", "proc/stat", []string{iostat, pressure, cgroups}}, // boot time: the start of their counters
		{"pressure", "proc/pressure/io", []string{pressure}},
		{"mountinfo", "proc/1/mountinfo", []string{filesystem}},
		{"sysfs-model", "sys/devices/platform/e2e-disk0/model", []string{iostat}},
		{"ext4-errors_count", "sys/fs/ext4/sda1/errors_count", nil},
		{"md-array_state", "sys/block/md0/md/array_state", nil},
		{"cgroup-io.stat", "sys/fs/cgroup/busy.slice/io.stat", []string{cgroups}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "root")
			devs := []dsLine{{Major: 8, Minor: 0, Name: "sda"}, {Major: 8, Minor: 16, Name: "sdb"}}
			diskstats := func(k uint64) string {
				var sb strings.Builder
				for _, d := range devs {
					fmt.Fprintf(&sb, "%4d %7d %s %d 0 %d 10 %d 0 %d 10 0 %d 20\n", d.Major, d.Minor, d.Name, 100+k, 800+8*k, 50+k, 400+8*k, 5*k)
				}
				return sb.String()
			}
			buildReceiverRoot(t, root, devs, []byte(diskstats(0)), time.Now().Add(-time.Hour).Truncate(time.Second))
			put := func(rel, content string) {
				if rel == tc.rel || (tc.name == "mountinfo" && rel == "proc/self/mountinfo") {
					return // the FIFO stays
				}
				p := filepath.Join(root, rel)
				_ = os.MkdirAll(filepath.Dir(p), 0o755)
				if os.WriteFile(p+".tmp", []byte(content), 0o644) == nil {
					_ = os.Rename(p+".tmp", p)
				}
			}
			mountinfo := "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
			put("proc/1/mountinfo", mountinfo)
			put("proc/self/mountinfo", mountinfo)
			put("proc/pressure/io", "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1\n")
			put("sys/fs/ext4/sda1/errors_count", "0\n")
			put("sys/block/md0/md/level", "raid1\n")
			put("sys/block/md0/md/array_state", "clean\n")
			put("sys/fs/cgroup/cgroup.controllers", "cpu io memory\n")
			ioStat := func(k uint64) {
				for _, cg := range []string{"", "busy.slice", "other.slice"} {
					put(filepath.Join("sys/fs/cgroup", cg, "cgroup.procs"), "")
					put(filepath.Join("sys/fs/cgroup", cg, "io.stat"), fmt.Sprintf("8:0 rbytes=%d wbytes=%d rios=%d wios=%d dbytes=0 dios=0\n", 4096*k, 8192*k, k, 2*k))
				}
			}
			ioStat(1)
			fifos := []string{tc.rel}
			if tc.name == "mountinfo" {
				fifos = append(fifos, "proc/self/mountinfo")
			}
			for _, rel := range fifos {
				p := filepath.Join(root, rel)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				_ = os.Remove(p)
				require.NoError(t, unix.Mkfifo(p, 0o644))
			}

			got := filepath.Join(dir, "got.json")
			c := startCollector(t, bin, fileExportConfig(fmt.Sprintf(`receivers:
  disk_health:
    root_path: %s
    collection_interval: 1s
    iostat:
      device_classes: [disk, md]
    smart:
      enabled: false
    latency:
      enabled: false
`, root), got), telemetryOff)

			defer keepMoving(func(k uint64) {
				put("proc/diskstats", diskstats(k))
				ioStat(k + 1)
			})()

			want := map[string]bool{}
			for _, p := range all {
				want[p] = true
			}
			for _, p := range tc.feeds {
				delete(want, p)
			}
			tail := &exportTail{path: got}
			seen := map[string]bool{}
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) && len(seen) < len(want) {
				time.Sleep(250 * time.Millisecond)
				require.NoError(t, tail.poll())
				for _, md := range tail.exports {
					for _, name := range metricNames(md) {
						for p := range want {
							if strings.HasPrefix(name, p) {
								seen[p] = true
							}
						}
					}
				}
			}
			assert.Equal(t, want, seen, "the sources not fed by the FIFO report")
			assert.Contains(t, c.output.String(), "Everything is ready", "the collector finished starting")

			start := time.Now()
			require.NoError(t, c.cmd.Process.Signal(unix.SIGTERM))
			select {
			case <-c.exited:
				t.Logf("FIFO at %s: exited %v after SIGTERM", tc.rel, time.Since(start).Round(time.Millisecond))
			case <-time.After(shutdownBound):
				t.Fatalf("FIFO at %s: still running %v after SIGTERM", tc.rel, shutdownBound)
			}
		})
	}
}

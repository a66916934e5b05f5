package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// TestHostileInputDeliversEverythingElse (issue 14, done-when 3 and 4): a root_path with one bad input of
// each kind — a malformed /proc/diskstats line, a device with no readable sysfs entry, an unusable sysfs
// attribute, non-UTF-8 bytes in a device name and a mount source, control characters and an over-long
// string in sysfs identity, a malformed mountinfo line, a malformed io.stat line — still delivers every
// other device's, mount's and cgroup's metrics through the OTLP exporter into a second collector, whose
// file exporter writes decodable OTLP JSON with nothing rejected. The sender scrapes every second (a short
// collection_interval to cover many scrapes): each persistent problem is logged at WARN once, and nothing
// is logged per scrape. (A stuck mount, the other half of done-when 4, needs FUSE: fs_hang_test.go's
// TestHungMountNeverStallsScrape checks its transition logs.)
func TestHostileInputDeliversEverythingElse(t *testing.T) {
	bin := collectorBinary(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	boot := time.Now().Add(-time.Hour).Truncate(time.Second)

	devs := []dsLine{{Major: 8, Minor: 0, Name: "sda"}, {Major: 8, Minor: 16, Name: "sdb"}, {Major: 8, Minor: 32, Name: "sdc"}}
	diskstats := func(k uint64) []byte {
		var sb strings.Builder
		for _, d := range devs {
			fmt.Fprintf(&sb, "%4d %7d %s %d 0 %d 10 %d 0 %d 10 0 %d 20\n", d.Major, d.Minor, d.Name, 100+k, 800+8*k, 50+k, 400+8*k, 5*k)
		}
		sb.WriteString("   8      48 sdd 1 2 x 4 5 6 7 8 9 10 11\n")                           // malformed
		sb.WriteString("   8      64 sde 1 0 8 1 1 0 8 1 0 1 1\n")                             // no sysfs entry
		fmt.Fprintf(&sb, "  43       0 nbd\xff\x01 %d 0 %d 1 1 0 8 1 0 1 1\n", 100+k, 800+8*k) // non-UTF-8 name
		return []byte(sb.String())
	}
	buildReceiverRoot(t, root, devs, diskstats(0), boot)
	// Files the scrapes read are replaced whole (write, then rename), so no scrape reads one half
	// written: the receiver reopens a renamed /proc/diskstats within 4 scrapes.
	put := func(rel, content string) error {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p+".tmp", []byte(content), 0o644); err != nil {
			return err
		}
		return os.Rename(p+".tmp", p)
	}
	write := func(rel, content string) { require.NoError(t, put(rel, content)) }
	// sdb: an attribute that exists but is unusable; sdc: an over-long serial and a C1 control character.
	write("sys/devices/platform/e2e-disk1/block/sdb/queue/rotational", "banana\n")
	write("sys/devices/platform/e2e-disk2/serial", strings.Repeat("S", 5000)+"\n")
	write("sys/devices/platform/e2e-disk2/firmware_rev", "1.0\u0085\n")
	// The non-UTF-8 name is sanitised where it is read, so its (raw) sysfs entry is not found: it is
	// dropped like sde, and the message names it in valid UTF-8.
	nbd := "sys/devices/platform/e2e-nbd/block/nbd\xff\x01"
	write(nbd+"/dev", "43:0\n")
	require.NoError(t, os.Symlink("../..", filepath.Join(root, nbd, "device")))
	require.NoError(t, os.Symlink("../../devices/platform/e2e-nbd/block/nbd\xff\x01", filepath.Join(root, "sys/class/block/nbd\xff\x01")))

	// Mounts: two good ones (one with a non-UTF-8 source) and a malformed line, statfs'd below root.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "data"), 0o755))
	mountinfo := "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n" +
		"2 1 8:17 / /data rw - xfs srv\xff:/export rw\n" +
		"3 1 8:33 / relative rw - ext4 /dev/sdc1 rw\n"
	write("proc/1/mountinfo", mountinfo)
	write("proc/self/mountinfo", mountinfo)
	write("proc/pressure/io", "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1\n")

	// Cgroups: two busy cgroups, one of whose io.stat has a garbage line next to its good one.
	write("sys/fs/cgroup/cgroup.controllers", "cpu io memory\n")
	cgroups := []string{"", "good.slice", "bad.slice"}
	iostat := func(k uint64) error {
		for _, cg := range cgroups {
			content := fmt.Sprintf("8:0 rbytes=%d wbytes=%d rios=%d wios=%d dbytes=0 dios=0\n", 4096*k, 8192*k, k, 2*k)
			if cg == "bad.slice" {
				content += "8:16 rbytes=12x3\n"
			}
			if err := put(filepath.Join("sys/fs/cgroup", cg, "cgroup.procs"), ""); err != nil {
				return err
			}
			if err := put(filepath.Join("sys/fs/cgroup", cg, "io.stat"), content); err != nil {
				return err
			}
		}
		return nil
	}
	require.NoError(t, iostat(1))

	grpcAddr := freeAddr(t)
	got := filepath.Join(dir, "got.json")
	sink := startCollector(t, bin, fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
exporters:
  file:
    path: %s
    format: json
    flush_interval: 100ms
service:
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [file]
`, grpcAddr, got), telemetryOff)
	require.Eventually(t, func() bool { return strings.Contains(sink.output.String(), "Everything is ready") },
		15*time.Second, 100*time.Millisecond, "the receiving collector did not start")

	sender := startCollector(t, bin, fmt.Sprintf(`receivers:
  disk_health:
    root_path: %s
    collection_interval: 1s
    filesystem:
      include_remote_filesystems: true
    smart:
      enabled: false
    # The latency source measures the host's real block devices through BPF, which a fixture root cannot
    # stand in for (it would also read this root's diskstats and name its bad line a second time).
    latency:
      enabled: false
exporters:
  otlp:
    endpoint: %s
    tls:
      insecure: true
service:
  pipelines:
    metrics:
      receivers: [disk_health]
      exporters: [otlp]
`, root, grpcAddr), telemetryOff)

	// Keep the counters moving, so the cgroups are busy and the gauges have intervals.
	stopMoving := keepMoving(func(k uint64) {
		// Errors here would show as missing metrics below.
		_ = put("proc/diskstats", string(diskstats(k)))
		_ = iostat(k + 1)
	})
	// The problems appear in the first scrapes; after those, nothing more may be logged.
	const settle, scrapes = 5, 15
	time.Sleep(settle * time.Second)
	quietFrom := len(sender.output.String())
	time.Sleep((scrapes - settle) * time.Second)
	stopMoving()

	tail := &exportTail{path: got}
	require.NoError(t, tail.poll(), "the receiving collector's exports decode")
	require.NotEmpty(t, tail.exports)
	devices, mounts, cgroupPaths := map[string]bool{}, map[string]string{}, map[string]bool{}
	for _, md := range tail.exports {
		for i := range md.ResourceMetrics().Len() {
			checkStrings(t, md.ResourceMetrics().At(i).Resource().Attributes())
		}
		pdatawalk.ForEachNumberPoint(md, func(res pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
			a := dp.Attributes()
			checkStrings(t, a)
			dev, _ := a.Get("system.device")
			switch m.Name() {
			case "system.disk.io":
				devices[dev.Str()] = true
			case "system.filesystem.usage":
				mp, _ := a.Get("system.filesystem.mountpoint")
				mounts[mp.Str()] = dev.Str()
			case "container.disk.io":
				p, _ := res.Attributes().Get("cgroup.path")
				cgroupPaths[p.Str()] = true
			}
		})
	}
	for _, d := range []string{"sda", "sdb", "sdc"} {
		assert.True(t, devices[d], "device %q delivered (got %v)", d, devices)
	}
	assert.False(t, devices["sdd"], "the malformed line is skipped")
	assert.False(t, devices["sde"], "a device without identity is not a disk")
	assert.False(t, devices["nbd\uFFFD\\x01"])
	assert.Equal(t, map[string]string{"/": "/dev/sda1", "/data": "srv\uFFFD:/export"}, mounts)
	assert.True(t, cgroupPaths["/good.slice"], "cgroups: %v", cgroupPaths)
	assert.True(t, cgroupPaths["/bad.slice"], "a bad io.stat line costs neither its cgroup's good line nor the other cgroup: %v", cgroupPaths)

	// Nothing rejected downstream, nothing failed upstream.
	for name, c := range map[string]*collector{"sink": sink, "sender": sender} {
		out := c.output.String()
		for _, bad := range []string{"rejected", "Exporting failed", "\terror\t"} {
			assert.NotContains(t, out, bad, "%s log", name)
		}
	}

	// One WARN per persistent problem over the scrapes, nothing per scrape.
	out := sender.output.String()
	for _, problem := range []string{
		`"problem": "diskstats line 4 (sdd): field 6`,
		`"problem": "device sde dropped from I/O metrics: its sysfs identity could not be read`,
		`"problem": "device nbd` + "\uFFFD" + `\\x01 dropped from I/O metrics`,
		`"problem": "cgroup /bad.slice: io.stat line 2 (8:16): field rbytes`,
		`mountinfo line 3 \"3 1 8:33 / relative`,
		`"problem": "device sdb: ` + filepath.Join(root, "sys/class/block/sdb/queue/rotational"),
	} {
		n := 0
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "warn") && strings.Contains(line, problem) {
				n++
			}
		}
		assert.Equal(t, 1, n, "WARN lines naming %q over %d scrapes", problem, scrapes)
	}
	// The bad diskstats line is iostat's problem, told once in its words: cgroups, which reads the same
	// snapshot for device names, does not tell it again.
	assert.NotContains(t, out, "device names (devices then named by major:minor)", "one problem, one owner")
	assert.NotContains(t, out[quietFrom:], "\twarn\t", "nothing is logged per scrape over %d scrapes", scrapes-settle)
	assert.NotContains(t, out[quietFrom:], "Scrape problem")
	// Every problem lasts the whole run: none may be logged as cleared (a sysfs attribute read once,
	// at a device's first scrape, stays a problem while the device is reported).
	assert.NotContains(t, out, "Scrape problem cleared")
}

func checkStrings(t *testing.T, attrs pcommon.Map) {
	t.Helper()
	for k, v := range attrs.All() {
		if v.Type() == pcommon.ValueTypeStr {
			assert.True(t, utf8.ValidString(v.Str()), "%s=%q", k, v.Str())
			assert.LessOrEqual(t, len(v.Str()), 4096, k)
		}
	}
}

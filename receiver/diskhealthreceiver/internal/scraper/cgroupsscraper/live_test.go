package cgroupsscraper

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
)

// TestCgroupScraperLive creates a cgroup (v2 io when the machine offers it, else v1 blkio), runs a
// direct-I/O writer in it against a fresh loop device, and checks that the receiver attributes to that
// cgroup at least 95 % of the bytes the device's own counters (/proc/diskstats) saw in the interval.
// Needs root, losetup and dd; skipped elsewhere.
func TestCgroupScraperLive(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED LIVE CGROUP TEST: -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LIVE CGROUP TEST: needs root (creates a loop device and a cgroup)")
	}
	for _, tool := range []string{"losetup", "dd", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("SKIPPED LIVE CGROUP TEST: %s is not on PATH", tool)
		}
	}
	h, err := cgroupio.Detect("/sys/fs/cgroup")
	if err != nil {
		t.Skipf("SKIPPED LIVE CGROUP TEST: no cgroup I/O accounting here: %v", err)
	}

	// A 128 MiB file on a fresh loop device: nothing else writes to it.
	img := filepath.Join(t.TempDir(), "disk.img")
	require.NoError(t, os.WriteFile(img, nil, 0o600))
	require.NoError(t, os.Truncate(img, 128<<20))
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Skipf("SKIPPED LIVE CGROUP TEST: no loop device: %v: %s", err, out)
	}
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "--detach", loop).Run() })
	dev := filepath.Base(loop)
	majMin, err := os.ReadFile(filepath.Join("/sys/class/block", dev, "dev"))
	require.NoError(t, err)
	mm := strings.TrimSpace(string(majMin))

	name := fmt.Sprintf("diskhealth-live-%d", os.Getpid())
	cg := filepath.Join(h.Dir, name)
	if h.Version == cgroupio.V2 {
		// The io controller must be on for the root's children.
		if err := os.WriteFile(filepath.Join(h.Dir, "cgroup.subtree_control"), []byte("+io"), 0o644); err != nil {
			t.Skipf("SKIPPED LIVE CGROUP TEST: cannot enable the io controller: %v", err)
		}
	}
	require.NoError(t, os.Mkdir(cg, 0o755))
	t.Cleanup(func() { assert.NoError(t, os.Remove(cg)) })
	if h.Version == cgroupio.V1 {
		// Kernels that create blk-throttle's data lazily (6.x) count nothing for a device until a throttle
		// limit was set on it. The largest limit is no limit; it only switches the accounting on. The
		// receiver itself never writes to cgroupfs.
		require.NoError(t, os.WriteFile(filepath.Join(cg, "blkio.throttle.write_bps_device"),
			[]byte(mm+" 18446744073709551615"), 0o644))
	}

	cfg := testConfig("/")
	cfg.Devices.Include = []string{dev}
	clock := time.Now()
	s, _ := newTestCgroupScraper(t, cfg, &clock)
	s.now = time.Now
	_, err = s.scrape(t.Context())
	require.NoError(t, err)

	before := loopWrittenBytes(t, dev)
	const writeMiB = 64
	dd := exec.Command("sh", "-c", fmt.Sprintf("echo $$ > %s && exec dd if=/dev/zero of=%s bs=1M count=%d oflag=direct status=none",
		filepath.Join(cg, "cgroup.procs"), loop, writeMiB))
	out, err = dd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	after := loopWrittenBytes(t, dev)
	md, err := s.scrape(t.Context())
	require.NoError(t, err)

	deviceBytes := after - before
	require.GreaterOrEqual(t, deviceBytes, uint64(writeMiB<<20), "the device saw the writes")
	written, res, ok := cgroupWrites(md, "/"+name, dev)
	require.True(t, ok, "the cgroup is reported with its writes to %s", dev)
	t.Logf("%s (%s, cgroup %s): device counters %d bytes, attributed to /%s %d bytes (%.2f %%)",
		dev, mm, h.Version, deviceBytes, name, written, 100*float64(written)/float64(deviceBytes))
	assert.GreaterOrEqual(t, float64(written), 0.95*float64(deviceBytes))
	assert.LessOrEqual(t, written, deviceBytes)
	_, hasContainer := res.Attributes().Get("container.id")
	assert.False(t, hasContainer, "a plain cgroup is no container")
}

// loopWrittenBytes reads the device's sectors written (field 10) from /proc/diskstats.
func loopWrittenBytes(t *testing.T, dev string) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/diskstats")
	require.NoError(t, err)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 14 && f[2] == dev {
			v, err := strconv.ParseUint(f[9], 10, 64)
			require.NoError(t, err)
			return v * 512
		}
	}
	t.Fatalf("%s not in /proc/diskstats", dev)
	return 0
}

// cgroupWrites finds container.disk.io{direction=write, system.device=dev} of the cgroup at path.
func cgroupWrites(md pmetric.Metrics, path, dev string) (uint64, pcommon.Resource, bool) {
	var val uint64
	var res pcommon.Resource
	found := false
	pdatawalk.ForEachMetric(md, func(r pcommon.Resource, m pmetric.Metric) {
		p, ok := r.Attributes().Get("cgroup.path")
		if !ok || p.Str() != path || m.Name() != "container.disk.io" {
			return
		}
		dps := m.Sum().DataPoints()
		for i := range dps.Len() {
			dp := dps.At(i)
			d, _ := dp.Attributes().Get("system.device")
			dir, _ := dp.Attributes().Get("disk.io.direction")
			if d.Str() == dev && dir.Str() == "write" {
				val, res, found = uint64(dp.IntValue()), r, true
			}
		}
	})
	return val, res, found
}

package latencyscraper

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper/internal/metadata"
)

// cgroupWrites is, per cgroup.path, the write count of the device's disk_health.container.disk.operation.duration
// points and their bytes.
func cgroupWrites(md pmetric.Metrics, device string) (counts map[string]uint64, bytes map[string]int64) {
	counts, bytes = map[string]uint64{}, map[string]int64{}
	for i := range md.ResourceMetrics().Len() {
		ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			switch m.Name() {
			case "disk_health.container.disk.operation.duration":
				for k := range m.ExponentialHistogram().DataPoints().Len() {
					a := m.ExponentialHistogram().DataPoints().At(k).Attributes()
					dev, _ := a.Get("system.device")
					dir, _ := a.Get("disk.io.direction")
					path, _ := a.Get("cgroup.path")
					if dev.Str() == device && dir.Str() == "write" {
						counts[path.Str()] = m.ExponentialHistogram().DataPoints().At(k).Count()
					}
				}
			case "disk_health.container.disk.operation.io":
				for k := range m.Sum().DataPoints().Len() {
					a := m.Sum().DataPoints().At(k).Attributes()
					dev, _ := a.Get("system.device")
					dir, _ := a.Get("disk.io.direction")
					path, _ := a.Get("cgroup.path")
					if dev.Str() == device && dir.Str() == "write" {
						bytes[path.Str()] = m.Sum().DataPoints().At(k).IntValue()
					}
				}
			}
		}
	}
	return counts, bytes
}

// loopDevice attaches a loop device over a new sparse image of size bytes, detached at the end of the
// test, and returns its path and kernel name.
func loopDevice(t *testing.T, size int64) (path, name string) {
	t.Helper()
	losetup := dhtest.Tool(t, "losetup", "mount")
	img := filepath.Join(t.TempDir(), "disk.img")
	require.NoError(t, os.WriteFile(img, nil, 0o600))
	require.NoError(t, os.Truncate(img, size))
	out, err := exec.Command(losetup, "--find", "--show", img).CombinedOutput()
	require.NoError(t, err, "%s", out)
	path = strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command(losetup, "-d", path).Run() }) // a leftover loop device is freed at reboot
	return path, filepath.Base(path)
}

// On this host's v1 blkio hierarchy, with the real probes: a child cgroup writes 256 direct 4 KiB
// blocks to a loop device, and the scrape has its series with 256 writes and their bytes; once the
// cgroup is removed no series names it, and the device's other series does not count its writes a
// second time.
func TestPerCgroupOnThisHost(t *testing.T) {
	dhtest.RequireRoot(t, "loads BPF, creates loop devices and cgroups")
	h, err := cgroupio.Detect("/sys/fs/cgroup")
	if err != nil || h.Version != cgroupio.V1 {
		dhtest.Unavailable(t, "needs a cgroup v1 blkio hierarchy (this host: %+v, %v)", h, err)
	}
	loop, name := loopDevice(t, 32<<20)

	cfg := createDefaultConfig()
	cfg.DeviceClasses = append(cfg.DeviceClasses, "loop")
	cfg.PerCgroup.Enabled, cfg.PerCgroup.TopN, cfg.PerCgroup.MaxCgroups = true, 2, 64
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, openBiolat, time.Now)
	require.NoError(t, err)
	s.openCgroups = openCglat
	require.NoError(t, s.start(t.Context(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, s.shutdown(t.Context())) }()
	require.NotNil(t, s.cgProbe, "the per-cgroup probe attached")

	cg := filepath.Join(h.Dir, fmt.Sprintf("diskhealth-scraper-test-%d", os.Getpid()))
	require.NoError(t, os.Mkdir(cg, 0o755))
	t.Cleanup(func() { _ = os.Remove(cg) }) // removed by the test; this is for a failure before that
	path := "/" + filepath.Base(cg)
	out, err := exec.Command("sh", "-c", `echo $$ > "$0/cgroup.procs" && exec dd if=/dev/zero of="$1" bs=4k count=256 oflag=direct`, cg, loop).CombinedOutput()
	require.NoError(t, err, "%s", out)

	var counts map[string]uint64
	var bytes map[string]int64
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		counts, bytes = cgroupWrites(md, name)
		if counts[path] == 256 || time.Now().After(deadline) {
			break
		}
	}
	require.Equal(t, uint64(256), counts[path], "%v", counts)
	require.Equal(t, int64(256*4096), bytes[path])
	otherBefore := counts[otherPath]

	require.NoError(t, os.Remove(cg))
	for range 2 { // the probe frees the entries one scrape after it sees the cgroup gone
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		counts, _ = cgroupWrites(md, name)
		require.NotContains(t, counts, path)
		// Its writes stay counted where they were, in its series, which ends: not again in other.
		require.Equal(t, otherBefore, counts[otherPath])
	}
}

//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelatscraper

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper/internal/metadata"
)

// TestSourceChargesReadsToTheReadersCgroup turns per_cgroup on, through the factory, with the real
// probe; dd, in a child cgroup of its own in the io/blkio hierarchy (blkio on this hybrid host),
// reads a file of a fresh ext4 on a loop device in 4 KiB calls twice: first cold (the cache dropped),
// then warm. The {dd's cgroup, mount} read series has dd's reads (its own count, within 1 %: dd
// makes them all, the EOF read included), the first pass's pages mostly misses, the second's hits.
func TestSourceChargesReadsToTheReadersCgroup(t *testing.T) {
	h, err := cgroupio.Detect("/sys/fs/cgroup")
	if err != nil {
		testkit.Unavailable(t, "no io/blkio cgroup hierarchy: %v", err)
	}
	dd := testkit.Tool(t, "dd", "coreutils")
	mnt := testkit.Ext4OnLoop(t, 64<<20)
	path := filepath.Join(mnt, "data")
	const size, chunk = 1 << 20, 4 << 10
	require.NoError(t, os.WriteFile(path, make([]byte, size), 0o644))
	child := testkit.ChildCgroup(t, h.Dir, "filelat-reader")
	cgPath := "/" + filepath.Base(child)

	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Enabled, cfg.PerCgroup.Enabled = true, true
	s, err := f.CreateMetrics(t.Context(), scrapertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, s.Start(t.Context(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, s.Shutdown(t.Context())) }()

	read := func() {
		out, err := testkit.CgroupCommand(child, dd, "if="+path, "of=/dev/null", "bs="+strconv.Itoa(chunk)).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	scrape := func() (count, hits, misses int64) {
		md, err := s.ScrapeMetrics(t.Context())
		require.NoError(t, err)
		pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
			mine := func(a pcommon.Map) bool {
				cg, _ := a.Get("cgroup.path")
				mp, _ := a.Get("system.filesystem.mountpoint")
				return cg.Str() == cgPath && mp.Str() == mnt
			}
			switch m.Name() {
			case "disk_health.container.filesystem.operation.duration":
				dps := m.ExponentialHistogram().DataPoints()
				for i := range dps.Len() {
					if op, _ := dps.At(i).Attributes().Get("disk_health.file.operation"); mine(dps.At(i).Attributes()) && op.Str() == "read" {
						count = int64(dps.At(i).Count())
					}
				}
			case "disk_health.container.filesystem.page_cache.pages":
				dps := m.Sum().DataPoints()
				for i := range dps.Len() {
					if !mine(dps.At(i).Attributes()) {
						continue
					}
					if r, _ := dps.At(i).Attributes().Get("disk_health.page_cache.result"); r.Str() == "hit" {
						hits = dps.At(i).IntValue()
					} else {
						misses = dps.At(i).IntValue()
					}
				}
			}
		})
		return count, hits, misses
	}

	// Cold: the file's pages leave the cache, so dd's reads bring them in.
	file, err := os.Open(path)
	require.NoError(t, err)
	require.NoError(t, file.Sync())
	require.NoError(t, unix.Fadvise(int(file.Fd()), 0, 0, unix.FADV_DONTNEED))
	require.NoError(t, file.Close())
	const calls = size/chunk + 1 // the last read returns 0 bytes (EOF)
	read()
	count, hits, misses := scrape()
	t.Logf("cold: %s on %s: %d reads (dd made %d), %d hits, %d misses", cgPath, mnt, count, calls, hits, misses)
	assert.InEpsilon(t, calls, count, 0.01, "dd's reads in its cgroup's series")
	assert.GreaterOrEqual(t, misses, int64(size/4096*9/10), "a cold pass misses (nearly) every page")

	read()
	count2, hits2, misses2 := scrape()
	t.Logf("warm: %d reads, %d hits (+%d), %d misses (+%d)", count2, hits2, hits2-hits, misses2, misses2-misses)
	assert.InEpsilon(t, 2*calls, count2, 0.01)
	assert.GreaterOrEqual(t, hits2-hits, int64(size/4096*9/10), "a warm pass hits (nearly) every page")
	assert.LessOrEqual(t, misses2-misses, int64(size/4096/10))
}

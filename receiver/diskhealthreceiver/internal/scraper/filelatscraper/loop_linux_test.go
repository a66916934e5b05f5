//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelatscraper

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper/internal/metadata"
)

// TestSourceSeesReadsOnLoopExt4 turns the source on, through its factory, with the real probe, reads a
// file of a fresh ext4 on a loop device in 4 KiB calls, and finds them in the scrape under that mount:
// at least the reader's calls (another task may read there too, never fewer), its bytes, and its
// pages as hits and misses.
func TestSourceSeesReadsOnLoopExt4(t *testing.T) {
	mnt := testkit.Ext4OnLoop(t, 64<<20)
	path := filepath.Join(mnt, "data")
	const size, chunk = 1 << 20, 4 << 10
	require.NoError(t, os.WriteFile(path, make([]byte, size), 0o644))

	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Enabled = true
	s, err := f.CreateMetrics(t.Context(), scrapertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, s.Start(t.Context(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, s.Shutdown(t.Context())) }()

	file, err := os.Open(path)
	require.NoError(t, err)
	buf := make([]byte, chunk)
	var calls uint64
	for {
		_, err := file.Read(buf)
		calls++
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	require.NoError(t, file.Close())

	md, err := s.ScrapeMetrics(t.Context())
	require.NoError(t, err)
	var count, bytes, pages int64
	var sum float64
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		switch m.Type() {
		case pmetric.MetricTypeExponentialHistogram:
			dps := m.ExponentialHistogram().DataPoints()
			for i := range dps.Len() {
				a := dps.At(i).Attributes()
				if mp, _ := a.Get("system.filesystem.mountpoint"); mp.Str() == mnt {
					if op, _ := a.Get("disk_health.file.operation"); op.Str() == "read" {
						count, sum = int64(dps.At(i).Count()), dps.At(i).Sum()
						fs, _ := a.Get("system.filesystem.type")
						assert.Equal(t, "ext4", fs.Str())
					}
				}
			}
		case pmetric.MetricTypeSum:
			dps := m.Sum().DataPoints()
			for i := range dps.Len() {
				if mp, _ := dps.At(i).Attributes().Get("system.filesystem.mountpoint"); mp.Str() != mnt {
					continue
				}
				switch m.Name() {
				case "disk_health.filesystem.io":
					bytes += dps.At(i).IntValue()
				case "disk_health.filesystem.page_cache.pages":
					pages += dps.At(i).IntValue()
				}
			}
		}
	})
	t.Logf("%s: %d reads (%d made), %d bytes, %d pages, %v in calls", mnt, count, calls, bytes, pages, time.Duration(sum*float64(time.Second)))
	assert.GreaterOrEqual(t, count, int64(calls), "the reader's calls, EOF included")
	assert.GreaterOrEqual(t, bytes, int64(size))
	assert.GreaterOrEqual(t, pages, int64(size/chunk))
	assert.Positive(t, sum)
}

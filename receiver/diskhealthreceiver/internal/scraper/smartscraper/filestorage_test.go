package smartscraper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/extension"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device/devicetest"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// collectorRun is one collector process: the file_storage extension on the state directory and a
// SMART scraper using it, started as the collector starts them.
type collectorRun struct {
	h   *smartHarness
	ext extension.Extension
}

func startRun(t *testing.T, m *devicetest.Machine, dir string) *collectorRun {
	t.Helper()
	ext := dhtest.FileStorage(t, dir)
	h := newHarnessOn(t, m, nil)
	h.s.storage = &storageID
	require.NoError(t, h.s.start(t.Context(), dhtest.StorageHost{storageID: ext}))
	return &collectorRun{h: h, ext: ext}
}

// stop shuts the run down in the collector's order: receivers first, then extensions.
func (r *collectorRun) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, r.h.s.shutdown(t.Context()))
	require.NoError(t, r.ext.Shutdown(t.Context()))
}

// errorCounts is the nvme.error.count of every error-log event a run sent, in order.
func errorCounts(h *smartHarness) []int64 {
	var out []int64
	for _, r := range nvmeErrorRecords(h) {
		c, _ := r.Attributes().Get("nvme.error.count")
		out = append(out, c.Int())
	}
	return out
}

// Each new NVMe error-log entry is one event, exactly once, across collector restarts, with contrib's
// real file_storage extension on one directory (a bbolt file): every restart is a new extension and a
// new scraper on that directory. Entries made while no collector ran are sent by the next one; an
// entry already sent is never sent again, and a restart with nothing new sends nothing.
func TestNVMeErrorLogOnceAcrossRestartsWithFileStorage(t *testing.T) {
	dir := t.TempDir()
	m := fleet(t)
	errLog := devicetest.NVMeLog(nvme.LogError)
	var sent []int64

	// First start ever: entries 4 and 5 are history; 6 appears while it runs.
	run := startRun(t, m, dir)
	run.h.scrape(t)
	setPage(m.Disk("nvme0"), errLog, devicetest.ErrorLog(16, 6, 5, 4))
	run.h.scrape(t)
	run.h.scrape(t)
	assert.Equal(t, []int64{6}, errorCounts(run.h))
	sent = append(sent, errorCounts(run.h)...)
	run.stop(t)

	// Down while the drive logs 7 and 8: the next collector sends exactly those, then 9 when it comes.
	setPage(m.Disk("nvme0"), errLog, devicetest.ErrorLog(16, 8, 7, 6, 5, 4))
	run = startRun(t, m, dir)
	run.h.scrape(t)
	run.h.scrape(t)
	setPage(m.Disk("nvme0"), errLog, devicetest.ErrorLog(16, 9, 8, 7, 6, 5, 4))
	run.h.scrape(t)
	assert.Equal(t, []int64{7, 8, 9}, errorCounts(run.h))
	sent = append(sent, errorCounts(run.h)...)
	run.stop(t)

	// Restarted with nothing new: nothing is sent.
	run = startRun(t, m, dir)
	run.h.scrape(t)
	run.h.scrape(t)
	assert.Empty(t, errorCounts(run.h))
	run.stop(t)

	assert.Equal(t, []int64{6, 7, 8, 9}, sent, "every entry made after the first start, each once")
	assert.Empty(t, run.h.obs.FilterMessage(storageWarning).All())
}

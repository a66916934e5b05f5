package filesystemscraper

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"golang.org/x/sys/unix"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/metadata"
)

// ckptWriter is a training job's checkpointing on a real filesystem: a save of size every cadence,
// written in 1 MiB chunks, keep-2 with rotation after the save, and a log growing in between. It stops
// at the first ENOSPC and records when.
type ckptWriter struct {
	dir               string
	size, logPerCycle int
	cadence           time.Duration
	keep              int

	mu     sync.Mutex
	failAt time.Time
	err    error

	// logged is when the log last grew: it grows at a steady rate in time, as a trainer's log does,
	// however the machine's load stretches the job's loops.
	logged time.Time
	buf    []byte
}

// grow appends to the log what the rate gives for the time since it last grew.
func (w *ckptWriter) grow(log *os.File) error {
	now := time.Now()
	n := int(float64(w.logPerCycle) * now.Sub(w.logged).Seconds() / w.cadence.Seconds())
	w.logged = now
	if n > len(w.buf) {
		w.buf = make([]byte, n)
	}
	_, err := log.Write(w.buf[:n])
	return err
}

func (w *ckptWriter) run(stop <-chan struct{}) {
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i) // not zeros: nothing may compress or skip them
	}
	log, err := os.OpenFile(filepath.Join(w.dir, "train.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		w.fail(err)
		return
	}
	defer log.Close()
	const tick = 25 * time.Millisecond
	w.logged = time.Now()
	var copies []string
	next := time.Now().Add(w.cadence)
	for save := 0; ; {
		select {
		case <-stop:
			return
		case <-time.After(tick):
		}
		if err := w.grow(log); err != nil {
			w.fail(err)
			return
		}
		if time.Now().Before(next) {
			continue
		}
		next = next.Add(w.cadence)
		name := filepath.Join(w.dir, fmt.Sprintf("checkpoint-%d", save))
		save++
		if err := w.save(name, chunk, log); err != nil {
			w.fail(err)
			return
		}
		copies = append(copies, name)
		if len(copies) > w.keep {
			if err := os.Remove(copies[0]); err != nil {
				w.fail(err)
				return
			}
			copies = copies[1:]
		}
	}
}

// save writes one checkpoint, the log still growing meanwhile.
func (w *ckptWriter) save(name string, chunk []byte, log *os.File) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	for range w.size / len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			return err
		}
		if err := w.grow(log); err != nil {
			return err
		}
		time.Sleep(25 * time.Millisecond)
	}
	return f.Close()
}

func (w *ckptWriter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failAt, w.err = time.Now(), err
}

func (w *ckptWriter) failed() (time.Time, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failAt, w.err
}

// TestFSScraperCheckpointRealExt4: a job saving 24 MiB every 2.5 s with keep-2 (rotation after the save)
// on a loop-mounted ext4 of 256 MiB, with a log growing by a quarter of a save per cycle, runs into
// ENOSPC after several cycles. The filesystem source, scraping every 200 ms, sends will_fail at least
// one cadence before it and has learned the size and the retention.
func TestFSScraperCheckpointRealExt4(t *testing.T) {
	dir := t.TempDir()
	mnt, loop := loopExt4(t, dir, 256<<20)
	// No root reserve: the writer runs as root here, and the free space it sees must be df's Avail.
	run(t, dhtest.Tool(t, "tune2fs", "e2fsprogs"), "-m", "0", loop)

	w := &ckptWriter{dir: mnt, size: 24 << 20, logPerCycle: 6 << 20, cadence: 2500 * time.Millisecond, keep: 2}
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(mnt, &st))
	// Fill so that the peak of three copies fits for about eight cycles of log growth.
	fill := int64(st.Bavail)*st.Bsize - 3*int64(w.size) - 8*int64(w.logPerCycle)
	require.Positive(t, fill)
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "dataset"), make([]byte, fill), 0o644))
	run(t, "sync")

	sink := new(consumertest.LogsSink)
	cfg := createDefaultConfig()
	cfg.MountPoints = match.Config{Include: []string{mnt}}
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, sink, time.Now)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); w.run(stop) }()
	defer func() { close(stop); <-done }()

	var eventAt time.Time
	var sizeP50, copies int64
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if at, _ := w.failed(); !at.IsZero() {
			break
		}
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		if eventAt.IsZero() && sink.LogRecordCount() > 0 {
			eventAt = time.Now()
		}
		if v, ok := domainValue(md, "system.filesystem.checkpoint.size", blockDomain(t, mnt)); ok {
			sizeP50 = v
		}
		if v, ok := domainValue(md, "system.filesystem.checkpoint.copies", blockDomain(t, mnt)); ok {
			copies = v
		}
		time.Sleep(200 * time.Millisecond)
	}
	failAt, werr := w.failed()
	require.False(t, failAt.IsZero(), "the job never ran out of space")
	require.ErrorIs(t, werr, syscall.ENOSPC, "the job failed with something else")
	require.False(t, eventAt.IsZero(), "no will_fail event before ENOSPC")
	lead := failAt.Sub(eventAt)
	t.Logf("will_fail %.1fs (%.1f cadences) before ENOSPC; learned size %.1f MiB, copies %d", lead.Seconds(), lead.Seconds()/w.cadence.Seconds(), float64(sizeP50)/(1<<20), copies)
	assert.GreaterOrEqual(t, lead, w.cadence, "at least one cadence ahead")
	assert.InDelta(t, float64(w.size), float64(sizeP50), 0.1*float64(w.size), "size within ±10 %")
	assert.Equal(t, int64(w.keep), copies)
}

// blockDomain is the major:minor of the filesystem at path.
func blockDomain(t *testing.T, path string) string {
	var st unix.Stat_t
	require.NoError(t, unix.Stat(path, &st))
	return fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
}

package tick

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is the iostat source's k6.8 root: its sysfs, and the first of its /proc/diskstats reads.
const fixture = "../scraper/iostatscraper/testdata/roots/k6.8-nvme-raid"

// countingOpen opens files as os.Open does and counts the reads of their content.
type countingOpen struct{ reads atomic.Int64 }

type countedFile struct {
	*os.File
	c *countingOpen
}

func (f countedFile) ReadAt(p []byte, off int64) (int, error) {
	if off == 0 {
		f.c.reads.Add(1) // FileReader reads the whole file from offset 0, once per Read
	}
	return f.File.ReadAt(p, off)
}

func (c *countingOpen) open(name string) (diskstats.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return countedFile{f, c}, nil
}

// root builds a root_path whose proc/diskstats is the fixture's first read and whose sys is the fixture's.
func root(t *testing.T) string {
	t.Helper()
	r := t.TempDir()
	testkit.RootAt(t, r).CopyTree(filepath.Join(fixture, "sys"), "sys", nil)
	data, err := os.ReadFile(filepath.Join(fixture, "proc", "diskstats.1"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(r, "proc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(r, "proc", "diskstats"), data, 0o644))
	return r
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// use returns the sample time of the snapshot r is given now.
func use(t *testing.T, r *Reader) time.Time {
	t.Helper()
	var at time.Time
	require.NoError(t, r.Use(context.Background(), func(sn *Snapshot) error {
		at = sn.At
		return nil
	}))
	return at
}

// The reuse rule of the package comment, step by step: reuse within half the asker's interval, never
// the same snapshot twice to one source.
func TestReuseRule(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	var n countingOpen
	sh := New(root(t), c.now, n.open)
	iostat, latency := sh.Reader(10*time.Second), sh.Reader(10*time.Second)
	defer func() { assert.NoError(t, iostat.Close()) }()

	t0 := use(t, iostat)
	assert.EqualValues(t, 1, n.reads.Load(), "the first source of the tick reads")
	c.add(time.Second)
	assert.Equal(t, t0, use(t, latency), "another source within half its interval reuses the read")
	assert.EqualValues(t, 1, n.reads.Load())

	c.add(time.Second)
	t1 := use(t, latency)
	assert.EqualValues(t, 2, n.reads.Load(), "a source never gets the same snapshot twice")
	assert.Equal(t, c.now(), t1)
	c.add(5 * time.Second) // latency's read is now exactly 5 s old: half of iostat's interval
	assert.Equal(t, t1, use(t, iostat))
	assert.EqualValues(t, 2, n.reads.Load())

	c.add(time.Nanosecond + 5*time.Second)
	slow := sh.Reader(30 * time.Second)
	assert.Equal(t, t1, use(t, slow), "10 s old: within half of a 30 s interval")
	assert.NotEqual(t, t1, use(t, latency), "older than half of latency's 10 s: read again")
	assert.EqualValues(t, 3, n.reads.Load())
}

// TestWaitedSnapshotIsTheTicks: a source that asks while another holds the snapshot longer than half its
// interval (a slow scrape) is given that snapshot when its turn comes: it asked within half an interval
// of the read, and another read would be a second one for the same tick.
func TestWaitedSnapshotIsTheTicks(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	var asks atomic.Int64
	now := func() time.Time { asks.Add(1); return c.now() }
	var n countingOpen
	sh := New(root(t), now, n.open)
	iostat, latency := sh.Reader(10*time.Second), sh.Reader(10*time.Second)
	defer func() { assert.NoError(t, iostat.Close()) }()

	got := make(chan time.Time, 1)
	t0 := time.Time{}
	require.NoError(t, iostat.Use(t.Context(), func(sn *Snapshot) error {
		t0 = sn.At
		before := asks.Load()
		go func() {
			_ = latency.Use(context.Background(), func(sn *Snapshot) error { got <- sn.At; return nil })
		}()
		// latency has asked (and waits for this scrape) before the clock passes half its interval.
		require.Eventually(t, func() bool { return asks.Load() > before }, 5*time.Second, time.Millisecond, "latency asked")
		c.add(6 * time.Second)
		return nil
	}))
	assert.Equal(t, t0, <-got, "latency takes the tick's snapshot it waited for")
	assert.EqualValues(t, 1, n.reads.Load(), "one read for the tick")
}

// A failed read is not shared: the next source reads again, and sees the file once it is back.
func TestFailedReadNotShared(t *testing.T) {
	r := root(t)
	path := filepath.Join(r, "proc", "diskstats")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.Remove(path))
	sh := New(r, time.Now, nil)
	a, b := sh.Reader(time.Minute), sh.Reader(time.Minute)
	called := false
	err = a.Use(context.Background(), func(*Snapshot) error { called = true; return nil })
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, path)
	assert.False(t, called)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	require.NoError(t, b.Use(context.Background(), func(sn *Snapshot) error {
		assert.NotEmpty(t, sn.Stats)
		return nil
	}))
	require.NoError(t, b.Close())
}

// The parser's per-line errors come with the snapshot; an empty file says so.
func TestParseErrorsAndEmpty(t *testing.T) {
	r := root(t)
	path := filepath.Join(r, "proc", "diskstats")
	require.NoError(t, os.WriteFile(path, []byte("   8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n 8 16 sdb x 2 3 4 5 6 7 8 9 10 11\n"), 0o644))
	sh := New(r, time.Now, nil)
	rd := sh.Reader(0)
	require.NoError(t, rd.Use(context.Background(), func(sn *Snapshot) error {
		require.Len(t, sn.Stats, 1)
		var lines *parseerr.Lines
		require.ErrorAs(t, sn.ParseErr, &lines)
		assert.False(t, sn.Empty)
		return nil
	}))
	require.NoError(t, os.WriteFile(path, []byte("\n \n"), 0o644))
	require.NoError(t, rd.Close()) // so the next read opens the rewritten file at once
	require.NoError(t, rd.Use(context.Background(), func(sn *Snapshot) error {
		assert.True(t, sn.Empty)
		assert.Equal(t, path, sn.Path)
		return nil
	}))
	require.NoError(t, rd.Close())
}

// The first reader owns the input: Own passes the input's errors to it and to no other reader.
func TestOwner(t *testing.T) {
	sh := New(root(t), time.Now, nil)
	iostat, latency := sh.Reader(time.Minute), sh.Reader(time.Minute)
	bad := errors.New("diskstats line 2 (sdb): field 4: invalid syntax")
	assert.True(t, iostat.Owns())
	assert.False(t, latency.Owns())
	assert.Equal(t, bad, iostat.Own(bad))
	require.NoError(t, latency.Own(bad))
	assert.True(t, New(root(t), time.Now, nil).Reader(0).OrOwn("", time.Now).Owns(), "a source's own snapshot is its own")
}

// Identities read sysfs once per snapshot, whichever source asks; a source that does not ask costs
// no identity read.
func TestIdentities(t *testing.T) {
	sh := New(root(t), time.Now, nil)
	a, b := sh.Reader(time.Minute), sh.Reader(time.Minute)
	require.NoError(t, a.Use(context.Background(), func(sn *Snapshot) error {
		assert.Zero(t, sh.idsSeq, "not asked: not read")
		return nil
	}))
	require.NoError(t, b.Use(context.Background(), func(sn *Snapshot) error {
		require.NoError(t, sn.Identities())
		id, ok := sn.Identity("nvme0n1")
		require.True(t, ok)
		assert.Equal(t, blockdev.ClassDisk, id.Class)
		assert.Equal(t, sn.seq, sh.idsSeq)
		assert.NoError(t, sn.Reread("nvme0n1"))
		again, _ := sn.Identity("nvme0n1")
		assert.Equal(t, *id, *again)
		return nil
	}))
	require.NoError(t, a.Close())
}

// A source waiting for another's use gives up when its scrape's context ends.
func TestWaitHonoursContext(t *testing.T) {
	sh := New(root(t), time.Now, nil)
	a, b := sh.Reader(time.Minute), sh.Reader(time.Minute)
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- a.Use(context.Background(), func(*Snapshot) error {
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := b.Use(ctx, func(*Snapshot) error { return errors.New("must not run") })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	close(release)
	require.NoError(t, <-done)
	require.NoError(t, a.Close())
}

// Four sources on their own goroutines, as the receiver runs them (run with -race): every use sees a
// whole snapshot, and the reads are fewer than the uses.
func TestConcurrentSources(t *testing.T) {
	var n countingOpen
	sh := New(root(t), time.Now, n.open)
	const sources, ticks = 4, 50
	var wg sync.WaitGroup
	var uses atomic.Int64
	for range sources {
		r := sh.Reader(time.Hour)
		wg.Go(func() {
			for range ticks {
				assert.NoError(t, r.Use(context.Background(), func(sn *Snapshot) error {
					uses.Add(1)
					if err := sn.Identities(); err != nil {
						return err
					}
					for i := range sn.Stats {
						if _, ok := sn.Identity(sn.Stats[i].DeviceName); !ok {
							return errors.New("a device of the snapshot without identity: " + sn.Stats[i].DeviceName)
						}
					}
					return nil
				}))
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, sources*ticks, uses.Load())
	assert.Less(t, n.reads.Load(), int64(sources*ticks))
	assert.GreaterOrEqual(t, n.reads.Load(), int64(ticks), "no source gets one snapshot twice")
	require.NoError(t, sh.Reader(0).Close())
}

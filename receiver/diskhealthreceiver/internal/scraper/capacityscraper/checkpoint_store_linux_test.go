package capacityscraper

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage/fsusagetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
)

// dataKey is /data's domain (259:5, nvme1n1) in the checkpoint storage of the binds root.
const dataKey = "domain/3c9d1f2e-5a6b-4c7d-8e9f-0a1b2c3d4e5f"

// storedRun is the binds root's source with the checkpoint storage of ext, started, its logs observed;
// its ID is the same at every start, as a collector's is.
func storedRun(t *testing.T, ext component.Component, clock *time.Time, sink consumer.Logs) (*capScraper, *fsusagetest.Statfs, *observer.ObservedLogs) {
	t.Helper()
	s, f := bindsRootWith(t, "keep", clock, sink, func(_ *dhtest.Root, cfg *Config) { cfg.Storage = &ckptStorageID })
	core, logs := observer.New(zapcore.InfoLevel)
	s.logger = zap.New(core)
	s.learners.logger = s.logger
	s.id = component.NewID(metadata.Type)
	require.NoError(t, s.start(t.Context(), dhtest.StorageHost{ckptStorageID: ext}))
	return s, f, logs
}

// keepAfterScrapes scrapes the keep-after job on /data every minute from from to to.
func keepAfterScrapes(t *testing.T, s *capScraper, f *fsusagetest.Statfs, clock *time.Time, from, to time.Duration) {
	t.Helper()
	for at := from; at < to; at += time.Minute {
		*clock = t0.Add(at)
		keepAfterAt(f, at)
		_, err := s.scrape(t.Context())
		require.NoError(t, err, "at %v", at)
	}
}

func warns(logs *observer.ObservedLogs) []observer.LoggedEntry {
	return logs.FilterLevelExact(zapcore.WarnLevel).All()
}

// learnsWithoutStorage runs the keep-after job on the source with the storage ext, one that cannot be
// used, and checks that this costs only what is kept: every scrape without an error, the job learned
// and its will_fail event sent, one WARN that the state is not kept.
func learnsWithoutStorage(t *testing.T, ext component.Component) *capScraper {
	t.Helper()
	clock := t0
	sink := new(consumertest.LogsSink)
	s, f, logs := storedRun(t, ext, &clock, sink)
	keepAfterScrapes(t, s, f, &clock, 0, 7*time.Hour)
	assert.Equal(t, 1, sink.LogRecordCount(), "the will_fail event")
	require.Len(t, warns(logs), 1, "one WARN")
	assert.Contains(t, warns(logs)[0].Message, "checkpoint state not kept")
	t.Logf("the WARN: %s %v", warns(logs)[0].Message, warns(logs)[0].ContextMap())
	return s
}

// TestFSScraperRefusesABadRecord (issue 43): a record that cannot be restored (here cut short) costs
// one WARN naming its key, no scrape error, and is deleted: the next start does not meet it again.
// Before, it was a scrape error at the first scrape, and it stayed stored.
func TestFSScraperRefusesABadRecord(t *testing.T) {
	ext := dhtest.FileStorage(t, t.TempDir())
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	clock := t0
	s, f, _ := storedRun(t, ext, &clock, nil)
	keepAfterScrapes(t, s, f, &clock, 0, 7*time.Hour)
	require.NoError(t, s.shutdown(t.Context()))

	client, err := ext.(storage.Extension).GetClient(t.Context(), component.KindReceiver, s.id, "checkpoint")
	require.NoError(t, err)
	record, err := client.Get(t.Context(), dataKey)
	require.NoError(t, err)
	require.NotEmpty(t, record, "the learned job was stored")
	require.NoError(t, client.Set(t.Context(), dataKey, record[:len(record)/2]))
	require.NoError(t, client.Close(t.Context()))

	s, f, logs := storedRun(t, ext, &clock, nil)
	keepAfterScrapes(t, s, f, &clock, 7*time.Hour, 7*time.Hour+10*time.Minute)
	require.Len(t, warns(logs), 1, "one WARN")
	assert.Contains(t, warns(logs)[0].Message, "refused")
	assert.Equal(t, dataKey, warns(logs)[0].ContextMap()["key"])
	require.NoError(t, s.shutdown(t.Context()))

	s, f, logs = storedRun(t, ext, &clock, nil)
	keepAfterScrapes(t, s, f, &clock, 7*time.Hour+10*time.Minute, 7*time.Hour+20*time.Minute)
	assert.Empty(t, warns(logs), "the bad record is gone")
	require.NoError(t, s.shutdown(t.Context()))
}

// fakeStorage is a storage extension whose clients are client, or err.
type fakeStorage struct {
	component.StartFunc
	component.ShutdownFunc
	client storage.Client
	err    error
}

func (f *fakeStorage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return f.client, f.err
}

// hungClient is a state directory that does not answer (a hung NFS server): every call waits until
// free closes release, or its context ends.
type hungClient struct {
	release chan struct{}
	free    func()
}

func newHungClient(t *testing.T) hungClient {
	release := make(chan struct{})
	c := hungClient{release: release, free: sync.OnceFunc(func() { close(release) })}
	t.Cleanup(c.free) // a test that failed midway leaks nothing
	return c
}

func (c hungClient) wait(ctx context.Context) error {
	select {
	case <-c.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c hungClient) Get(ctx context.Context, _ string) ([]byte, error) { return nil, c.wait(ctx) }
func (c hungClient) Set(ctx context.Context, _ string, _ []byte) error { return c.wait(ctx) }
func (c hungClient) Delete(ctx context.Context, _ string) error        { return c.wait(ctx) }
func (c hungClient) Batch(ctx context.Context, _ ...*storage.Operation) error {
	return c.wait(ctx)
}

// Close has nothing left to write: it returns at once.
func (hungClient) Close(context.Context) error { return nil }

// TestFSScraperStorageThatCannotBeUsed (issue 43): a state directory that cannot be opened (full) or does
// not answer (hung) costs the persistence with one WARN: the source starts, every scrape returns without
// an error, the job is learned and its will_fail event sent as without storage, and shutdown returns
// within its context. Before, the full directory failed the start (every source with it) and the
// store's writes ran inside the scrape.
func TestFSScraperStorageThatCannotBeUsed(t *testing.T) {
	for _, name := range []string{"full", "hung"} {
		t.Run(name, func(t *testing.T) {
			ext := &fakeStorage{err: syscall.ENOSPC}
			var hung hungClient
			if name == "hung" {
				hung = newHungClient(t)
				ext = &fakeStorage{client: hung}
			}
			s := learnsWithoutStorage(t, ext)
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			err := s.shutdown(ctx)
			if name == "full" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, "not flushed")
			// The directory answers again: the storage's goroutine ends (what the shutdown gave up on is
			// not written: its context is over), and the client is closed.
			hung.free()
			require.NoError(t, s.store.Close(context.Background()))
		})
	}
}

// TestDomainOwner: a record belongs to the filesystem's UUID where it has one; else to the mount's
// source, root, type and mount point, so that two tmpfs under a reused anonymous 0:N are told apart;
// a mount without a source has no identity (nothing is stored or restored for it).
func TestDomainOwner(t *testing.T) {
	result := func(uuid, source, root, fstype, mp string) *fsusage.Result {
		return &fsusage.Result{Domain: fsusage.Domain{Major: 0, Minor: 45, UUID: uuid},
			Mount: &fsusage.Mount{Source: source, Root: root, FSType: fstype, MountPoint: mp}}
	}
	assert.Equal(t, "uuid 3c9d", domainOwner(result("3c9d", "/dev/nvme1n1", "/", "ext4", "/data")))
	shm, run := domainOwner(result("", "tmpfs", "/", "tmpfs", "/dev/shm")), domainOwner(result("", "tmpfs", "/", "tmpfs", "/run"))
	assert.NotEmpty(t, shm)
	assert.NotEqual(t, shm, run)
	assert.NotEqual(t, domainOwner(result("", "srv:/a", "/", "nfs4", "/mnt")), domainOwner(result("", "srv:/b", "/", "nfs4", "/mnt")))
	assert.Empty(t, domainOwner(result("", "", "/", "tmpfs", "/x")))
	assert.NotEqual(t, projectOwner(result("3c9d", "", "", "", ""), 1), projectOwner(result("3c9d", "", "", "", ""), 2))
	assert.Empty(t, projectOwner(result("", "", "/", "tmpfs", "/x"), 1))
}

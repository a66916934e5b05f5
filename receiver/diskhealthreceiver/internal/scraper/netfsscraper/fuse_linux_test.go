package netfsscraper

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fuseconn"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper/internal/metadata"
)

// daemonEnv, set to a mount point, makes the test binary a FUSE daemon (see init): the test kills
// that process to show what a dead daemon looks like, which it could not do to itself.
const daemonEnv = "NETFS_TEST_FUSE_DAEMON"

func init() {
	if mp := os.Getenv(daemonEnv); mp != "" {
		os.Exit(serveBlockingFS(mp))
	}
}

// blockRoot is a FUSE filesystem with one file, "block", whose reads block until the daemon gets
// SIGUSR1, as a daemon stuck on its backend (a bucket, a dead network) does. Its statfs answers,
// unless the daemon got SIGUSR2: then statfs blocks too, until SIGUSR1.
type blockRoot struct {
	fs.Inode
	release    chan struct{}
	hangStatfs atomic.Bool
}

var _ fs.NodeStatfser = (*blockRoot)(nil)

func (r *blockRoot) Statfs(_ context.Context, out *fuse.StatfsOut) syscall.Errno {
	if r.hangStatfs.Load() {
		select {
		case <-r.release:
		case <-time.After(2 * time.Minute):
		}
	}
	*out = fuse.StatfsOut{Blocks: 1000, Bfree: 500, Bavail: 500, Bsize: 4096, Frsize: 4096, NameLen: 255}
	return fs.OK
}

func (r *blockRoot) OnAdd(ctx context.Context) {
	r.AddChild("block", r.NewPersistentInode(ctx, &blockFile{release: r.release}, fs.StableAttr{Mode: syscall.S_IFREG}), false)
}

type blockFile struct {
	fs.Inode
	release chan struct{}
}

var (
	_ fs.NodeOpener    = (*blockFile)(nil)
	_ fs.NodeReader    = (*blockFile)(nil)
	_ fs.NodeGetattrer = (*blockFile)(nil)
)

func (f *blockFile) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, fs.OK
}

func (f *blockFile) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode, out.Size = 0o444, 1
	return fs.OK
}

func (f *blockFile) Read(_ context.Context, _ fs.FileHandle, _ []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	// The request's context is ignored, as a stuck daemon ignores interrupts. The limit is a dead
	// man's switch should the test lose track of the daemon.
	select {
	case <-f.release:
	case <-time.After(2 * time.Minute):
	}
	if off > 0 {
		return fuse.ReadResultData(nil), fs.OK
	}
	return fuse.ReadResultData([]byte("x")), fs.OK
}

// serveBlockingFS mounts a blockRoot at mp, says "ready" on stdout and serves until unmounted or
// killed; SIGUSR2 makes statfs block, SIGUSR1 answers the blocked calls and every later one.
func serveBlockingFS(mp string) int {
	root := &blockRoot{release: make(chan struct{})}
	srv, err := fs.Mount(mp, root, &fs.Options{MountOptions: fuse.MountOptions{
		DirectMountStrict: true, FsName: "netfs-test", Name: "netfstest",
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mount:", err)
		return 1
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGUSR2 {
				root.hangStatfs.Store(true)
				continue
			}
			close(root.release)
			return
		}
	}()
	fmt.Println("ready")
	srv.Wait()
	return 0
}

// hostDaemon mounts a blockRoot served by its own process on this host (fusectl mounted, so that
// the connection can be read) and returns its mount point and process.
func hostDaemon(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	testkit.RequireRoot(t, "mounting a FUSE filesystem")
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testkit.Unavailable(t, "this kernel offers no FUSE device: %v", err)
	}
	mountFusectl(t)
	mp := filepath.Join(t.TempDir(), "mnt")
	return mp, startDaemon(t, mp)
}

// startDaemon runs the test binary as the FUSE daemon of mp and waits until it serves.
func startDaemon(t *testing.T, mp string) *exec.Cmd {
	t.Helper()
	require.NoError(t, os.MkdirAll(mp, 0o755))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), daemonEnv+"="+mp)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		// A killed daemon leaves its mount behind (aborted); detach it.
		_ = unix.Unmount(mp, unix.MNT_DETACH)
	})
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- strings.TrimSpace(line) == "ready"
	}()
	select {
	case ok := <-ready:
		require.True(t, ok, "the FUSE daemon did not start")
	case <-time.After(30 * time.Second):
		t.Fatal("the FUSE daemon did not say ready within 30s")
	}
	return cmd
}

// fuseCtlMagic is FUSE_CTL_SUPER_MAGIC, the statfs type of fusectl.
const fuseCtlMagic = 0x65735543

// mountFusectl mounts fusectl at /sys/fs/fuse/connections for the test when it is not mounted there
// (a minimal host or container), as the source needs it to read the waiting requests.
func mountFusectl(t *testing.T) {
	t.Helper()
	dir := "/" + fuseconn.Dir
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	if st.Type == fuseCtlMagic {
		return
	}
	require.NoError(t, unix.Mount("fusectl", dir, "fusectl", 0, ""), "mount fusectl at %s", dir)
	t.Cleanup(func() { assert.NoError(t, unix.Unmount(dir, unix.MNT_DETACH)) })
}

// fuseValues returns the mount's waiting and connected points (-1 when absent) and its state.
func fuseValues(t *testing.T, md pmetric.Metrics, mp string) (waiting, connected int64, state string) {
	t.Helper()
	return point(md, "fuse.connection.waiting", mp, nil), point(md, "fuse.connection.connected", mp, nil), stateOf(t, md, mp)
}

// hostScraper makes a scraper of the host's mount mp alone (stall_after 1s, statfs_timeout 1s) and
// returns a scrape of it and the sink of its events.
func hostScraper(t *testing.T, mp string) (func() (waiting, connected int64, state string), *consumertest.LogsSink) {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.Enabled = true
	cfg.MountPoints.Include = []string{regexp.QuoteMeta(mp)}
	cfg.StallAfter = time.Second
	cfg.StatfsTimeout = time.Second
	logs := new(consumertest.LogsSink)
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, logs, time.Now)
	require.NoError(t, err)
	require.NoError(t, s.Start(t.Context(), nil))
	t.Cleanup(func() { require.NoError(t, s.Shutdown(context.Background())) })
	return func() (int64, int64, string) {
		md, err := s.ScrapeMetrics(t.Context())
		require.NoError(t, err)
		return fuseValues(t, md, mp)
	}, logs
}

// TestFUSEDaemonBlocksAndDies runs a real FUSE daemon on this host whose reads block: the
// connection's waiting count rises, the mount turns unresponsive after stall_after (with an event
// carrying the evidence) and back to ok when the daemon answers; killing the daemon then leaves the
// mount stale with its connection gone.
func TestFUSEDaemonBlocksAndDies(t *testing.T) {
	mp, daemon := hostDaemon(t)

	scrape, logs := hostScraper(t, mp)

	waiting, connected, state := scrape()
	require.Equal(t, []any{int64(0), int64(1), "ok"}, []any{waiting, connected, state})

	read := make(chan error, 1)
	go func() {
		_, err := os.ReadFile(filepath.Join(mp, "block"))
		read <- err
	}()
	var maxWaiting int64
	deadline := time.Now().Add(20 * time.Second)
	for state != "unresponsive" && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		waiting, _, state = scrape()
		maxWaiting = max(maxWaiting, waiting)
	}
	require.Equal(t, "unresponsive", state, "a read blocked in the daemon for 20s")
	assert.GreaterOrEqual(t, maxWaiting, int64(1))
	require.NoError(t, daemon.Process.Signal(syscall.SIGUSR1))
	select {
	case err := <-read:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the blocked read did not return within 10s of the release")
	}
	waiting, connected, state = scrape()
	assert.Equal(t, []any{int64(0), int64(1), "ok"}, []any{waiting, connected, state})

	require.NoError(t, daemon.Process.Kill())
	_ = daemon.Wait()
	waiting, connected, state = scrape()
	assert.Equal(t, []any{int64(0), "stale"}, []any{connected, state}, "waiting %d", waiting)

	// The changes, in order.
	var states, bodies []string
	for _, ev := range (&fixture{logs: logs}).events() {
		st, _ := ev.Attributes().Get("disk_health.client.state")
		states, bodies = append(states, st.Str()), append(bodies, ev.Body().Str())
	}
	t.Logf("most requests waiting: %d; events: %q", maxWaiting, bodies)
	require.Equal(t, []string{"unresponsive", "ok", "stale"}, states, "%q", bodies)
	assert.Regexp(t, `^`+regexp.QuoteMeta(mp)+` \(netfs-test\): unresponsive, was ok: fuse: [1-9]\d* requests waiting, not draining for `, bodies[0])
	assert.Contains(t, bodies[2], ": stale, was ok: statfs: statfs "+mp+": transport endpoint is not connected")
}

// TestStatfsHangIsUnresponsive: a daemon whose statfs stops answering makes the mount unresponsive
// at the scrape that meets the hang, which returns once statfs_timeout has passed; later scrapes do
// not wait on it at all; when the daemon answers, the background re-probe brings the mount back.
func TestStatfsHangIsUnresponsive(t *testing.T) {
	mp, daemon := hostDaemon(t)
	scrape, logs := hostScraper(t, mp)

	_, _, state := scrape()
	require.Equal(t, "ok", state)
	require.NoError(t, daemon.Process.Signal(syscall.SIGUSR2))
	// The signal is handled asynchronously: scrape until the hang is met.
	deadline := time.Now().Add(10 * time.Second)
	for state == "ok" && time.Now().Before(deadline) {
		_, _, state = scrape()
	}
	require.Equal(t, "unresponsive", state)
	// The mount is now stuck: a scrape reports it without calling statfs, so it does not wait. The
	// bound is generous (a busy 2-core machine); a scrape that waited would take the timeout again.
	begin := time.Now()
	_, _, state = scrape()
	assert.Equal(t, "unresponsive", state)
	assert.Less(t, time.Since(begin), 500*time.Millisecond, "a scrape waited on the stuck mount")

	require.NoError(t, daemon.Process.Signal(syscall.SIGUSR1))
	deadline = time.Now().Add(10 * time.Second)
	for state != "ok" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		_, _, state = scrape()
	}
	require.Equal(t, "ok", state, "the re-probe did not bring the mount back within 10s of the answer")

	var bodies []string
	for _, ld := range logs.AllLogs() {
		pdatawalk.ForEachLogRecord(ld, func(_ pcommon.Resource, lr plog.LogRecord) { bodies = append(bodies, lr.Body().Str()) })
	}
	require.Len(t, bodies, 2, "%q", bodies)
	assert.Equal(t, mp+" (netfs-test): unresponsive, was ok: statfs: statfs did not return within the timeout", bodies[0])
	assert.Equal(t, mp+" (netfs-test): ok, was unresponsive: statfs ok", bodies[1])
}

package fsusage

import (
	"context"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fakeFS is a statfs double: per path it can block until released, sleep,
// or fail, and it records calls and how many run at once.
type fakeFS struct {
	mu         sync.Mutex
	gates      map[string]chan struct{}
	delays     map[string]time.Duration
	errs       map[string]error
	readOnly   map[string]bool
	calls      map[string]int
	running    map[string]int
	maxRunning map[string]int
}

func newFakeFS() *fakeFS {
	return &fakeFS{
		gates: map[string]chan struct{}{}, delays: map[string]time.Duration{}, errs: map[string]error{},
		readOnly: map[string]bool{}, calls: map[string]int{}, running: map[string]int{}, maxRunning: map[string]int{},
	}
}

// block makes calls for path wait until the returned func is called.
func (f *fakeFS) block(path string) (release func()) {
	g := make(chan struct{})
	f.mu.Lock()
	f.gates[path] = g
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.gates, path)
			f.mu.Unlock()
			close(g)
		})
	}
}

func (f *fakeFS) set(path string, err error, delay time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[path], f.delays[path] = err, delay
}

func (f *fakeFS) callCount(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[path]
}

func (f *fakeFS) statfs(path string, st *unix.Statfs_t) error {
	f.mu.Lock()
	f.calls[path]++
	f.running[path]++
	f.maxRunning[path] = max(f.maxRunning[path], f.running[path])
	gate, delay, err, ro := f.gates[path], f.delays[path], f.errs[path], f.readOnly[path]
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running[path]--
		f.mu.Unlock()
	}()
	if gate != nil {
		<-gate
	}
	time.Sleep(delay)
	if err != nil {
		return err
	}
	*st = unix.Statfs_t{Frsize: 4096, Bsize: 4096, Blocks: 1000, Bfree: 400, Bavail: 300, Files: 100, Ffree: 90}
	if ro {
		st.Flags = unix.ST_RDONLY
	}
	return nil
}

// assertOneCallAtATime checks the prober never ran two calls for a path.
func (f *fakeFS) assertOneCallAtATime(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for p, n := range f.maxRunning {
		assert.LessOrEqual(t, n, 1, "concurrent statfs calls for %s", p)
	}
}

// changeLog records state changes.
type changeLog struct {
	mu      sync.Mutex
	changes []StateChange
	notify  chan StateChange
}

func newChangeLog() *changeLog { return &changeLog{notify: make(chan StateChange, 100)} }

func (l *changeLog) record(c StateChange) {
	l.mu.Lock()
	l.changes = append(l.changes, c)
	l.mu.Unlock()
	l.notify <- c
}

func (l *changeLog) transitions() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, c := range l.changes {
		out = append(out, c.Mount.MountPoint+": "+c.From.String()+" -> "+c.To.String())
	}
	return out
}

func (l *changeLog) wait(t *testing.T, within time.Duration) StateChange {
	t.Helper()
	select {
	case c := <-l.notify:
		return c
	case <-time.After(within):
		t.Fatalf("no state change within %s", within)
		return StateChange{}
	}
}

func mounts(paths ...string) []Mount {
	ms := make([]Mount, len(paths))
	for i, p := range paths {
		ms[i] = Mount{MountPoint: p, Path: p, FSType: "ext4", Class: ClassLocal, Root: "/"}
	}
	return ms
}

func newTestProber(t *testing.T, cfg ProberConfig, f *fakeFS, log *changeLog) *Prober {
	t.Helper()
	cfg.Statfs = f.statfs
	if log != nil {
		cfg.OnStateChange = log.record
	}
	p, err := NewProber(cfg)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

func statuses(rs []Result) []Status {
	out := make([]Status, len(rs))
	for i, r := range rs {
		out[i] = r.Status
	}
	return out
}

func TestStatusOf(t *testing.T) {
	for err, want := range map[error]Status{
		nil:            StatusOK,
		unix.EACCES:    StatusPermission,
		unix.EPERM:     StatusPermission,
		unix.ENOENT:    StatusNotFound,
		unix.ENOTDIR:   StatusNotFound,
		unix.EIO:       StatusIOError,
		unix.ESTALE:    StatusIOError,
		unix.ENOTCONN:  StatusIOError,
		unix.ETIMEDOUT: StatusIOError,
		unix.EINVAL:    StatusError,
		unix.ELOOP:     StatusError,
		ErrTimeout:     StatusTimeout,
		ErrStuck:       StatusTimeout,
		&fs.PathError{Op: "statfs", Path: "/x", Err: unix.EACCES}: StatusPermission,
	} {
		assert.Equal(t, want, StatusOf(err), "%v", err)
	}
	for s, name := range map[Status]string{
		StatusUnknown: "unknown", StatusOK: "ok", StatusTimeout: "timeout", StatusPermission: "permission",
		StatusNotFound: "not_found", StatusIOError: "io_error", StatusError: "error",
	} {
		assert.Equal(t, name, s.String())
	}
}

func TestProberErrorsArePerMountStatuses(t *testing.T) {
	f := newFakeFS()
	f.set("/denied", unix.EACCES, 0)
	f.set("/gone", unix.ENOENT, 0)
	f.set("/stale", unix.ESTALE, 0)
	f.set("/odd", unix.EINVAL, 0)
	p := newTestProber(t, ProberConfig{}, f, nil)
	rs := p.Probe(context.Background(), mounts("/", "/denied", "/gone", "/stale", "/odd"))
	assert.Equal(t, []Status{StatusOK, StatusPermission, StatusNotFound, StatusIOError, StatusError}, statuses(rs))
	assert.Equal(t, uint64(1000*4096), rs[0].Usage.Limit)
	var perr *fs.PathError
	require.ErrorAs(t, rs[1].Err, &perr)
	assert.Equal(t, "/denied", perr.Path)
	assert.Equal(t, "statfs /denied: permission denied", rs[1].Err.Error())
	assert.Zero(t, rs[1].Usage)
}

func TestProberHungMount(t *testing.T) {
	const timeout = 200 * time.Millisecond
	f := newFakeFS()
	log := newChangeLog()
	p := newTestProber(t, ProberConfig{Timeout: timeout, Concurrency: 2, ReprobeInterval: 50 * time.Millisecond}, f, log)
	release := f.block("/hung")
	defer release()
	ms := mounts("/a", "/hung", "/b", "/c", "/d")

	start := time.Now()
	rs := p.Probe(context.Background(), ms)
	elapsed := time.Since(start)
	// Typically timeout + one watchdog tick (5 %); the margin allows for a
	// loaded test machine.
	assert.Less(t, elapsed, timeout+250*time.Millisecond, "the scrape does not wait for the hung call")
	assert.GreaterOrEqual(t, elapsed, timeout)
	assert.Equal(t, []Status{StatusOK, StatusTimeout, StatusOK, StatusOK, StatusOK}, statuses(rs))
	require.ErrorIs(t, rs[1].Err, ErrTimeout)
	assert.Same(t, &ms[1], rs[1].Mount)
	assert.Equal(t, []string{"/hung: unknown -> timeout"}, log.transitions())
	assert.Equal(t, StatusTimeout, log.wait(t, time.Second).To)

	// While stuck: no call, no wait, no new log line.
	for range 3 {
		start = time.Now()
		rs = p.Probe(context.Background(), ms)
		assert.Less(t, time.Since(start), timeout, "no waiting for a stuck mount")
		assert.Equal(t, StatusTimeout, rs[1].Status)
		require.ErrorIs(t, rs[1].Err, ErrStuck)
		assert.Equal(t, StatusOK, rs[0].Status)
	}
	assert.Equal(t, 1, f.callCount("/hung"))
	assert.Len(t, log.transitions(), 1)

	// The hung call returns: a background re-probe, which succeeds in
	// time, brings the mount back between scrapes.
	release()
	c := log.wait(t, 2*time.Second)
	assert.Equal(t, "/hung", c.Mount.MountPoint)
	assert.Equal(t, StatusTimeout, c.From)
	assert.Equal(t, StatusOK, c.To)
	assert.Equal(t, 2, f.callCount("/hung"), "the late return alone is not enough: one re-probe")

	rs = p.Probe(context.Background(), ms)
	assert.Equal(t, StatusOK, rs[1].Status)
	assert.Equal(t, 3, f.callCount("/hung"))
	assert.Equal(t, []string{"/hung: unknown -> timeout", "/hung: timeout -> ok"}, log.transitions())
	f.assertOneCallAtATime(t)
}

// TestProberRecoversWhenTheHungCallReturns: the server answering again ends the hung call, and the
// re-probe that follows at once brings the mount back without waiting a whole re-probe interval.
func TestProberRecoversWhenTheHungCallReturns(t *testing.T) {
	const timeout = 100 * time.Millisecond
	f := newFakeFS()
	log := newChangeLog()
	p := newTestProber(t, ProberConfig{Timeout: timeout, ReprobeInterval: time.Hour}, f, log)
	release := f.block("/fuse")
	ms := mounts("/fuse")
	assert.Equal(t, StatusTimeout, p.Probe(context.Background(), ms)[0].Status)
	assert.Equal(t, StatusTimeout, log.wait(t, time.Second).To)
	release()
	c := log.wait(t, 2*time.Second)
	assert.Equal(t, StatusOK, c.To)
	assert.Equal(t, 2, f.callCount("/fuse"), "the late return alone is not enough: one prompt re-probe")
	assert.Equal(t, StatusOK, p.Probe(context.Background(), ms)[0].Status)
}

func TestProberStuckMountNeedsSuccess(t *testing.T) {
	const timeout = 100 * time.Millisecond
	const every = 30 * time.Millisecond
	f := newFakeFS()
	log := newChangeLog()
	p := newTestProber(t, ProberConfig{Timeout: timeout, ReprobeInterval: every}, f, log)
	release := f.block("/nfs")
	ms := mounts("/nfs")
	assert.Equal(t, StatusTimeout, p.Probe(context.Background(), ms)[0].Status)
	log.wait(t, time.Second)

	// The server answers errors now (EIO after a soft timeout): the mount
	// stays stuck, so scrapes do not call it and do not hang again.
	f.set("/nfs", unix.EIO, 0)
	release()
	require.Eventually(t, func() bool { return f.callCount("/nfs") >= 4 }, 2*time.Second, 5*time.Millisecond)
	rs := p.Probe(context.Background(), ms)
	assert.Equal(t, StatusTimeout, rs[0].Status)
	require.ErrorIs(t, rs[0].Err, ErrStuck)

	// Answers that come, but too slowly, do not count either.
	f.set("/nfs", nil, 2*timeout)
	n := f.callCount("/nfs")
	require.Eventually(t, func() bool { return f.callCount("/nfs") >= n+2 }, 3*time.Second, 5*time.Millisecond)
	assert.Equal(t, StatusTimeout, p.Probe(context.Background(), ms)[0].Status)

	// Only a prompt success un-sticks it.
	f.set("/nfs", nil, 0)
	c := log.wait(t, 3*time.Second)
	assert.Equal(t, StatusOK, c.To)
	assert.Equal(t, StatusOK, p.Probe(context.Background(), ms)[0].Status)
	assert.Equal(t, []string{"/nfs: unknown -> timeout", "/nfs: timeout -> ok"}, log.transitions())
	f.assertOneCallAtATime(t)
}

func TestProberHungMountsDoNotStarveOthers(t *testing.T) {
	const timeout = 150 * time.Millisecond
	f := newFakeFS()
	p := newTestProber(t, ProberConfig{Timeout: timeout, Concurrency: 2}, f, nil)
	var paths []string
	for i := range 40 {
		paths = append(paths, "/m"+string(rune('A'+i)))
	}
	// Three hung mounts, more than the two slots, listed first.
	for _, h := range paths[:3] {
		defer f.block(h)()
	}
	start := time.Now()
	rs := p.Probe(context.Background(), mounts(paths...))
	elapsed := time.Since(start)
	// Two rounds of timeouts at most (ceil(3/2)), never a stall.
	assert.Less(t, elapsed, 2*timeout+250*time.Millisecond)
	for i, r := range rs {
		if i < 3 {
			assert.Equal(t, StatusTimeout, r.Status, r.Mount.Path)
		} else {
			assert.Equal(t, StatusOK, r.Status, r.Mount.Path)
		}
	}
	// The next scrape skips them all at once.
	start = time.Now()
	rs = p.Probe(context.Background(), mounts(paths...))
	assert.Less(t, time.Since(start), timeout)
	assert.Equal(t, StatusOK, rs[39].Status)
}

func TestProberRemoteTimeout(t *testing.T) {
	f := newFakeFS()
	p := newTestProber(t, ProberConfig{Timeout: 50 * time.Millisecond, RemoteTimeout: time.Second}, f, nil)
	ms := mounts("/local", "/nas")
	ms[1].FSType, ms[1].Class = "nfs4", ClassRemote
	f.set("/local", nil, 200*time.Millisecond)
	f.set("/nas", nil, 200*time.Millisecond)
	rs := p.Probe(context.Background(), ms)
	assert.Equal(t, []Status{StatusTimeout, StatusOK}, statuses(rs))
}

func TestProberContextEndsScrape(t *testing.T) {
	f := newFakeFS()
	log := newChangeLog()
	p := newTestProber(t, ProberConfig{Timeout: 5 * time.Second, Concurrency: 1}, f, log)
	release := f.block("/slow")
	defer release()
	ms := mounts("/slow", "/never-started")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	rs := p.Probe(ctx, ms)
	assert.Less(t, time.Since(start), time.Second)
	for _, r := range rs {
		assert.Equal(t, StatusTimeout, r.Status)
		require.ErrorIs(t, r.Err, context.DeadlineExceeded)
	}
	assert.Zero(t, f.callCount("/never-started"))

	// The mount is not stuck, but its call is still out: no second one.
	rs = p.Probe(context.Background(), ms)
	require.ErrorIs(t, rs[0].Err, ErrStuck)
	assert.Equal(t, StatusOK, rs[1].Status)
	assert.Equal(t, 1, f.callCount("/slow"))

	release()
	require.Eventually(t, func() bool {
		return p.Probe(context.Background(), ms)[0].Status == StatusOK
	}, 2*time.Second, 10*time.Millisecond)
	assert.Empty(t, log.transitions(), "a cancelled scrape changes no state")
	f.assertOneCallAtATime(t)
}

func TestProberLogsOnlyChanges(t *testing.T) {
	f := newFakeFS()
	log := newChangeLog()
	p := newTestProber(t, ProberConfig{}, f, log)
	ms := mounts("/x", "/y")
	f.set("/y", unix.ENOENT, 0)
	for _, step := range []error{nil, nil, unix.EACCES, unix.EPERM, unix.EACCES, nil, nil} {
		f.set("/x", step, 0)
		p.Probe(context.Background(), ms)
	}
	assert.Equal(t, []string{
		"/y: unknown -> not_found",
		"/x: ok -> permission",
		"/x: permission -> ok",
	}, log.transitions())
	require.Len(t, log.changes, 3)
	require.ErrorIs(t, log.changes[1].Err, unix.EACCES)
	assert.NoError(t, log.changes[2].Err)
}

func TestProberForgetsVanishedMounts(t *testing.T) {
	const timeout = 50 * time.Millisecond
	f := newFakeFS()
	p := newTestProber(t, ProberConfig{Timeout: timeout, ReprobeInterval: 10 * time.Millisecond}, f, nil)
	release := f.block("/hung")
	p.Probe(context.Background(), mounts("/a", "/hung", "/b"))

	// /b and /hung are unmounted. /hung's call is still out, so its state
	// stays until the call returns: relisting it must not start another.
	p.Probe(context.Background(), mounts("/a"))
	p.mu.Lock()
	assert.Len(t, p.states, 2)
	p.mu.Unlock()
	rs := p.Probe(context.Background(), mounts("/a", "/hung"))
	require.ErrorIs(t, rs[1].Err, ErrStuck)
	p.Probe(context.Background(), mounts("/a"))

	release()
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.states) == 1
	}, time.Second, 5*time.Millisecond)
	assert.Equal(t, 1, f.callCount("/hung"), "no re-probe for a mount that is gone")
	f.assertOneCallAtATime(t)
}

func TestProberCloseStopsReprobes(t *testing.T) {
	f := newFakeFS()
	p := newTestProber(t, ProberConfig{Timeout: 30 * time.Millisecond, ReprobeInterval: 5 * time.Millisecond}, f, nil)
	f.set("/bad", unix.EIO, 0)
	release := f.block("/bad")
	p.Probe(context.Background(), mounts("/bad"))
	release()
	require.Eventually(t, func() bool { return f.callCount("/bad") >= 3 }, time.Second, 5*time.Millisecond)
	p.Close()
	p.Close() // idempotent
	// goleak in TestMain checks the re-probe goroutine is gone; here,
	// that the calls stop.
	time.Sleep(20 * time.Millisecond)
	n := f.callCount("/bad")
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, n, f.callCount("/bad"))
}

func TestProberDuplicatePaths(t *testing.T) {
	f := newFakeFS()
	p := newTestProber(t, ProberConfig{}, f, nil)
	ms := mounts("/x", "/x")
	ms[1].MountPoint = "/x-again"
	rs := p.Probe(context.Background(), ms)
	assert.Equal(t, []Status{StatusOK, StatusOK}, statuses(rs))
	assert.Equal(t, rs[0].Usage, rs[1].Usage)
	assert.Same(t, &ms[1], rs[1].Mount)
	assert.Equal(t, 1, f.callCount("/x"))
}

func TestProberReadOnly(t *testing.T) {
	f := newFakeFS()
	f.readOnly["/direct"] = true
	f.readOnly["/hostfs/bound"] = true
	p := newTestProber(t, ProberConfig{}, f, nil)
	ms := mounts("/direct", "/plain")
	ms = append(ms, Mount{MountPoint: "/bound", Path: "/hostfs/bound", Root: "/"}, Mount{MountPoint: "/ro", Path: "/hostfs/ro", ReadOnly: true})
	rs := p.Probe(context.Background(), ms)
	assert.True(t, rs[0].ReadOnly, "live flag of a mount seen directly")
	assert.False(t, rs[1].ReadOnly)
	assert.False(t, rs[2].ReadOnly, "the container's read-only bind says nothing of the host")
	assert.True(t, rs[3].ReadOnly, "the mount table's state")
}

func TestProberEmptyAndConfig(t *testing.T) {
	f := newFakeFS()
	p := newTestProber(t, ProberConfig{}, f, nil)
	assert.Empty(t, p.Probe(context.Background(), nil))
	assert.Equal(t, DefaultTimeout, p.cfg.Timeout)
	assert.Equal(t, DefaultRemoteTimeout, p.cfg.RemoteTimeout)
	assert.Equal(t, DefaultConcurrency, p.cfg.Concurrency)
	assert.Equal(t, DefaultReprobeInterval, p.cfg.ReprobeInterval)
	_, err := NewProber(ProberConfig{Timeout: -1})
	assert.Error(t, err)
}

func TestProberRealStatfs(t *testing.T) {
	p, err := NewProber(ProberConfig{})
	require.NoError(t, err)
	defer p.Close()
	dir := t.TempDir()
	ms := mounts(dir, dir+"/vanished")
	rs := p.Probe(context.Background(), ms)
	require.Equal(t, StatusOK, rs[0].Status, "%v", rs[0].Err)
	assert.Positive(t, rs[0].Usage.Limit)
	assert.Equal(t, rs[0].Usage.Limit, rs[0].Usage.Used+rs[0].Usage.Free+rs[0].Usage.Reserved)
	assert.Equal(t, StatusNotFound, rs[1].Status)
	assert.ErrorIs(t, rs[1].Err, unix.ENOENT)
}

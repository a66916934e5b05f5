package statelockconverter

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"
)

// holdEnv makes the test binary a lock holder: STATELOCK_HOLD=<ex|sh>:<path> opens path, takes that
// flock, prints "held" and keeps it until its stdin closes.
const holdEnv = "STATELOCK_HOLD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(holdEnv); spec != "" {
		how, path, _ := strings.Cut(spec, ":")
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		op := unix.LOCK_EX
		if how == "sh" {
			op = unix.LOCK_SH
		}
		if err := unix.Flock(int(f.Fd()), op); err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		fmt.Println("held")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holdInChild has another process take a flock (how: "ex" as file_storage, "sh" as a bbolt opened
// read-only) on path; release ends that process. It returns the holder's PID.
func holdInChild(t *testing.T, path, how string) (pid int, release func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+how+":"+path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line)
	release = sync.OnceFunc(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	t.Cleanup(release)
	return cmd.Process.Pid, release
}

// holdHere takes an exclusive flock on path through a descriptor of this process: flock belongs to
// the open file, so the converter's own open of the same file conflicts with it.
func holdHere(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX))
	t.Cleanup(func() { _ = f.Close() })
}

// stateDir makes a directory holding the named empty files.
func stateDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.Mkdir(dir, 0o750))
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o600))
	}
	return dir
}

// storageConfig is the shipped configs' file_storage part for dir.
func storageConfig(dir, timeout string) string {
	return fmt.Sprintf(`
extensions:
  file_storage:
    directory: %s
    timeout: %s
service:
  extensions: [file_storage]
`, dir, timeout)
}

// newConverter is the factory's converter, as the collector (no subcommand) runs it.
func newConverter(self int) *converter {
	return &converter{logger: zap.NewNop(), args: []string{"otelcol-diskhealth", "--config=c.yaml"}, self: self, maxEntries: maxEntries}
}

const queueDB = "exporter_otlp_http__metrics"

// TestLockedByAnotherCollector: the error says "locked", names the directory, the file, the holder's
// PID and command, and what to do; it comes after the extension's timeout, as file_storage's would.
func TestLockedByAnotherCollector(t *testing.T) {
	dir := stateDir(t, queueDB, "exporter_otlp_http__logs")
	pid, _ := holdInChild(t, filepath.Join(dir, queueDB), "ex")
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	require.NoError(t, err)

	start := time.Now()
	err = newConverter(os.Getpid()).Convert(context.Background(), conf(t, storageConfig(dir, "300ms")))
	took := time.Since(start)
	require.Error(t, err)
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{
		"locked", strconv.Quote(dir), strconv.Quote(queueDB), fmt.Sprintf("PID %d (%q)", pid, strings.TrimSpace(string(comm))),
		"DISKHEALTH_STATE_DIR", "file_storage",
	} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, "more of its queue databases", "the other database is free")
	assert.GreaterOrEqual(t, took, 300*time.Millisecond, "file_storage would have waited its timeout")
	assert.Less(t, took, 3*time.Second)
}

// TestReaderCountsToo: bbolt opened read-only holds LOCK_SH, which stops file_storage's LOCK_EX as
// surely as a writer's.
func TestReaderCountsToo(t *testing.T) {
	dir := stateDir(t, queueDB)
	pid, _ := holdInChild(t, filepath.Join(dir, queueDB), "sh")
	err := newConverter(os.Getpid()).Convert(context.Background(), conf(t, storageConfig(dir, "100ms")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("PID %d ", pid))
}

// TestReleasedWhileWaiting: a collector that is still stopping lets go within the timeout; file_storage
// would then have its lock, so nothing is refused.
func TestReleasedWhileWaiting(t *testing.T) {
	dir := stateDir(t, queueDB)
	_, release := holdInChild(t, filepath.Join(dir, queueDB), "ex")
	time.AfterFunc(200*time.Millisecond, release)
	start := time.Now()
	require.NoError(t, newConverter(os.Getpid()).Convert(context.Background(), conf(t, storageConfig(dir, "5s"))))
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	assert.Less(t, time.Since(start), 4*time.Second)
}

// TestOwnLocks: a second descriptor of this process conflicts like another process does; when the
// holder is the converter's own process (the collector resolving its configuration again while its
// file_storage runs), it is not in the way and nothing waits.
func TestOwnLocks(t *testing.T) {
	dir := stateDir(t)
	holdHere(t, filepath.Join(dir, queueDB))
	cfg := conf(t, storageConfig(dir, "200ms"))

	err := newConverter(-1).Convert(context.Background(), cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("PID %d ", os.Getpid()))

	start := time.Now()
	require.NoError(t, newConverter(os.Getpid()).Convert(context.Background(), cfg))
	assert.Less(t, time.Since(start), 150*time.Millisecond, "its own lock is not waited for")
}

// TestLeftToFileStorage: timeout 0 (wait as long as it takes), a subcommand, a directory that does not
// exist or is a FIFO: no check, nothing created, nothing blocks.
func TestLeftToFileStorage(t *testing.T) {
	dir := stateDir(t)
	holdHere(t, filepath.Join(dir, queueDB))
	c := newConverter(-1)
	require.NoError(t, c.Convert(context.Background(), conf(t, storageConfig(dir, "0s"))))

	c.args = []string{"otelcol-diskhealth", "validate", "--config=c.yaml"}
	require.NoError(t, c.Convert(context.Background(), conf(t, storageConfig(dir, "100ms"))))

	missing := filepath.Join(t.TempDir(), "none")
	require.NoError(t, newConverter(-1).Convert(context.Background(), conf(t, storageConfig(missing, "100ms"))))
	assert.NoDirExists(t, missing)

	// Not a directory, even one whose open would block: file_storage says what is wrong with it.
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	require.NoError(t, newConverter(-1).Convert(context.Background(), conf(t, storageConfig(fifo, "100ms"))))
}

// TestOnlyDatabasesInsideTheDirectory: locked files that are not a component's database (compaction's
// temporary file, anything else), a symbolic link out of the directory to a locked database, a FIFO and
// a directory under database names are not the converter's business; nothing is changed.
func TestOnlyDatabasesInsideTheDirectory(t *testing.T) {
	dir := stateDir(t)
	outside := stateDir(t)
	for _, p := range []string{filepath.Join(dir, "tempdb123456"), filepath.Join(dir, "notes"), filepath.Join(outside, queueDB)} {
		holdHere(t, p)
	}
	require.NoError(t, os.Symlink(filepath.Join(outside, queueDB), filepath.Join(dir, queueDB)))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "exporter_fifo"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "exporter_dir"), 0o700))
	before := snapshot(t, dir)

	require.NoError(t, newConverter(-1).Convert(context.Background(), conf(t, storageConfig(dir, "100ms"))))
	assert.Equal(t, before, snapshot(t, dir))

	// A hashed database name (a component name too long for the file system) is a database.
	hashed := strings.Repeat("0123456789abcdef", 4)
	holdHere(t, filepath.Join(dir, hashed))
	err := newConverter(-1).Convert(context.Background(), conf(t, storageConfig(dir, "100ms")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), hashed)
}

// snapshot is what a change to dir's entries would show: names, types, sizes, modes, mtimes, ctimes.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, p := range []string{dir, filepath.Join(dir, "*")} {
		matches, err := filepath.Glob(p)
		require.NoError(t, err)
		for _, m := range matches {
			var st unix.Stat_t
			require.NoError(t, unix.Lstat(m, &st))
			out = append(out, fmt.Sprintf("%s %o %d %v %v", m, st.Mode, st.Size, st.Mtim, st.Ctim))
		}
	}
	return out
}

// TestManyFiles: a directory of 10 000 queue databases is checked in well under a second (a few
// syscalls each), and the one locked among them is found.
func TestManyFiles(t *testing.T) {
	dir := stateDir(t)
	for i := range 10_000 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("exporter_otlp_%d_", i)), nil, 0o600))
	}
	cfg := conf(t, storageConfig(dir, "100ms"))
	start := time.Now()
	require.NoError(t, newConverter(-1).Convert(context.Background(), cfg))
	took := time.Since(start)
	t.Logf("10 000 files checked in %v", took)
	assert.Less(t, took, time.Second)

	holdHere(t, filepath.Join(dir, "exporter_otlp_5000_"))
	err := newConverter(-1).Convert(context.Background(), cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"exporter_otlp_5000_"`)
}

// TestEntryBound: past maxEntries the converter stops reading and says so.
func TestEntryBound(t *testing.T) {
	dir := stateDir(t)
	for i := range 50 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("exporter_x_%d", i)), nil, 0o600))
	}
	core, logs := observer.New(zapcore.WarnLevel)
	c := newConverter(-1)
	c.logger, c.maxEntries = zap.New(core), 10
	require.NoError(t, c.Convert(context.Background(), conf(t, storageConfig(dir, "100ms"))))
	require.Equal(t, 1, logs.Len())
	assert.Equal(t, int64(10), logs.All()[0].ContextMap()["checked"])

	// Within the bound, to the last entry, nothing is said.
	c.maxEntries = 50
	require.NoError(t, c.Convert(context.Background(), conf(t, storageConfig(dir, "100ms"))))
	assert.Equal(t, 1, logs.Len())
}

// TestCancelledWhileWaiting: a collector told to stop while the converter waits does not wait on.
func TestCancelledWhileWaiting(t *testing.T) {
	dir := stateDir(t)
	holdHere(t, filepath.Join(dir, queueDB))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	err := newConverter(-1).Convert(ctx, conf(t, storageConfig(dir, "10s")))
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 2*time.Second)
}

const procLocks = `1: FLOCK  ADVISORY  WRITE 4242 fd:01:1317092 0 EOF
1: -> FLOCK  ADVISORY  WRITE 999 fd:01:1317092 0 EOF
2: POSIX  ADVISORY  WRITE 567 00:1a:12 0 EOF
3: OFDLCK ADVISORY  READ  -1 00:06:9469 0 EOF
4: FLOCK  ADVISORY  READ  77 103:105:55 0 EOF
5: LEASE  ACTIVE    READ  88 08:02:4 0 EOF
garbage
6: FLOCK  ADVISORY  WRITE x fd:01:1 0 EOF
7: FLOCK  ADVISORY  WRITE 5 fd:01 0 EOF
8: FLOCK  ADVISORY  WRITE 5 zz:01:1 0 EOF
`

func TestParseLocks(t *testing.T) {
	assert.Equal(t, []lock{
		{class: "FLOCK", pid: 4242, major: 0xfd, minor: 1, ino: 1317092},
		{class: "POSIX", pid: 567, major: 0, minor: 0x1a, ino: 12},
		{class: "OFDLCK", pid: -1, major: 0, minor: 6, ino: 9469},
		{class: "FLOCK", pid: 77, major: 0x103, minor: 0x105, ino: 55},
		{class: "LEASE", pid: 88, major: 8, minor: 2, ino: 4},
	}, parseLocks([]byte(procLocks)))
	assert.Empty(t, parseLocks(nil))
}

func TestLockOwners(t *testing.T) {
	owners := lockOwners([]byte(procLocks+"9: FLOCK  ADVISORY  READ  78 103:105:55 0 EOF\n10: FLOCK  ADVISORY  WRITE 13 00:2a:55 0 EOF\n"), []dbFile{
		{name: "by device and inode", dev: unix.Mkdev(0xfd, 1), ino: 1317092},
		{name: "readers; a flock of another device on the same inode is not theirs", dev: unix.Mkdev(0x103, 0x105), ino: 55},
		{name: "another device (btrfs subvolume): the one flock on the inode", dev: unix.Mkdev(0, 0x30), ino: 1317092},
		{name: "another device, two flocks on the inode: neither", dev: unix.Mkdev(0, 0x30), ino: 55},
		{name: "only POSIX and OFD locks, which bbolt does not take", dev: unix.Mkdev(0, 0x1a), ino: 12},
	})
	assert.Equal(t, [][]int{{4242}, {77, 78}, {4242}, nil, nil}, owners)
}

// TestLockOwnersFromTheKernel: /proc/locks names this process for a flock it holds on a file.
func TestLockOwnersFromTheKernel(t *testing.T) {
	path := filepath.Join(stateDir(t), queueDB)
	holdHere(t, path)
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	assert.Equal(t, [][]int{{os.Getpid()}}, lockOwners(readProcLocks(), []dbFile{{name: queueDB, dev: st.Dev, ino: st.Ino}}))
}

func TestDBName(t *testing.T) {
	for _, n := range []string{"exporter_otlp_http__metrics", "receiver_filelog_", "extension_x_y", "processor_a_", "connector_b_", "other_c_",
		strings.Repeat("ab", 32)} {
		assert.True(t, dbName(n), n)
	}
	for _, n := range []string{"tempdb12345", "exporter", "notes", strings.Repeat("AB", 32), strings.Repeat("ab", 31), ""} {
		assert.False(t, dbName(n), n)
	}
}

// FuzzParseLocks: each line is read alone, and every lock read is one of the lines.
func FuzzParseLocks(f *testing.F) {
	f.Add([]byte(procLocks))
	f.Add([]byte("1: FLOCK ADVISORY WRITE 1 0:0:0 0 EOF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		all := parseLocks(data)
		var each []lock
		lines := 0
		for line := range strings.Lines(string(data)) {
			lines++
			each = append(each, parseLocks([]byte(line))...)
		}
		assert.Equal(t, each, all)
		assert.LessOrEqual(t, len(all), lines)
	})
}

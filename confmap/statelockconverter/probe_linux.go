package statelockconverter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// retryInterval is bbolt's own (flockRetryTimeout): how often it tries the lock again while it waits.
const retryInterval = 50 * time.Millisecond

// dbFile is a queue database whose lock another open file has.
type dbFile struct {
	name     string
	dev, ino uint64
}

// check fails when a queue database in t's directory is still locked by another process after the
// extension's timeout, as file_storage would (it waits as long, then says "timeout"). A directory or
// file that cannot be opened is left to file_storage, which creates it or says why it cannot.
func (c *converter) check(ctx context.Context, t target) error {
	// O_DIRECTORY: a FIFO configured as the directory fails here instead of blocking the start.
	dfd, err := unix.Open(t.directory, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	dir := os.NewFile(uintptr(dfd), t.directory)
	defer func() { _ = dir.Close() }() // read-only: a failed close loses nothing
	deadline := time.Now().Add(t.timeout)
	locked := c.scan(dir)
	if len(locked) == 0 {
		return nil
	}
	// The collector's own file_storage holds its databases when it resolves the configuration again
	// while running: those are not in the way.
	owners := lockOwners(readProcLocks(), locked)
	for i := len(locked) - 1; i >= 0; i-- {
		if len(owners[i]) > 0 && !slices.ContainsFunc(owners[i], func(pid int) bool { return pid != c.self }) {
			locked = slices.Delete(locked, i, i+1)
		}
	}
	fd := int(dir.Fd())
	for len(locked) > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryInterval):
		}
		locked = slices.DeleteFunc(locked, func(f dbFile) bool {
			_, held := probe(fd, f.name)
			return !held
		})
	}
	if len(locked) == 0 {
		return nil
	}
	return lockedError(t, locked, lockOwners(readProcLocks(), locked))
}

// scan probes the queue databases in dir and returns those another open file has locked. It reads at
// most c.maxEntries entries and says so when it stops early.
func (c *converter) scan(dir *os.File) []dbFile {
	fd := int(dir.Fd())
	var locked []dbFile
	for seen := 0; seen < c.maxEntries; {
		entries, err := dir.ReadDir(min(1024, c.maxEntries-seen))
		for _, e := range entries {
			// Symbolic links, FIFOs, directories: file_storage's databases are regular files it made.
			if !e.Type().IsRegular() || !dbName(e.Name()) {
				continue
			}
			if f, held := probe(fd, e.Name()); held {
				locked = append(locked, f)
			}
		}
		seen += len(entries)
		if err != nil {
			return locked
		}
	}
	if more, _ := dir.ReadDir(1); len(more) == 0 {
		return locked
	}
	c.logger.Warn("the state directory holds more entries than are checked for locks; the rest is left to file_storage",
		zap.String("directory", dir.Name()), zap.Int("checked", c.maxEntries))
	return locked
}

// probe opens name in the directory dirfd read-only, without following a symbolic link and without
// blocking (a FIFO put there after the listing), and asks for the lock file_storage will ask for:
// bbolt locks a read-write database LOCK_EX, so a reader's LOCK_SH (a bbolt opened read-only) is in
// its way as much as a writer's. The lock, if granted, goes with the descriptor, closed before probe
// returns, so this process's own file_storage finds it free. Any failure but EWOULDBLOCK is not a lock
// and is left to file_storage.
func probe(dirfd int, name string) (dbFile, bool) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return dbFile{}, false
	}
	defer func() { _ = unix.Close(fd) }() // releases the lock if it was granted; read-only, so nothing to lose
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return dbFile{}, false
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		return dbFile{}, false
	}
	return dbFile{name: name, dev: st.Dev, ino: st.Ino}, true
}

// dbName: the names file_storage gives a component's database, <kind>_<type>_<name>[_<name>] with the
// kind one of its kindString values, or that name's SHA-256 in hex when it is too long for the file
// system (contrib's extension.go, GetClient). Compaction's temporary files (tempdb…) are not among
// them: each has a name of its own, so they never stand in another collector's way.
func dbName(name string) bool {
	for _, kind := range []string{"receiver_", "processor_", "exporter_", "extension_", "connector_", "other_"} {
		if strings.HasPrefix(name, kind) {
			return true
		}
	}
	if len(name) != 64 {
		return false
	}
	for _, r := range name {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// maxProcLocks bounds the read of /proc/locks: about 150 000 locks, far more than a host holds.
const maxProcLocks = 8 << 20

// readProcLocks returns /proc/locks, or nothing when it cannot be read (the PID then goes unnamed).
func readProcLocks() []byte {
	f, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }() // read-only: a failed close loses nothing
	data, _ := io.ReadAll(io.LimitReader(f, maxProcLocks))
	return data
}

// lockOwners returns, for each file, the PIDs /proc/locks names as holding a flock on it.
func lockOwners(procLocks []byte, files []dbFile) [][]int {
	locks := parseLocks(procLocks)
	out := make([][]int, len(files))
	for i, f := range files {
		var byInode []int
		for _, l := range locks {
			if l.class != "FLOCK" || l.ino != f.ino || l.pid <= 0 {
				continue
			}
			if l.major == unix.Major(f.dev) && l.minor == unix.Minor(f.dev) {
				out[i] = append(out[i], l.pid)
			}
			byInode = append(byInode, l.pid)
		}
		// /proc/locks names the superblock's device; stat on btrfs subvolumes and overlayfs reports
		// another one. One flock on the inode number is then taken as the file's.
		if len(out[i]) == 0 && len(byInode) == 1 {
			out[i] = byInode
		}
	}
	return out
}

// lock is one granted lock of /proc/locks.
type lock struct {
	class        string // FLOCK, POSIX, OFDLCK, LEASE, DELEG
	pid          int
	major, minor uint32
	ino          uint64
}

// parseLocks reads /proc/locks, whose lines are
//
//	1: FLOCK  ADVISORY  WRITE 1234 fd:01:1317092 0 EOF
//	1: -> FLOCK  ADVISORY  WRITE 999 fd:01:1317092 0 EOF
//
// (fs/locks.c, lock_get_status: major and minor in hex, the inode in decimal; "->" marks a process
// waiting for the lock, not holding it). A line of another shape is skipped.
func parseLocks(data []byte) []lock {
	var out []lock
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasSuffix(f[0], ":") || f[1] == "->" {
			continue
		}
		pid, err := strconv.Atoi(f[4])
		if err != nil {
			continue
		}
		devIno := strings.Split(f[5], ":")
		if len(devIno) != 3 {
			continue
		}
		major, err1 := strconv.ParseUint(devIno[0], 16, 32)
		minor, err2 := strconv.ParseUint(devIno[1], 16, 32)
		ino, err3 := strconv.ParseUint(devIno[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, lock{class: f[1], pid: pid, major: uint32(major), minor: uint32(minor), ino: ino})
	}
	return out
}

// lockedError says which directory is locked, by which file and process, and what to do.
func lockedError(t target, locked []dbFile, owners [][]int) error {
	who := "another process (/proc/locks does not name it here: it may run in another PID namespace, such as another container)"
	if pids := owners[0]; len(pids) > 0 {
		var names []string
		for _, pid := range pids[:min(len(pids), 4)] {
			names = append(names, fmt.Sprintf("PID %d%s", pid, command(pid)))
		}
		who = strings.Join(names, ", ")
	}
	more := ""
	if len(locked) > 1 {
		more = fmt.Sprintf(" (and %d more of its queue databases)", len(locked)-1)
	}
	return fmt.Errorf("state directory %q is locked: %q there is held by %s%s, still after %s (extension %s's timeout); "+
		"only one collector can use a state directory: stop the other one, or give each collector its own "+
		"DISKHEALTH_STATE_DIR (extensions::%s::directory)", t.directory, locked[0].name, who, more, t.timeout, t.id, t.id)
}

// command is ` ("name")` from /proc/<pid>/comm, or nothing if it cannot be read.
func command(pid int) string {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }() // read-only: a failed close loses nothing
	// The kernel keeps 15 bytes of it (TASK_COMM_LEN).
	b, _ := io.ReadAll(io.LimitReader(f, 64))
	name := strings.TrimSpace(string(b))
	if name == "" {
		return ""
	}
	return " (" + strconv.Quote(name) + ")"
}

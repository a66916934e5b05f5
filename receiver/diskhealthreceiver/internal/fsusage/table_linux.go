package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// TableConfig configures a MountTable.
type TableConfig struct {
	// RootPath is the host's root as mounted in the collector's container
	// ("" or "/" outside a container).
	RootPath string
	// Filter selects mounts; nil uses DefaultFilterConfig.
	Filter *Filter
	Dedupe DedupeMode
	// RereadEvery forces a read every N calls even with no change
	// signalled: a safety net against a missed event, and the only way to
	// see superblock state that changes without a mount event, such as
	// ext4 going read-only after errors (errors=remount-ro, emergency_ro).
	// Without root_path the statfs ST_RDONLY flag shows that at once;
	// under root_path only this re-read does. 0 means DefaultRereadEvery,
	// a negative value never forces a read.
	RereadEvery int
	// OnReload is called after each parse of a changed file, with the
	// line errors if any, so they are logged once per change rather than
	// once per scrape.
	OnReload func(TableReload)
}

// MountTable keeps the selected mounts of <root_path>/proc/1/mountinfo
// (falling back to <root_path>/proc/self/mountinfo) and re-reads the file
// only when the kernel signals a change. The file stays open: the kernel
// marks an open mountinfo with POLLPRI|POLLERR when the namespace's mount
// tree changes after the open or after the last poll that reported a
// change (proc_pid_mounts(5); fs/proc_namespace.c mounts_poll), so a
// zero-timeout poll per scrape costs one system call. A re-read whose
// bytes equal the previous read is not parsed again.
//
// The descriptor is a raw one, not an *os.File: os.Open would register
// this pollable file with the Go runtime's epoll, and every readiness
// check there consumes the change event before our poll can see it.
//
// A MountTable is not safe for concurrent use.
type MountTable struct {
	cfg        TableConfig
	candidates []tableFile
	every      int

	fd    int // -1 when closed
	file  tableFile
	buf   []byte // last read
	spare []byte // the buffer before that, reused for the next read

	mounts []Mount
	calls  int
	reads  int // reads of the file, for tests
}

type tableFile struct {
	path string
	view View
}

// OpenMountTable opens and reads the mount table.
func OpenMountTable(cfg TableConfig) (*MountTable, error) {
	root := cfg.RootPath
	if root == "" {
		root = "/"
	}
	return openTable(cfg, []tableFile{
		{filepath.Join(root, "proc/1/mountinfo"), ViewInit},
		{filepath.Join(root, "proc/self/mountinfo"), ViewSelf},
	})
}

func openTable(cfg TableConfig, candidates []tableFile) (*MountTable, error) {
	t := &MountTable{cfg: cfg, candidates: candidates, every: cfg.RereadEvery, fd: -1}
	if t.every == 0 {
		t.every = DefaultRereadEvery
	}
	if t.cfg.Filter == nil {
		t.cfg.Filter = defaultFilter()
	}
	if err := t.open(); err != nil {
		return nil, err
	}
	return t, nil
}

// open opens the first candidate that can be read and loads it.
func (t *MountTable) open() error {
	var errs []error
	for _, c := range t.candidates {
		fd, err := bounded.OpenFD(c.path) // a plain descriptor; a FIFO or device node is refused
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t.fd, t.file = fd, c
		if err := t.load(); err != nil {
			t.closeFile()
			errs = append(errs, err)
			continue
		}
		return nil
	}
	return fmt.Errorf("mount table: %w", errors.Join(errs...))
}

// File returns the file in use and its view.
func (t *MountTable) File() (string, View) { return t.file.path, t.file.view }

// Mounts returns the selected mounts, re-reading the file if it changed.
// The slice is shared and must not be modified; a re-read replaces it.
// After an error the last good table is returned with it (nil if there is
// none) and the file is opened again on the next call.
func (t *MountTable) Mounts() ([]Mount, error) {
	t.calls++
	if t.fd < 0 {
		if err := t.open(); err != nil {
			return t.mounts, err
		}
		return t.mounts, nil
	}
	changed, err := t.poll()
	if err == nil && (changed || (t.every > 0 && t.calls%t.every == 0)) {
		err = t.load()
	}
	if err != nil {
		t.closeFile()
		return t.mounts, fmt.Errorf("mount table %s: %w", t.file.path, err)
	}
	return t.mounts, nil
}

// poll asks, without waiting, whether the mount tree changed.
func (t *MountTable) poll() (bool, error) {
	fds := []unix.PollFd{{Fd: int32(t.fd), Events: unix.POLLPRI}}
	for {
		_, err := unix.Poll(fds, 0)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return false, fmt.Errorf("poll: %w", err)
		}
	}
	if fds[0].Revents&unix.POLLNVAL != 0 {
		return false, errors.New("poll: invalid file descriptor")
	}
	return fds[0].Revents&(unix.POLLPRI|unix.POLLERR) != 0, nil
}

// load reads the whole file from the start and, if it differs from the
// last read, selects the mounts again.
func (t *MountTable) load() error {
	if _, err := unix.Seek(t.fd, 0, io.SeekStart); err != nil {
		return fmt.Errorf("seek: %w", err)
	}
	buf := t.spare[:0]
	if cap(buf) == 0 {
		buf = make([]byte, 0, 64<<10)
	}
	for {
		if len(buf) > bounded.Mountinfo {
			t.spare = buf[:0]
			return fmt.Errorf("read: %w of %d bytes", bounded.ErrTooLarge, bounded.Mountinfo)
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(t.fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.spare = buf
			return fmt.Errorf("read: %w", err)
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	t.reads++
	if t.buf != nil && bytes.Equal(buf, t.buf) {
		t.spare = buf
		return nil
	}
	t.spare, t.buf = t.buf, buf
	mounts, perr := Select(buf, SelectOptions{
		RootPath: t.cfg.RootPath,
		View:     t.file.view,
		Filter:   t.cfg.Filter,
		Dedupe:   t.cfg.Dedupe,
	})
	t.mounts = mounts
	if t.cfg.OnReload != nil {
		t.cfg.OnReload(TableReload{File: t.file.path, View: t.file.view, Mounts: len(mounts), Err: perr})
	}
	return nil
}

func (t *MountTable) closeFile() {
	if t.fd >= 0 {
		_ = unix.Close(t.fd)
		t.fd = -1
	}
	t.buf = nil
}

// Close closes the file.
func (t *MountTable) Close() error {
	if t.fd < 0 {
		return nil
	}
	err := unix.Close(t.fd)
	t.fd = -1
	return err
}

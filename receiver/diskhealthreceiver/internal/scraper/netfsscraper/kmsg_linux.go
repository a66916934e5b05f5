package netfsscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper"

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/clientstate"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/nfslog"
)

const (
	// kmsgRecord is the buffer of one /dev/kmsg read: the kernel refuses (EINVAL) a buffer smaller
	// than the record, which it formats into at most 8 KiB (CONSOLE_EXT_LOG_MAX).
	kmsgRecord = 8 << 10
	// kmsgBudget bounds the bytes read per scrape; what is left is read at the next one.
	kmsgBudget = 256 << 10
)

// kernelLog follows the kernel log from the source's start: opened non-blocking at its end, read up
// to kmsgBudget bytes per scrape, never blocking.
type kernelLog struct {
	fd  int
	buf []byte
}

// openKernelLog opens path (/dev/kmsg) at its end: lines logged before the collector started are
// not evidence of the mounts' state now.
func openKernelLog(path string) (*kernelLog, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if _, err := unix.Seek(fd, 0, unix.SEEK_END); err != nil {
		_ = unix.Close(fd) // read-only, nothing read
		return nil, fmt.Errorf("seek to the end of %s: %w", path, err)
	}
	return &kernelLog{fd: fd, buf: make([]byte, kmsgRecord)}, nil
}

// read returns the NFS server lines logged since the previous read, by server, in order. Records
// overwritten before they were read (EPIPE) are skipped.
func (k *kernelLog) read() (map[string][]clientstate.KernelLine, error) {
	var out map[string][]clientstate.KernelLine
	add := func(l nfslog.Line) {
		if out == nil {
			out = map[string][]clientstate.KernelLine{}
		}
		out[l.Server] = append(out[l.Server], clientstate.KernelLine{NotResponding: l.Kind == nfslog.NotResponding, Text: l.Text})
	}
	for total := 0; total < kmsgBudget; {
		n, err := unix.Read(k.fd, k.buf)
		switch {
		case errors.Is(err, unix.EAGAIN) || (err == nil && n == 0):
			return out, nil
		case errors.Is(err, unix.EPIPE) || errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return out, err
		}
		total += n
		// A malformed record is not the NFS client's: it is skipped.
		_, _ = nfslog.Parse(k.buf[:n], add)
	}
	return out, nil
}

func (k *kernelLog) close() error { return unix.Close(k.fd) }

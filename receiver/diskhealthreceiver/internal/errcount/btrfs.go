package errcount

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// BtrfsStats are one device's error_stats (the counters `btrfs device
// stats` prints, kept in the device tree across mounts).
type BtrfsStats struct {
	Write      uint64 // write_errs: EIO/EREMOTEIO from writes
	Read       uint64 // read_errs
	Flush      uint64 // flush_errs
	Corruption uint64 // corruption_errs: checksum or metadata mismatch
	Generation uint64 // generation_errs: stale blocks (lost writes)
}

// ErrStatsInvalid means the kernel has no valid statistics for the device
// (error_stats reads "invalid", e.g. a missing device).
var ErrStatsInvalid = errors.New("device statistics are not valid")

// ParseBtrfsErrorStats parses devinfo/<devid>/error_stats: "key value"
// lines. Unknown keys are ignored; a missing known key is an error.
func ParseBtrfsErrorStats(b []byte) (BtrfsStats, error) {
	var s BtrfsStats
	if strings.TrimSpace(string(b)) == "invalid" {
		return s, ErrStatsInvalid
	}
	dst := map[string]*uint64{"write_errs": &s.Write, "read_errs": &s.Read, "flush_errs": &s.Flush, "corruption_errs": &s.Corruption, "generation_errs": &s.Generation}
	seen := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		p := dst[k]
		if p == nil {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return BtrfsStats{}, fmt.Errorf("error_stats %s %q: not a count", k, v)
		}
		*p = n
		delete(dst, k)
		seen++
	}
	if seen != 5 {
		return BtrfsStats{}, fmt.Errorf("error_stats: %d of 5 counters", seen)
	}
	return s, nil
}

// Superblock facts (fs/btrfs: the primary superblock is at 64 KiB; magic
// at 0x40, fsid at 0x20, dev_item.devid at 0xC9).
const (
	SuperblockOffset = 64 << 10
	superblockRead   = 4096
	offFSID          = 0x20
	offMagic         = 0x40
	offDevID         = 0xC9
	btrfsMagic       = "_BHRfS_M"
)

// ParseBtrfsSuperblock returns the filesystem id (as sysfs spells it) and
// the device id from a primary superblock.
func ParseBtrfsSuperblock(b []byte) (fsid string, devid uint64, err error) {
	if len(b) < offDevID+8 {
		return "", 0, errors.New("btrfs superblock: short read")
	}
	if string(b[offMagic:offMagic+8]) != btrfsMagic {
		return "", 0, errors.New("btrfs superblock: bad magic")
	}
	u := b[offFSID : offFSID+16]
	fsid = fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
	return fsid, binary.LittleEndian.Uint64(b[offDevID:]), nil
}

// BtrfsDeviceErrors is one device of one btrfs filesystem.
type BtrfsDeviceErrors struct {
	FSID   string
	DevID  uint64
	Device string // kernel name (loop0, sda2); "" when it could not be paired
	// Missing is devinfo/<id>/missing: the device is absent (degraded mount).
	Missing bool
	Stats   BtrfsStats
	// HasStats is false when error_stats could not be read or parsed (or reads "invalid"): Stats
	// are no counts then.
	HasStats bool
}

// BtrfsReader reads btrfs device errors from sysfs and pairs devids with
// device names. One goroutine calls Read at a time (a scraper does).
type BtrfsReader struct {
	sys, dev fs.FS
	timeout  time.Duration
	guard    bounded.Guard
	// cache: "<fsid>/<name>" → devid; a device's devid never changes while
	// it stays in the filesystem.
	cache map[string]uint64
}

// NewBtrfsReader reads sys (rooted at /sys) and, to pair devids with
// names on multi-device filesystems, the device nodes under dev (rooted
// at /dev; nil to never open devices). timeout bounds each superblock read.
func NewBtrfsReader(sys, dev fs.FS, timeout time.Duration) *BtrfsReader {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &BtrfsReader{sys: sys, dev: dev, timeout: timeout, cache: map[string]uint64{}}
}

// Read returns every device of every mounted btrfs, sorted by FSID and
// DevID. Errors (unreadable attributes, unpaired devices) are joined; the
// devices are still returned.
func (r *BtrfsReader) Read(ctx context.Context) ([]BtrfsDeviceErrors, error) {
	fsids, err := fs.ReadDir(r.sys, "fs/btrfs")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []BtrfsDeviceErrors
	var errs []error
	for _, de := range fsids {
		fsid := de.Name()
		if fsid == "features" || !de.IsDir() {
			continue
		}
		devs, err := r.readFS(ctx, fsid)
		if err != nil {
			errs = append(errs, fmt.Errorf("btrfs %s: %w", fsid, err))
		}
		out = append(out, devs...)
	}
	slices.SortFunc(out, func(a, b BtrfsDeviceErrors) int {
		if c := strings.Compare(a.FSID, b.FSID); c != 0 {
			return c
		}
		return int(a.DevID) - int(b.DevID)
	})
	return out, errors.Join(errs...)
}

func (r *BtrfsReader) readFS(ctx context.Context, fsid string) ([]BtrfsDeviceErrors, error) {
	base := "fs/btrfs/" + fsid
	infos, err := fs.ReadDir(r.sys, base+"/devinfo")
	if err != nil {
		return nil, err
	}
	var errs []error
	var out []BtrfsDeviceErrors
	for _, de := range infos {
		id, err := strconv.ParseUint(de.Name(), 10, 64)
		if err != nil {
			continue
		}
		d := BtrfsDeviceErrors{FSID: fsid, DevID: id}
		dir := base + "/devinfo/" + de.Name()
		if b, err := fs.ReadFile(r.sys, dir+"/missing"); err == nil {
			d.Missing = strings.TrimSpace(string(b)) == "1"
		}
		b, err := fs.ReadFile(r.sys, dir+"/error_stats")
		if err == nil {
			d.Stats, err = ParseBtrfsErrorStats(b)
			d.HasStats = err == nil
		}
		if err != nil && !(d.Missing && errors.Is(err, ErrStatsInvalid)) {
			errs = append(errs, fmt.Errorf("devid %d: %w", id, err))
		}
		out = append(out, d)
	}
	names, err := r.deviceNames(base)
	if err != nil {
		return out, errors.Join(append(errs, err)...)
	}
	errs = append(errs, r.pair(ctx, fsid, out, names))
	return out, errors.Join(errs...)
}

func (r *BtrfsReader) deviceNames(base string) ([]string, error) {
	des, err := fs.ReadDir(r.sys, base+"/devices")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, de := range des {
		if validName(de.Name()) {
			names = append(names, de.Name())
		}
	}
	return names, nil
}

// pair fills Device: trivially for one present device and one name,
// otherwise from each named device's superblock.
func (r *BtrfsReader) pair(ctx context.Context, fsid string, devs []BtrfsDeviceErrors, names []string) error {
	present := 0
	for _, d := range devs {
		if !d.Missing {
			present++
		}
	}
	if present == 1 && len(names) == 1 {
		for i := range devs {
			if !devs[i].Missing {
				devs[i].Device = names[0]
			}
		}
		return nil
	}
	var errs []error
	byID := map[uint64]string{}
	for _, name := range names {
		id, ok := r.cache[fsid+"/"+name]
		if !ok {
			var err error
			if id, err = r.devidOf(ctx, fsid, name); err != nil {
				errs = append(errs, err)
				continue
			}
			r.cache[fsid+"/"+name] = id
		}
		byID[id] = name
	}
	for i := range devs {
		devs[i].Device = byID[devs[i].DevID]
	}
	return errors.Join(errs...)
}

func (r *BtrfsReader) devidOf(ctx context.Context, fsid, name string) (uint64, error) {
	if r.dev == nil {
		return 0, fmt.Errorf("%s: no device directory to read its superblock from", name)
	}
	b, err := bounded.Do(ctx, &r.guard, name, r.timeout, func() ([]byte, error) { return readSuperblock(r.dev, name) })
	if err != nil {
		return 0, err
	}
	got, id, err := ParseBtrfsSuperblock(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if got != fsid {
		return 0, fmt.Errorf("%s: superblock of filesystem %s, not %s", name, got, fsid)
	}
	return id, nil
}

// readSuperblock reads 4 KiB at 64 KiB of dev/<name> (opened read-only by
// os.DirFS).
func readSuperblock(dev fs.FS, name string) ([]byte, error) {
	f, err := dev.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // opened read-only: closing cannot lose data
	buf := make([]byte, superblockRead)
	if ra, ok := f.(io.ReaderAt); ok {
		n, err := ra.ReadAt(buf, SuperblockOffset)
		if n < offDevID+8 {
			return nil, fmt.Errorf("%s: superblock read: %w", name, errors.Join(err, io.ErrUnexpectedEOF))
		}
		return buf[:n], nil
	}
	return nil, fmt.Errorf("%s: device cannot be read at an offset", name)
}

// Wait blocks until abandoned superblock reads have returned (tests).
func (r *BtrfsReader) Wait() { r.guard.Wait() }

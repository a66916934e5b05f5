package stackscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/dm"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/errcount"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/mdraid"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/nvmesubsys"
)

// The readers the scraper uses, as interfaces so tests and benchmarks plug in fixtures and fakes.
type (
	mdSource interface {
		Read(ctx context.Context) ([]mdraid.Result, error)
	}
	dmSource interface {
		Read(ctx context.Context) ([]dm.Device, error)
		Close() error
	}
	nvmeSource interface {
		Read(ctx context.Context) ([]nvmesubsys.Result, int, error)
	}
	btrfsSource interface {
		Read(ctx context.Context) ([]errcount.BtrfsDeviceErrors, error)
	}
)

// readers is what one scraper reads; a nil source is a part switched off.
type readers struct {
	sysRoot string // <root_path>/sys, for blockdev's identity reads
	sys     fs.FS
	md      mdSource
	dm      dmSource
	nvme    nvmeSource
	errors  bool
	btrfs   btrfsSource
	// mountinfo returns the host's mount table (the filesystem source's: <root_path>/proc/1/mountinfo).
	mountinfo func() ([]byte, error)
	// statMount stats a mount point (as mountinfo names it, below root_path) within the part's
	// deadline and returns the major:minor of the filesystem found there ("" where not known): a
	// shut-down xfs answers with EIO. nil: not probed.
	statMount func(ctx context.Context, mountPoint string) (string, error)
}

func newReaders(c *Config) readers {
	root := c.RootPath
	if root == "" {
		root = "/"
	}
	sysRoot := filepath.Join(root, "sys")
	r := readers{sysRoot: sysRoot, sys: bounded.NewDirFS(sysRoot, bounded.Attr), errors: c.Errors}
	if c.MD {
		r.md = mdraid.NewReader(r.sys, c.Timeout)
	}
	if c.DeviceMapper {
		r.dm = dm.NewReader(dm.ReaderConfig{ControlPath: filepath.Join(root, "dev", "mapper", "control"), Timeout: c.Timeout})
	}
	if c.NVMe {
		r.nvme = nvmesubsys.NewReader(r.sys, c.Timeout, c.NVMeMaxSubsystems)
	}
	if c.Errors {
		r.btrfs = errcount.NewBtrfsReader(r.sys, os.DirFS(filepath.Join(root, "dev")), c.Timeout)
		r.mountinfo = func() ([]byte, error) {
			b, _, err := fsusage.ReadHostMountInfo(root)
			return b, err
		}
		guard := &bounded.Guard{}
		r.statMount = func(ctx context.Context, mountPoint string) (string, error) {
			p := filepath.Join(root, mountPoint)
			return bounded.Do(ctx, guard, p, c.Timeout, func() (string, error) { return statDev(p) })
		}
	}
	return r
}

// diskIDs resolves a block device (a disk, or a partition of one) to its physical disk's hw.id, the
// one the I/O and SMART sources give it (blockdev.DiskID). An identity is read once per device number.
type diskIDs struct {
	sysRoot string
	sys     fs.FS
	cache   map[string]diskIDEntry
	used    map[string]bool
}

type diskIDEntry struct{ dev, id, disk string }

func newDiskIDs(sysRoot string, sys fs.FS) *diskIDs {
	return &diskIDs{sysRoot: sysRoot, sys: sys, cache: map[string]diskIDEntry{}, used: map[string]bool{}}
}

// of returns the hw.id and kernel name of the physical disk name lives on; "" for devices that are
// not on one (loop, dm, md) or that sysfs does not show.
func (c *diskIDs) of(name string) (id, disk string) {
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return "", ""
	}
	dev := readTrim(c.sys, "class/block/"+name+"/dev")
	if dev == "" {
		return "", ""
	}
	c.used[name] = true
	if e, ok := c.cache[name]; ok && e.dev == dev {
		return e.id, e.disk
	}
	e := diskIDEntry{dev: dev}
	if ident, ok := c.identity(name, dev); ok {
		switch {
		case ident.Class == blockdev.ClassDisk:
			e.id, e.disk = blockdev.DiskID(&ident), name
		case ident.Class == blockdev.ClassPartition && ident.Parent != "":
			if pdev := readTrim(c.sys, "class/block/"+ident.Parent+"/dev"); pdev != "" {
				if pid, ok := c.identity(ident.Parent, pdev); ok && pid.Class == blockdev.ClassDisk {
					e.id, e.disk = blockdev.DiskID(&pid), ident.Parent
				}
			}
		}
	}
	c.cache[name] = e
	return e.id, e.disk
}

// virtual says whether name is a block device the kernel builds on others, a logical disk of its own:
// sysfs gives a device-mapper device a dm/ directory, an md array md/, a loop device loop/.
func (c *diskIDs) virtual(name string) bool {
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return false
	}
	for _, d := range []string{"dm", "md", "loop"} {
		if fi, err := fs.Stat(c.sys, "class/block/"+name+"/"+d); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

func (c *diskIDs) identity(name, dev string) (blockdev.Identity, bool) {
	maj, minor, ok := parseDev(dev)
	if !ok {
		return blockdev.Identity{}, false
	}
	// Identity errors are enrichment (a missing model); the class and WWN that matter are still read.
	ident, _ := blockdev.ReadIdentity(c.sysRoot, name, maj, minor)
	return ident, true
}

// prune forgets devices not asked about since the last prune.
func (c *diskIDs) prune() {
	for name := range c.cache {
		if !c.used[name] {
			delete(c.cache, name)
		}
	}
	clear(c.used)
}

func parseDev(s string) (maj, minor uint32, ok bool) {
	a, b, found := strings.Cut(s, ":")
	if !found {
		return 0, 0, false
	}
	x, err1 := strconv.ParseUint(a, 10, 32)
	y, err2 := strconv.ParseUint(b, 10, 32)
	return uint32(x), uint32(y), err1 == nil && err2 == nil
}

func readTrim(sys fs.FS, name string) string {
	b, err := fs.ReadFile(sys, name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// isNotExist: the part has nothing to read here (no md, no ext4, no SCSI counters).
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

package blockdev

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"path/filepath"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// Cache keeps the sysfs identity of every device in the last
// /proc/diskstats parse. sysfs is read once per device: identities do not
// change while a device exists, and reading them every scrape is what made
// node_exporter 10x slower on hosts with thousands of devices. Not safe for
// concurrent use; the zero value is ready to use.
//
// A disk hot-swapped under the same name and major:minor is another device
// all the same: on Linux 5.15+ Refresh sees its new diskseq (one small read
// per whole disk per call); on older kernels the caller tells the cache with
// Reread when the device's counters restarted.
type Cache struct {
	root string
	keys []devKey // the device set of the last Refresh, in diskstats order
	ids  map[string]*Identity
	fsys fs.FS // the tree of the last Refresh
	// seqs lists the whole disks that have a diskseq, with its path.
	seqs []seqDisk
	// unread holds, for each device whose sysfs entry could not be listed, why: its class is then
	// unknown (ClassOther) and only this says so.
	unread map[string]error
	// errs holds the errors of each device's last read, until it is read again; hwErrs those of
	// reading the hardware of a disk absent from diskstats for its partitions (done again on every
	// change). failed is all of them joined, in diskstats order: what every Refresh returns meanwhile.
	errs   map[string][]error
	hwErrs []error
	failed error
	// openFS opens the sysfs tree; nil means a bounded.DirFS. Tests count reads.
	openFS func(root string) fs.FS
}

type seqDisk struct {
	name, path string
}

type devKey struct {
	name         string
	major, minor uint32
}

// Refresh makes the cache match stats. It reads sysfs only for devices not
// seen before or whose major:minor changed (a re-created device), and drops
// devices that are gone. When the device set is the same as last time it
// does no syscall and no allocation.
//
// On kernels with diskseq (5.15+) it also reads, on every call, the diskseq
// of each whole disk, and reads a disk whose diskseq changed (a disk swapped
// under the same name and major:minor) again, with its partitions: one
// open, read and close per whole disk (BenchmarkIdentityCacheRefreshDiskseq100:
// about 6 µs and 5 small allocations per disk). Without diskseq an unchanged
// set costs nothing: no syscall, no allocation.
//
// Errors are those of the last read of each device (see ReadIdentity): a
// device whose read failed keeps the fields that could be read and is not
// read again until it changes, and its errors come back from every call
// until then, so a broken attribute stays reported while it is in use (the
// scraper's Reporter logs it once) and clears when the device is read again.
func (c *Cache) Refresh(sysRoot string, stats []Dev) error {
	if c.ids != nil && sysRoot == c.root && c.sameSet(stats) {
		c.checkSeqs()
		return c.failed
	}
	open := c.openFS
	if open == nil {
		open = func(root string) fs.FS { return bounded.NewDirFS(root, bounded.Attr) }
	}
	s := sysfs{root: sysRoot, fsys: open(sysRoot)}
	old := c.ids
	if sysRoot != c.root {
		old = nil // another tree: nothing carries over
	}
	// A disk swapped since the last call is read again, not carried over.
	if old != nil {
		c.fsys = s.fsys
		for _, sd := range c.seqs {
			if id := old[sd.name]; id != nil && c.seqChanged(sd.path, id.DiskSeq) {
				old = c.cloneWithout(old, sd.name)
			}
		}
	}

	next := make(map[string]*Identity, len(stats))
	var unread map[string]error
	var errs map[string][]error
	var hwErrs []error
	for i := range stats {
		st := &stats[i]
		if _, dup := next[st.Name]; dup {
			continue
		}
		if id, ok := old[st.Name]; ok && id.Major == st.Major && id.Minor == st.Minor {
			next[st.Name] = id
			if err := c.unread[st.Name]; err != nil {
				unread = setErr(unread, st.Name, err)
			}
			errs = addErrs(errs, st.Name, c.errs[st.Name])
			continue
		}
		id, ierrs := s.own(st.Name, st.Major, st.Minor)
		errs = addErrs(errs, st.Name, ierrs)
		next[st.Name] = &id
		if id.Class == ClassOther && len(ierrs) == 1 && isListError(ierrs[0], s.root, st.Name) {
			unread = setErr(unread, st.Name, ierrs[0])
		}
	}

	// Partitions carry their disk's hardware fields. Redone on every change
	// (from memory) so a re-read disk passes its new values on. Published
	// identities are never modified: a changed one is replaced by a copy.
	for i := range stats {
		id := next[stats[i].Name]
		if id.Class != ClassPartition || id.Parent == "" {
			continue
		}
		var hw hardware
		if disk, ok := next[id.Parent]; ok {
			hw = disk.hardware()
		} else {
			// The kernel lists a disk before its partitions, so this is
			// only reached with an inconsistent tree.
			var herrs []error
			hw, herrs = s.hardwareOf(id.Parent)
			hwErrs = append(hwErrs, herrs...)
		}
		if id.hardware() != hw {
			cp := *id
			cp.setHardware(hw)
			next[stats[i].Name] = &cp
		}
	}
	setParents(next)

	c.root, c.ids, c.fsys, c.unread = sysRoot, next, s.fsys, unread
	c.keys = c.keys[:0]
	for i := range stats {
		c.keys = append(c.keys, devKey{stats[i].Name, stats[i].Major, stats[i].Minor})
	}
	c.indexSeqs()
	c.hwErrs = hwErrs
	c.setErrs(errs)
	return c.failed
}

// addErrs records errs as (more of) the errors of name's last read.
func addErrs(m map[string][]error, name string, errs []error) map[string][]error {
	if len(errs) == 0 {
		return m
	}
	if m == nil {
		m = map[string][]error{}
	}
	m[name] = append(m[name], errs...)
	return m
}

// setErrs makes errs the devices' standing errors.
func (c *Cache) setErrs(errs map[string][]error) {
	c.errs = errs
	var all []error
	var seen map[string]bool // a name listed twice was read once
	for _, k := range c.keys {
		if e := errs[k.name]; len(e) > 0 && !seen[k.name] {
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[k.name] = true
			all = append(all, e...)
		}
	}
	c.failed = errors.Join(append(all, c.hwErrs...)...)
}

// checkSeqs reads the diskseq of every whole disk that has one and reads a
// disk whose diskseq changed again (its errors then stand in c.failed).
func (c *Cache) checkSeqs() {
	for _, sd := range c.seqs {
		if id := c.ids[sd.name]; id != nil && c.seqChanged(sd.path, id.DiskSeq) {
			_ = c.Reread(sd.name)
		}
	}
}

// seqChanged reports whether the diskseq at rel is readable and differs
// from seq. An unreadable one (the disk is going away) is no change: the
// next /proc/diskstats read tells.
func (c *Cache) seqChanged(rel string, seq uint64) bool {
	f, err := c.fsys.Open(rel)
	if err != nil {
		return false
	}
	var buf [24]byte
	n, _ := io.ReadFull(f, buf[:])
	_ = f.Close() // read-only sysfs attribute: nothing to flush
	v, ok := parseSeq(buf[:n])
	return ok && v != seq
}

// parseSeq parses a diskseq attribute ("123\n") without allocating.
func parseSeq(b []byte) (uint64, bool) {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		d := uint64(ch - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// cloneWithout copies ids without name and its partitions.
func (c *Cache) cloneWithout(ids map[string]*Identity, name string) map[string]*Identity {
	out := make(map[string]*Identity, len(ids))
	for k, id := range ids {
		if k != name && !(id.Class == ClassPartition && id.Parent == name) {
			out[k] = id
		}
	}
	return out
}

// Reread reads one device of the last Refresh again, with the partitions of
// a disk: what a caller does when the device's counters restarted (a device
// re-created under the same name and major:minor, which kernels before 5.15
// give no other sign of). Identities already handed out are not modified.
// It returns the errors of this read, which also replace the re-read
// devices' standing errors (see Refresh).
func (c *Cache) Reread(name string) error {
	id, ok := c.ids[name]
	if !ok || c.fsys == nil {
		return nil
	}
	s := sysfs{root: c.root, fsys: c.fsys}
	next := make(map[string]*Identity, len(c.ids))
	for k, v := range c.ids {
		next[k] = v
	}
	var errs []error
	standing := make(map[string][]error, len(c.errs))
	for k, v := range c.errs {
		standing[k] = v
	}
	reread := func(old *Identity) *Identity {
		n, ierrs := s.own(old.Name, old.Major, old.Minor)
		errs = append(errs, ierrs...)
		delete(standing, old.Name)
		standing = addErrs(standing, old.Name, ierrs)
		return &n
	}
	disk := id
	if id.Class == ClassPartition {
		disk = next[id.Parent]
	} else {
		disk = reread(id)
		next[name] = disk
	}
	for _, k := range c.keys {
		p := next[k.name]
		if p.Class != ClassPartition || (p.Name != name && p.Parent != name) {
			continue
		}
		np := reread(p)
		if disk != nil {
			np.setHardware(disk.hardware())
		} else {
			// Refresh reads the absent disk on every change and keeps its errors: returned, not kept.
			hw, herrs := s.hardwareOf(np.Parent)
			errs = append(errs, herrs...)
			np.setHardware(hw)
		}
		next[k.name] = np
	}
	setParents(next)
	c.ids = next
	c.indexSeqs()
	c.setErrs(standing)
	return errors.Join(errs...)
}

// indexSeqs lists the whole disks of the cache that have a diskseq, in
// diskstats order.
func (c *Cache) indexSeqs() {
	c.seqs = c.seqs[:0]
	for _, k := range c.keys {
		if id := c.ids[k.name]; id != nil && id.Class == ClassDisk && id.DiskSeq != 0 {
			c.seqs = append(c.seqs, seqDisk{name: id.Name, path: "class/block/" + sysName(id.Name) + "/diskseq"})
		}
	}
}

func (c *Cache) sameSet(stats []Dev) bool {
	if len(stats) != len(c.keys) {
		return false
	}
	for i := range stats {
		k := &c.keys[i]
		if stats[i].Name != k.name || stats[i].Major != k.major || stats[i].Minor != k.minor {
			return false
		}
	}
	return true
}

// Get returns the identity of a device of the last Refresh. The Identity must
// not be modified.
func (c *Cache) Get(name string) (*Identity, bool) {
	id, ok := c.ids[name]
	return id, ok
}

// Failed returns the standing errors of the devices of the last Refresh, as Refresh returned them
// (updated by Reread).
func (c *Cache) Failed() error { return c.failed }

// Unreadable returns why a device of the last Refresh has no class: its sysfs entry could not be
// listed, so its Identity is only its name and numbers, classed ClassOther. nil for every other device.
func (c *Cache) Unreadable(name string) error { return c.unread[name] }

func setErr(m map[string]error, name string, err error) map[string]error {
	if m == nil {
		m = map[string]error{}
	}
	m[name] = err
	return m
}

// isListError reports whether err is own's failure to list the device's sysfs directory.
func isListError(err error, root, name string) bool {
	var ae *AttrError
	return errors.As(err, &ae) && ae.Path == filepath.Join(root, "class/block", sysName(name))
}

// Dev names one block device of a /proc/diskstats read: its kernel name and major:minor.
type Dev struct {
	Name         string
	Major, Minor uint32
}

package blockdev

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Cache keeps the sysfs identity of every device in the last
// /proc/diskstats parse. sysfs is read once per device: identities do not
// change while a device exists, and reading them every scrape is what made
// node_exporter 10x slower on hosts with thousands of devices. Not safe for
// concurrent use; the zero value is ready to use.
type Cache struct {
	root string
	keys []devKey // the device set of the last Refresh, in diskstats order
	ids  map[string]*Identity
	// unread holds, for each device whose sysfs entry could not be listed, why: its class is then
	// unknown (ClassOther) and only this says so.
	unread map[string]error
	// openFS opens the sysfs tree; nil means os.DirFS. Tests count reads.
	openFS func(root string) fs.FS
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
// Errors are those of the devices read in this call (see ReadIdentity); a
// device whose read failed keeps the fields that could be read and is not
// read again until it changes, so a broken attribute is reported once.
func (c *Cache) Refresh(sysRoot string, stats []Dev) error {
	if c.ids != nil && sysRoot == c.root && c.sameSet(stats) {
		return nil
	}
	open := c.openFS
	if open == nil {
		open = os.DirFS
	}
	s := sysfs{root: sysRoot, fsys: open(sysRoot)}
	old := c.ids
	if sysRoot != c.root {
		old = nil // another tree: nothing carries over
	}

	next := make(map[string]*Identity, len(stats))
	var unread map[string]error
	var errs []error
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
			continue
		}
		id, ierrs := s.own(st.Name, st.Major, st.Minor)
		errs = append(errs, ierrs...)
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
			errs = append(errs, herrs...)
		}
		if id.hardware() != hw {
			cp := *id
			cp.setHardware(hw)
			next[stats[i].Name] = &cp
		}
	}

	c.root, c.ids, c.unread = sysRoot, next, unread
	c.keys = c.keys[:0]
	for i := range stats {
		c.keys = append(c.keys, devKey{stats[i].Name, stats[i].Major, stats[i].Minor})
	}
	return errors.Join(errs...)
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

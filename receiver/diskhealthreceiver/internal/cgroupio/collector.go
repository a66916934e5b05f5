package cgroupio

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/pressure"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

// Version is the cgroup hierarchy's kind.
type Version int

const (
	// V1 reads the blkio controller's throttle statistics.
	V1 Version = 1
	// V2 reads the unified hierarchy's io.stat and io.pressure.
	V2 Version = 2
)

func (v Version) String() string {
	switch v {
	case V1:
		return "v1 (blkio)"
	case V2:
		return "v2 (io)"
	}
	return fmt.Sprintf("Version(%d)", int(v))
}

// Config bounds a Collector.
type Config struct {
	Version Version
	// TopN is the most cgroups one collection returns: those that moved the most bytes.
	TopN int
	// MaxDepth is the depth of the deepest cgroup reported (the hierarchy's root is 0, its children 1).
	// A cgroup at MaxDepth reports the I/O of its whole subtree.
	MaxDepth int
	// Pressure, when not nil, is where a reported cgroup's io.pressure is read, at the same path: the
	// same tree for v2, the unified hierarchy of a hybrid host for v1.
	Pressure FS
	// Start is the start of the counters of cgroups already present at the first collection (they count
	// since their creation, which is not known; boot time is a safe bound).
	Start time.Time
}

// Validate reports a configuration the Collector cannot run with.
func (c *Config) Validate() error {
	var errs []error
	if c.Version != V1 && c.Version != V2 {
		errs = append(errs, fmt.Errorf("version %d: want 1 or 2", c.Version))
	}
	if c.TopN < 1 {
		errs = append(errs, fmt.Errorf("top_n must be at least 1, got %d", c.TopN))
	}
	if c.MaxDepth < 1 {
		errs = append(errs, fmt.Errorf("max_depth must be at least 1, got %d", c.MaxDepth))
	}
	return errors.Join(errs...)
}

// Cgroup is one reported cgroup. Its slices are valid until the next Collect.
type Cgroup struct {
	// Path is the cgroup's path from the hierarchy's root, starting with "/".
	Path string
	Attribution
	// Devices are the cumulative counters per device (v1: bytes and operations read a moment apart).
	Devices []DeviceStat
	// Previous are the counters at the previous collection, nil when every byte of Devices is the
	// interval's (a cgroup created since, or counters that went back): Written takes the difference.
	Previous []DeviceStat
	// Bytes were moved (read, written, discarded, all devices) since the previous collection.
	Bytes uint64
	// Start is when the cumulative counters started (or a safe earlier bound).
	Start time.Time
	// Pressure is the cgroup's io.pressure when HasPressure.
	Pressure    pressure.Pressure
	HasPressure bool
	// PressureStart is when Pressure's totals started: Start, or later when they went back while the
	// I/O counters did not (a series of its own then begins at the previous reading).
	PressureStart time.Time
}

// Result is one collection. Its slices are valid until the next Collect.
type Result struct {
	// Cgroups are at most TopN leaf cgroups with I/O since the previous collection, most bytes first.
	Cgroups []Cgroup
	// Active is how many leaf cgroups had I/O since the previous collection, before the TopN cut.
	Active int
	// Reads and Listings count the statistics files read and the directories listed: the cost.
	Reads, Listings int
}

// Collector walks a cgroup hierarchy and returns the cgroups that did the most I/O since its previous
// call. The kernel's I/O statistics are hierarchical (a cgroup's include its descendants'), so a subtree
// whose root's counters did not move since the last walk had no I/O and is not read at all: on a node
// with thousands of idle cgroups a collection reads the few busy paths and their siblings. The first
// collection reads everything down to MaxDepth and reports nothing — without a previous reading no cgroup
// can be said to have done I/O "since the last scrape" — except that later collections treat a cgroup
// created since then as having started from zero. A Collector is not safe for concurrent use.
//
// The reported cgroups are leaves (or at MaxDepth), so no byte is counted twice. I/O charged to a
// cgroup that has children — tasks in an inner v1 cgroup, or children removed since — is not reported
// per cgroup; the device totals (/proc/diskstats) still have it.
type Collector struct {
	fsys FS
	cfg  Config
	file string // the statistics file read in every visited cgroup

	root node
	gen  uint64
	prev time.Time // time of the previous collection
	now  time.Time // time of the current one

	buf   []byte
	names []string // a stack of directory listings
	cands []*node
	res   Result
	errs  []error
}

// node mirrors one cgroup between collections.
type node struct {
	path     string // relative to the root, no leading slash; "" for the root
	children map[string]*node
	mark     uint64 // collection in which the parent's listing last had it
	listed   bool   // its children were listed at least once
	seen     bool   // its counters were read at least once
	born     bool   // created after its parent was listed: every byte it has is new
	sig      uint64 // bytes and operations over all devices, to notice any change
	bytes    uint64
	delta    uint64
	devs     []DeviceStat
	prevDevs []DeviceStat // devs of the previous reading, to tell a counter that went back
	fresh    bool         // every byte of devs is this interval's (delta counted from zero)
	start    time.Time
	attr     *Attribution
	// psi is the io.pressure last read (psiAt, when hasPSI); psiStart the start of its totals' series.
	psi             pressure.Pressure
	hasPSI          bool
	psiAt, psiStart time.Time
}

// NewCollector returns a Collector over fsys.
func NewCollector(fsys FS, cfg Config) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Collector{fsys: fsys, cfg: cfg, file: "io.stat"}
	if cfg.Version == V1 {
		c.file = BlkioBytesFile
	}
	return c, nil
}

// Collect walks the hierarchy at time now. The error joins every file that could not be read or parsed,
// each naming its path; the other cgroups are still returned. A cgroup removed during the walk is not
// an error.
func (c *Collector) Collect(now time.Time) (Result, error) {
	c.gen++
	c.now = now
	c.cands = c.cands[:0]
	c.errs = c.errs[:0]
	c.res = Result{Cgroups: c.res.Cgroups[:0]}

	// The root's own counters are the whole machine's: it is always listed, never reported.
	c.visitChildren(&c.root, 0)

	slices.SortFunc(c.cands, func(a, b *node) int {
		if a.delta != b.delta {
			return cmp.Compare(b.delta, a.delta)
		}
		return cmp.Compare(a.path, b.path)
	})
	c.res.Active = len(c.cands)
	for _, n := range c.cands[:min(len(c.cands), c.cfg.TopN)] {
		c.res.Cgroups = append(c.res.Cgroups, c.report(n))
	}
	c.prev = now
	return c.res, errors.Join(c.errs...)
}

// visit reads n's counters and, when they moved, its children. It reports whether n is gone.
func (c *Collector) visit(n *node, depth int) (gone bool) {
	data, err := c.fsys.ReadFile(join(n.path, c.file), c.buf)
	c.buf = data
	c.res.Reads++
	if err != nil {
		if isGone(err) {
			return true
		}
		c.errs = append(c.errs, fmt.Errorf("cgroup /%s: %w", n.path, err))
		// Its counters are unknown, not unchanged: its children are read all the same (every collection,
		// as nothing tells that their subtree did not move), so one cgroup's file past the cap or
		// unreadable never hides its healthy descendants. It is not reported itself.
		if depth < c.cfg.MaxDepth {
			c.visitChildren(n, depth)
		}
		return false
	}
	n.prevDevs = append(n.prevDevs[:0], n.devs...)
	var perr error
	if c.cfg.Version == V1 {
		n.devs, perr = ParseBlkio(data, nil, n.devs)
	} else {
		n.devs, perr = ParseIOStat(data, n.devs)
	}
	if perr != nil {
		c.errs = append(c.errs, fmt.Errorf("cgroup /%s: %w", n.path, perr))
	}
	var total, sig uint64
	for i := range n.devs {
		d := &n.devs[i]
		total += d.Bytes()
		sig += d.Bytes() + d.ReadOps + d.WriteOps + d.DiscardOps
	}
	if n.seen && sig == n.sig {
		return false // nothing below moved: skip the subtree
	}
	leaf := true
	if depth < c.cfg.MaxDepth {
		leaf = !c.visitChildren(n, depth)
	}
	prev, wasSeen := n.bytes, n.seen
	n.bytes, n.sig, n.seen = total, sig, true
	if !leaf {
		return false
	}
	switch {
	case wasSeen && total >= prev && !wentBack(n.prevDevs, n.devs, c.cfg.Version == V1):
		n.delta, n.fresh = total-prev, false
	case wasSeen:
		// Counters went back (any of them, on any device, or a device's counters vanished): the cgroup
		// was removed and created again under the same path, or its device's statistics were. The
		// cumulative series restart; the interval's bytes are all the new counters have.
		n.delta, n.start, n.fresh = total, c.prev, true
	case n.born:
		n.delta, n.fresh = total, true
	default:
		return false // first reading at the first collection: a baseline only
	}
	c.cands = append(c.cands, n)
	return false
}

// wentBack reports whether any counter of prev is above the same device's in cur, or a device of prev is
// not in cur (its statistics were freed and may return from zero). The kernel keeps a cgroup's devices in
// one order, so each is first looked for at its own index; the index finds the others. bytesOnly (v1)
// compares the byte counters alone: a v1 walk reads only the bytes file, so cur has no operation
// counts, while prev has them when the cgroup was reported (report reads the operations file).
func wentBack(prev, cur []DeviceStat, bytesOnly bool) bool {
	var idx deviceIndex
	for i := range prev {
		p := &prev[i]
		j := i
		if j >= len(cur) || cur[j].Major != p.Major || cur[j].Minor != p.Minor {
			if j = idx.find(cur, p.Major, p.Minor); j < 0 {
				return true
			}
		}
		c := &cur[j]
		if c.ReadBytes < p.ReadBytes || c.WriteBytes < p.WriteBytes || c.DiscardBytes < p.DiscardBytes {
			return true
		}
		if !bytesOnly && (c.ReadOps < p.ReadOps || c.WriteOps < p.WriteOps || c.DiscardOps < p.DiscardOps) {
			return true
		}
	}
	return false
}

// visitChildren lists n's child cgroups, visits each and forgets the ones that are gone. It reports
// whether n has children.
func (c *Collector) visitChildren(n *node, depth int) bool {
	base := len(c.names)
	var err error
	c.names, err = c.fsys.SubDirs(n.path, c.names)
	c.res.Listings++
	names := c.names[base:]
	defer func() { c.names = c.names[:base] }()
	if err != nil {
		if !isGone(err) {
			c.errs = append(c.errs, fmt.Errorf("cgroup /%s: %w", n.path, err))
		}
		return len(n.children) > 0
	}
	// Children of a cgroup created since the previous collection are new too.
	newChildren := n.listed || n.born
	n.listed = true
	if n.children == nil && len(names) > 0 {
		n.children = make(map[string]*node, len(names))
	}
	for _, name := range names {
		child := n.children[name]
		if child == nil {
			child = &node{path: join(n.path, name), born: newChildren, start: c.cfg.Start}
			if newChildren {
				// Created after the previous listing, so it had no I/O before the previous collection.
				child.start = c.prev
			}
			n.children[name] = child
		}
		child.mark = c.gen
		if c.visit(child, depth+1) {
			delete(n.children, name)
		}
	}
	for name, child := range n.children {
		if child.mark != c.gen {
			delete(n.children, name)
		}
	}
	return len(n.children) > 0
}

// report builds the Cgroup of a selected node, reading what only reported cgroups need: v1 operation
// counts and io.pressure.
func (c *Collector) report(n *node) Cgroup {
	if c.cfg.Version == V1 {
		data, err := c.fsys.ReadFile(join(n.path, BlkioOpsFile), c.buf)
		c.buf = data
		c.res.Reads++
		switch {
		case err == nil:
			var bad *parseerr.Lines
			n.devs, bad = parseBlkio(BlkioOpsFile, data, n.devs, true, nil)
			if bad != nil {
				c.errs = append(c.errs, fmt.Errorf("cgroup /%s: %w", n.path, bad))
			}
		case !isGone(err):
			c.errs = append(c.errs, fmt.Errorf("cgroup /%s: %w", n.path, err))
		}
	}
	if n.attr == nil {
		a := Attribute(n.path)
		a.SystemdUnit = sanitize.String(sanitize.SystemdUnit, a.SystemdUnit)
		n.attr = &a
	}
	// Directory names are bytes: the path leaves as valid UTF-8 of bounded length.
	cg := Cgroup{Path: sanitize.String(sanitize.CgroupPath, "/"+n.path), Attribution: *n.attr, Devices: n.devs, Bytes: n.delta, Start: n.start}
	if !n.fresh {
		cg.Previous = n.prevDevs
	}
	if c.cfg.Pressure != nil {
		data, err := c.cfg.Pressure.ReadFile(join(n.path, "io.pressure"), c.buf)
		c.buf = data
		c.res.Reads++
		switch {
		case err == nil:
			p, perr := pressure.Parse(data)
			if perr != nil {
				c.errs = append(c.errs, fmt.Errorf("cgroup /%s io.pressure: %w", n.path, perr))
			} else {
				cg.Pressure, cg.HasPressure, cg.PressureStart = p, true, c.pressureStart(n, p)
			}
		case !isGone(err) && !pressure.Unavailable(err):
			c.errs = append(c.errs, fmt.Errorf("cgroup /%s: %w", n.path, err))
		}
	}
	return cg
}

// Written is what the cgroup wrote to Devices[i] since the previous collection: the write counter's
// rise, or all of it when the counters started within the interval (or the device is new to it).
func (cg *Cgroup) Written(i int) uint64 {
	d := &cg.Devices[i]
	j := i // the kernel keeps a cgroup's devices in one order
	if j >= len(cg.Previous) || cg.Previous[j].Major != d.Major || cg.Previous[j].Minor != d.Minor {
		var idx deviceIndex
		if j = idx.find(cg.Previous, d.Major, d.Minor); j < 0 {
			return d.WriteBytes
		}
	}
	if p := cg.Previous[j].WriteBytes; p <= d.WriteBytes {
		return d.WriteBytes - p
	}
	return d.WriteBytes
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// pressureStart is the start of n's io.pressure totals read as p now. The totals count since the
// cgroup's creation, so they start with its I/O counters; but when a total went back since the previous
// reading (the cgroup was re-created between two readings while its I/O counters did not go back, or
// they are read only when the cgroup is among the busiest, collections apart) a new series begins at
// that reading.
func (c *Collector) pressureStart(n *node, p pressure.Pressure) time.Time {
	if n.hasPSI && (p.Some.TotalMicros < n.psi.Some.TotalMicros || (p.HasFull && n.psi.HasFull && p.Full.TotalMicros < n.psi.Full.TotalMicros)) {
		n.psiStart = n.psiAt
	}
	if n.start.After(n.psiStart) {
		n.psiStart = n.start // a re-created cgroup's stall counters restarted with its I/O counters
	}
	n.psi, n.hasPSI, n.psiAt = p, true, c.now
	return n.psiStart
}

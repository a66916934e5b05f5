package biolat

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// CgroupOptions configures OpenCgroups.
type CgroupOptions struct {
	// MaxCgroups sizes the preallocated per-cgroup table: 2 × MaxCgroups {cgroup, device, direction}
	// entries (a cgroup reading and writing one device takes 2). Per tracked cgroup that is 4.0 KiB of
	// map memory and 3.8 KiB of Go heap (Collect's read buffers), plus 1.9 MiB fixed (the owner
	// table, Other): BenchmarkCgroupProbeMemory. A completion beyond it is recorded in its device's
	// Other series and counted in TableFull. 0 means 1024.
	MaxCgroups int
	// MaxDevices sizes the Other table, as Options.MaxDevices. 0 means 64.
	MaxDevices int

	// ownerIsTask charges the cgroup of the task that starts a request instead of the bio's owner, as
	// PID- and current-based tools do: the tests' reference for where the two differ.
	ownerIsTask bool
}

const defaultMaxCgroups = 1024

// CgroupSeries is one {cgroup, device, direction}'s cumulative histogram of request latency (Kind
// Total: rq->start_time_ns to the accounting), the same buckets as Series. Histogram.Sum is also
// the cgroup's time in flight on the device: its share of the queue's occupancy is Sum divided by
// the Sum of every series of the device. Bytes is what the requests carried when their owner was
// read (see bpf/cglat.bpf.c on merges).
type CgroupSeries struct {
	// CgroupID is the cgroup's kernfs id (the inode number of its directory); 0 in Other.
	CgroupID uint64
	// Path is the cgroup's path in its hierarchy, "/" for the root; "" in Other.
	Path      string
	Dev       Dev
	Direction Direction
	Histogram Histogram
	Bytes     uint64
}

// CgroupCounts says where completions went that are in no cgroup's series. Unattributed (no bio, as a
// flush sequence's flush request; or no blkg), NoOwner (started before the probe attached, or evicted
// from the owner table) and TableFull are in Other; OthersFull and NoStartTime (iostats off) are in no
// series. NotRun is as in Drops. Freed counts the entries of removed cgroups moved into Other.
type CgroupCounts struct {
	NoStartTime  uint64
	Unattributed uint64
	NoOwner      uint64
	TableFull    uint64
	OthersFull   uint64
	NotRun       uint64
	Freed        uint64
}

// CgroupSnapshot is one scrape of the per-cgroup probe: the live cgroups' series, and per device and
// direction one Other series holding what no live cgroup owns, including every removed cgroup's
// counts (freed entries' final values, and entries to be freed at the next Collect). Both are cumulative since the probe attached and sorted by device, direction and
// cgroup.
type CgroupSnapshot struct {
	Cgroups []CgroupSeries
	Other   []CgroupSeries
	Counts  CgroupCounts
}

// The BPF maps' layouts (struct cg_key, cg_val in bpf/cglat.bpf.c); TestCgroupMapLayout checks them.
const (
	cgKeySize = 16
	cgValSize = (slotCount + 3) * 8
)

type rawCgKey [cgKeySize]byte

type rawCgVal [cgValSize]byte

// cgKey is a decoded struct cg_key.
type cgKey struct {
	cgid uint64
	dev  Dev
	dir  Direction
}

func decodeCgKey(b []byte) (cgKey, error) {
	if len(b) != cgKeySize || b[12] >= byte(numDirections) {
		return cgKey{}, errBadKey
	}
	return cgKey{cgid: binary.LittleEndian.Uint64(b), dev: devOf(binary.LittleEndian.Uint32(b[8:])), dir: Direction(b[12])}, nil
}

func encodeCgKey(k cgKey) rawCgKey {
	var b rawCgKey
	binary.LittleEndian.PutUint64(b[:], k.cgid)
	binary.LittleEndian.PutUint32(b[8:], kernelDev(k.dev))
	b[12] = byte(k.dir)
	return b
}

// addCgVal adds src's slots, zero count, sum and bytes to dst (both struct cg_val).
func addCgVal(dst *rawCgVal, src []byte) {
	for i := 0; i < cgValSize; i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(dst[i:])+binary.LittleEndian.Uint64(src[i:]))
	}
}

func cgSeries(k cgKey, path string, v []byte) CgroupSeries {
	return CgroupSeries{CgroupID: k.cgid, Path: path, Dev: k.dev, Direction: k.dir,
		Histogram: DecodeHist(v), Bytes: binary.LittleEndian.Uint64(v[8*(slotCount+2):])}
}

// cgEntry is one map entry as read.
type cgEntry struct {
	key cgKey
	val []byte // struct cg_val
}

// splitCgroups is Collect's pure part: the entries whose cgroup is live (in paths) as series, and
// the keys of the others, cgroups that are gone, whose entries Collect frees.
func splitCgroups(entries []cgEntry, paths map[uint64]string) (live []CgroupSeries, dead []cgKey) {
	for _, e := range entries {
		if path, ok := paths[e.key.cgid]; ok {
			live = append(live, cgSeries(e.key, path, e.val))
		} else {
			dead = append(dead, e.key)
		}
	}
	slices.SortFunc(live, seriesOrder)
	return live, dead
}

// retire adds a freed entry's final value to its device and direction's sum of freed entries.
func retire(retired map[cgKey]*rawCgVal, k cgKey, val []byte) {
	k = cgKey{dev: k.dev, dir: k.dir}
	if retired[k] == nil {
		retired[k] = new(rawCgVal)
	}
	addCgVal(retired[k], val)
}

// otherSeries is per device and direction the BPF Other table's entry plus the freed entries' sum.
func otherSeries(others []cgEntry, retired map[cgKey]*rawCgVal) []CgroupSeries {
	sums := make(map[cgKey]*rawCgVal, len(retired)+len(others))
	for k, v := range retired {
		c := *v
		sums[k] = &c
	}
	for _, e := range others {
		retire(sums, e.key, e.val)
	}
	out := make([]CgroupSeries, 0, len(sums))
	for k, v := range sums {
		out = append(out, cgSeries(k, "", v[:]))
	}
	slices.SortFunc(out, seriesOrder)
	return out
}

func seriesOrder(a, b CgroupSeries) int {
	return cmp.Or(cmp.Compare(a.Dev.Major, b.Dev.Major), cmp.Compare(a.Dev.Minor, b.Dev.Minor),
		cmp.Compare(a.Direction, b.Direction), cmp.Compare(a.CgroupID, b.CgroupID))
}

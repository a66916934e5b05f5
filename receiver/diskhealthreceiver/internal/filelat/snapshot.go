package filelat

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
)

// Op is the file operation a histogram measures: the system calls that do it on a regular file.
type Op uint8

// The operations, numbered as enum op in bpf/filelat.bpf.c (0 there means "not measured").
const (
	Read  Op = iota + 1 // read, pread64, readv, preadv, preadv2
	Write               // write, pwrite64, writev, pwritev, pwritev2
	Fsync               // fsync, fdatasync
	maxOp = Fsync
)

func (o Op) String() string {
	switch o {
	case Read:
		return "read"
	case Write:
		return "write"
	case Fsync:
		return "fsync"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Series is one mount's cumulative numbers for one operation, since the probe attached (or since
// Forget for that mount ID).
type Series struct {
	// MountID is the kernel's mount ID, /proc/self/mountinfo's first field.
	MountID uint32
	Op      Op
	// Histogram holds the calls' durations, entry to return, at biolat's scale and buckets.
	Histogram biolat.Histogram
	// Bytes is what the calls returned.
	Bytes uint64
	// Pages (reads) is Bytes in pages, rounded up per call; PagesAdded the pages the reads inserted
	// into their own file's page cache while they ran (readahead included).
	Pages, PagesAdded uint64
}

// CachePages splits a read series' pages into page-cache hits and misses: a page a read brought
// into the cache was a miss, every other page it returned a hit. Readahead makes a read bring in
// pages that a later read returns, so the split is exact over a whole pass, not per call; misses
// are capped at the pages read (a read of a few bytes that triggers readahead of many pages).
func (s Series) CachePages() (hits, misses uint64) {
	misses = min(s.PagesAdded, s.Pages)
	return s.Pages - misses, misses
}

// CgroupSeries is one cgroup's cumulative numbers for one operation on one mount (Options.PerCgroup):
// the calls its tasks made, charged at the call's entry.
type CgroupSeries struct {
	// CgroupID is the kernfs id of the calling task's cgroup in the io/blkio hierarchy (the inode number
	// of its directory there: cgroupio.IDs); 0 on a kernel without the io controller.
	CgroupID uint64
	Series
}

// Drops counts calls that are in no series: Full, a new {mount, operation} with the table full;
// CgroupsFull, a new {cgroup, mount, operation} with the per-cgroup table full (the mount's series
// has the call).
type Drops struct {
	Full        uint64
	CgroupsFull uint64
}

// Snapshot is every counter the probe holds, Series sorted by mount ID and operation, Cgroups by
// cgroup, mount ID and operation.
type Snapshot struct {
	Series  []Series
	Cgroups []CgroupSeries
	Drops   Drops
}

// The BPF map's key and value layouts (struct file_key, file_val in bpf/filelat.bpf.c),
// little-endian like the object; TestMapLayout checks them against the object's BTF.
const (
	keySize   = 8
	cgKeySize = 16
	valSize   = biolat.HistSize + 3*8
)

var errBadKey = errors.New("filelat: malformed map key")

// decodeSeries reads one entry of the files map.
func decodeSeries(k, v []byte) (Series, error) {
	if len(k) != keySize || k[4] == 0 || Op(k[4]) > maxOp || len(v) != valSize {
		return Series{}, errBadKey
	}
	u := func(off int) uint64 { return binary.LittleEndian.Uint64(v[off:]) }
	return Series{
		MountID:    binary.LittleEndian.Uint32(k),
		Op:         Op(k[4]),
		Histogram:  biolat.DecodeHist(v[:biolat.HistSize]),
		Bytes:      u(biolat.HistSize),
		Pages:      u(biolat.HistSize + 8),
		PagesAdded: u(biolat.HistSize + 16),
	}, nil
}

// cgroupKey is a decoded struct cg_file_key.
type cgroupKey struct {
	cgroupID uint64
	mountID  uint32
	op       Op
}

func decodeCgroupKey(k []byte) (cgroupKey, bool) {
	if len(k) != cgKeySize || k[12] == 0 || Op(k[12]) > maxOp {
		return cgroupKey{}, false
	}
	return cgroupKey{cgroupID: binary.LittleEndian.Uint64(k), mountID: binary.LittleEndian.Uint32(k[8:]), op: Op(k[12])}, true
}

// decodeCgroupSeries reads one entry of the cgfiles map.
func decodeCgroupSeries(k, v []byte) (CgroupSeries, error) {
	key, ok := decodeCgroupKey(k)
	if !ok {
		return CgroupSeries{}, errBadKey
	}
	fk := fileKey(key.mountID, key.op)
	s, err := decodeSeries(fk[:], v)
	return CgroupSeries{CgroupID: key.cgroupID, Series: s}, err
}

func sortCgroupSeries(s []CgroupSeries) {
	slices.SortFunc(s, func(a, b CgroupSeries) int {
		return cmp.Or(cmp.Compare(a.CgroupID, b.CgroupID), cmp.Compare(a.MountID, b.MountID), cmp.Compare(a.Op, b.Op))
	})
}

func fileKey(mountID uint32, op Op) [keySize]byte {
	var b [keySize]byte
	binary.LittleEndian.PutUint32(b[:], mountID)
	b[4] = byte(op)
	return b
}

func sortSeries(s []Series) {
	slices.SortFunc(s, func(a, b Series) int {
		return cmp.Or(cmp.Compare(a.MountID, b.MountID), cmp.Compare(a.Op, b.Op))
	})
}

// MountSeries is a Series with the mount it was measured on.
type MountSeries struct {
	Mount *fsusage.Mount
	Series
}

// Resolve joins series, sorted as Snapshot's, with this mount namespace's mounts
// (fsusage.ParseMountInfo of /proc/self/mountinfo) by mount ID. Gone lists the IDs with no mount: unmounted since (give them
// to Probe.Forget, so that an ID the kernel reuses starts from zero) or in another mount namespace.
func Resolve(series []Series, mounts []fsusage.Mount) (resolved []MountSeries, gone []uint32) {
	byID := make(map[uint32]*fsusage.Mount, len(mounts))
	for i := range mounts {
		byID[uint32(mounts[i].ID)] = &mounts[i]
	}
	for _, s := range series {
		m, ok := byID[s.MountID]
		if !ok {
			if len(gone) == 0 || gone[len(gone)-1] != s.MountID {
				gone = append(gone, s.MountID)
			}
			continue
		}
		resolved = append(resolved, MountSeries{Mount: m, Series: s})
	}
	return resolved, gone
}

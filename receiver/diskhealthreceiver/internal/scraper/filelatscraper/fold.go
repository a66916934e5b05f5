package filelatscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper"

import (
	"cmp"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/filelat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/topn"
)

// otherMount is the system.filesystem.mountpoint of the series that sums every mount not in the top N
// and every mount the host's mount table does not list. A real mount point starts with "/".
const otherMount = "other"

// value is one series' numbers: the calls' histogram and bytes, and the read pages split into
// page-cache hits and misses.
type value struct {
	hist         biolat.Histogram
	bytes        uint64
	hits, misses uint64
}

func (v value) add(o value) value {
	return value{v.hist.Add(o.hist), v.bytes + o.bytes, v.hits + o.hits, v.misses + o.misses}
}

func (v value) sub(o value) value {
	return value{v.hist.Sub(o.hist), v.bytes - o.bytes, v.hits - o.hits, v.misses - o.misses}
}

// seriesKey is one {mount ID, operation} of the probe.
type seriesKey struct {
	id uint32
	op filelat.Op
}

// state is what the folder remembers of a live probe series: its cumulative value (hits and misses
// summed per interval, see interval) and the probe's page counts at the last scrape, and while it is
// shown, the value it was shown from (base) and since when.
type state struct {
	last         value
	pages, added uint64
	mount        fsusage.MountKey
	shown        bool
	base         value
	since        pcommon.Timestamp
}

// point is one series to emit, cumulative since start; mount nil is "other".
type point struct {
	mount *fsusage.Mount
	op    filelat.Op
	start pcommon.Timestamp
	v     value
}

// folder turns the probe's cumulative per-mount series into at most topN mounts plus one "other"
// series per operation, every series monotonic and every call counted in exactly one of them:
//
//   - a mount shown is shown from the value it had when it entered the top N (its start is the scrape
//     that value was read at; its whole count when first seen, with the start of its probe series);
//   - a mount not shown, or not in the host's mount table (unmounted, shadowed by a mount at the same
//     path, or of another mount namespace), adds what it did in the interval to "other";
//   - a mount the table no longer lists is forgotten in the probe (returned by fold), so that the
//     kernel reusing its ID starts from zero; so is one whose ID now names another mount.
type folder struct {
	holders *topn.Holders[uint32]
	states  map[seriesKey]*state
	other   map[filelat.Op]value
	// started is the probe's attach, the start of other; prev the last scrape, the start of a series
	// shown or appeared from now.
	started, prev pcommon.Timestamp
}

func newFolder(topN int, started pcommon.Timestamp) *folder {
	return &folder{holders: topn.New[uint32](topN), states: map[seriesKey]*state{}, other: map[filelat.Op]value{},
		started: started, prev: started}
}

// interval is what a probe series did since st's last scrape: its calls and bytes, and its read pages
// split into hits and misses over the interval (filelat.Series.CachePages of the interval, so that the
// cumulative hits and misses never go back when readahead runs ahead of the reads).
func interval(x *filelat.Series, st *state) value {
	d := filelat.Series{Pages: x.Pages - st.pages, PagesAdded: x.PagesAdded - st.added}
	hits, misses := d.CachePages()
	return value{hist: x.Histogram.Sub(st.last.hist), bytes: x.Bytes - st.last.bytes, hits: hits, misses: misses}
}

// fold is one scrape at ts of snapshot series against the host's mounts. It returns the points sorted
// by mount point and operation, "other" last, and the mount IDs to forget in the probe.
func (f *folder) fold(series []filelat.Series, mounts []fsusage.Mount, ts pcommon.Timestamp) (out []point, forget []uint32) {
	resolved, gone := filelat.Resolve(series, mounts)
	byKey := make(map[seriesKey]*filelat.MountSeries, len(resolved))
	ops := map[uint32]uint64{}
	mountOf := map[uint32]*fsusage.Mount{}
	for i := range resolved {
		x := &resolved[i]
		k := seriesKey{x.MountID, x.Op}
		st := f.states[k]
		if st != nil && st.mount != x.Mount.Key() {
			// Another mount under the same ID since the last scrape: what the probe holds is partly the
			// old one's. Its interval goes to other, and the ID starts again from zero.
			gone = append(gone, x.MountID)
			continue
		}
		byKey[k] = x
		ops[x.MountID] += x.Histogram.Count - lastCountIn(f.states, k)
		mountOf[x.MountID] = x.Mount
	}
	slices.Sort(gone)
	gone = slices.Compact(gone)
	// Calls of gone mounts in the interval count in other; their state is dropped.
	for i := range series {
		x := &series[i]
		if _, found := slices.BinarySearch(gone, x.MountID); !found {
			continue
		}
		k := seriesKey{x.MountID, x.Op}
		f.other[x.Op] = f.other[x.Op].add(interval(x, f.stateOf(k, nil)))
		delete(f.states, k)
	}
	for k := range f.states {
		if _, live := byKey[k]; !live {
			delete(f.states, k) // forgotten at an earlier scrape, or gone from the probe
		}
	}
	for id := range ops {
		if _, found := slices.BinarySearch(gone, id); found {
			delete(ops, id)
		}
	}
	f.holders.Update(ops, func(a, b uint32) int {
		return cmp.Or(cmp.Compare(mountOf[a].MountPoint, mountOf[b].MountPoint), cmp.Compare(a, b))
	})
	for k, x := range byKey {
		if _, found := slices.BinarySearch(gone, k.id); found {
			continue
		}
		st := f.stateOf(k, x.Mount)
		delta := interval(&x.Series, st)
		cur := st.last.add(delta)
		if f.holders.Held(k.id) {
			v := st.show(cur, f.prev)
			out = append(out, point{mount: x.Mount, op: k.op, start: st.since, v: v})
		} else {
			st.shown = false
			f.other[k.op] = f.other[k.op].add(delta)
		}
		st.last, st.pages, st.added = cur, x.Pages, x.PagesAdded
	}
	slices.SortFunc(out, func(a, b point) int {
		return cmp.Or(cmp.Compare(a.mount.MountPoint, b.mount.MountPoint), cmp.Compare(a.mount.ID, b.mount.ID), cmp.Compare(a.op, b.op))
	})
	for op := filelat.Read; op <= filelat.Fsync; op++ {
		if v, ok := f.other[op]; ok {
			out = append(out, point{op: op, start: f.started, v: v})
		}
	}
	f.prev = ts
	return out, gone
}

// show is a shown series' value, cur, since it was shown: a series not shown until now is shown
// from its last value, starting at the last scrape (prev), or from its own start if it had counted
// nothing yet (all of it came after that start).
func (st *state) show(cur value, prev pcommon.Timestamp) value {
	if !st.shown {
		st.shown, st.base = true, st.last
		if st.last.hist.Count > 0 {
			st.since = prev
		}
	}
	return cur.sub(st.base)
}

// lastCountIn is series k's call count at the last scrape, 0 for a new one.
func lastCountIn[K comparable](states map[K]*state, k K) uint64 {
	if st := states[k]; st != nil {
		return st.last.hist.Count
	}
	return 0
}

// stateIn returns series k's state, new if the series is: it appeared in the probe since the last
// scrape (prev), so its counts all came after it (the start of a series first seen).
func stateIn[K comparable](states map[K]*state, k K, prev pcommon.Timestamp) *state {
	st := states[k]
	if st == nil {
		st = &state{since: prev}
		states[k] = st
	}
	return st
}

// stateOf is stateIn for a mount's series; m is its mount (nil: not resolved), kept when the series is
// new.
func (f *folder) stateOf(k seriesKey, m *fsusage.Mount) *state {
	_, had := f.states[k]
	st := stateIn(f.states, k, f.prev)
	if !had && m != nil {
		st.mount = m.Key()
	}
	return st
}

package filelatscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper"

import (
	"cmp"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/filelat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/topn"
)

// otherCgroup is the cgroup.path of the series that sums every cgroup not in the top N and every
// removed cgroup, as the latency source's per-cgroup "other". A real path starts with "/".
const otherCgroup = "other"

// cgKey is one {cgroup, mount ID, operation} of the probe.
type cgKey struct {
	cg uint64
	seriesKey
}

// cgOp is one cgroup's operation over the mounts without series of their own.
type cgOp struct {
	cg uint64
	op filelat.Op
}

// rest is a cumulative sum of intervals and since when.
type rest struct {
	v     value
	start pcommon.Timestamp
}

// cgPoint is one per-cgroup series to emit: path otherCgroup is every other cgroup, mount nil the
// cgroup's mounts without series of their own.
type cgPoint struct {
	path string
	point
}

// cgFolder turns the probe's cumulative per-{cgroup, mount, operation} series into at most topN
// cgroups (the most active by reads: topn.Holders, as the mounts' and the latency source's cgroups),
// every series monotonic and every call counted in exactly one of them, as folder does for mounts:
//
//   - a cgroup shown, on a mount shown (folder's top N), has that series from the value it had when
//     both were first shown (its start is the scrape that value was read at);
//   - a cgroup shown adds what it did in the interval on every other mount (not in the top N, not in
//     the host's table, gone) to its mount "other" series, which starts when the cgroup is shown and
//     ends when it is not;
//   - a cgroup not shown, or removed (no longer in the hierarchy: returned by fold, for
//     Probe.ForgetCgroups), adds its interval to cgroup "other", one series per operation since the
//     probe attached.
//
// Its state is one entry per probe series (bounded by per_cgroup.max_series), topN × 3 rests and 3
// others; a series' state is freed at the fold its cgroup is removed or its mount gone, when the
// probe forgets it, so a series the probe starts again counts from zero.
type cgFolder struct {
	holders *topn.Holders[uint64]
	states  map[cgKey]*state
	rests   map[cgOp]*rest
	other   map[filelat.Op]value
	// started is the probe's attach, the start of other; prev the last scrape.
	started, prev pcommon.Timestamp
}

func newCgFolder(topN int, started pcommon.Timestamp) *cgFolder {
	return &cgFolder{holders: topn.New[uint64](topN), states: map[cgKey]*state{}, rests: map[cgOp]*rest{},
		other: map[filelat.Op]value{}, started: started, prev: started}
}

// fold is one scrape at ts of the snapshot's per-cgroup series. ids is the hierarchy's cgroups
// (cgroupio.IDs, read after the probe), shown the mounts folder showed at this scrape by mount ID, and
// gone (sorted) the mount IDs folder returned: the probe forgets their series in every cgroup. It
// returns the points sorted by cgroup path, mount point and operation, "other" last, and the removed
// cgroups to forget in the probe.
func (f *cgFolder) fold(series []filelat.CgroupSeries, ids map[uint64]string, shown map[uint32]*fsusage.Mount,
	gone []uint32, ts pcommon.Timestamp) (out []cgPoint, removed []uint64) {
	reads := map[uint64]uint64{}
	paths := map[uint64]string{}
	live := make(map[cgKey]*filelat.CgroupSeries, len(series))
	for i := range series {
		x := &series[i]
		path, ok := ids[x.CgroupID]
		if !ok {
			if len(removed) == 0 || removed[len(removed)-1] != x.CgroupID {
				removed = append(removed, x.CgroupID) // series are sorted by cgroup
			}
			continue
		}
		k := cgKey{x.CgroupID, seriesKey{x.MountID, x.Op}}
		live[k] = x
		paths[x.CgroupID] = path
		n := uint64(0) // listed even so: a live cgroup without reads keeps its slot while idle
		if x.Op == filelat.Read {
			n = x.Histogram.Count - lastCountIn(f.states, k)
		}
		reads[x.CgroupID] += n
	}
	for i := range series {
		x := &series[i]
		if _, found := slices.BinarySearch(removed, x.CgroupID); found {
			k := cgKey{x.CgroupID, seriesKey{x.MountID, x.Op}}
			f.other[x.Op] = f.other[x.Op].add(interval(&x.Series, stateIn(f.states, k, f.prev)))
			delete(f.states, k)
		}
	}
	for k := range f.states {
		if _, ok := live[k]; !ok {
			delete(f.states, k) // gone from the probe
		}
	}
	f.holders.Update(reads, func(a, b uint64) int { return cmp.Or(cmp.Compare(paths[a], paths[b]), cmp.Compare(a, b)) })
	for k := range f.rests {
		if !f.holders.Held(k.cg) {
			delete(f.rests, k) // its series ends; shown again, it starts anew
		}
	}
	for k, x := range live {
		st := stateIn(f.states, k, f.prev)
		delta := interval(&x.Series, st)
		cur := st.last.add(delta)
		held := f.holders.Held(k.cg)
		_, isGone := slices.BinarySearch(gone, k.id)
		m := shown[k.id]
		switch {
		case held && m != nil && !isGone:
			v := st.show(cur, f.prev)
			out = append(out, cgPoint{path: paths[k.cg], point: point{mount: m, op: k.op, start: st.since, v: v}})
		case held:
			st.shown = false
			r := f.rests[cgOp{k.cg, k.op}]
			if r == nil {
				r = &rest{start: f.prev}
				f.rests[cgOp{k.cg, k.op}] = r
			}
			r.v = r.v.add(delta)
		default:
			st.shown = false
			f.other[k.op] = f.other[k.op].add(delta)
		}
		st.last, st.pages, st.added = cur, x.Pages, x.PagesAdded
		if isGone {
			delete(f.states, k) // the probe forgets it after this fold
		}
	}
	for k, r := range f.rests {
		out = append(out, cgPoint{path: paths[k.cg], point: point{op: k.op, start: r.start, v: r.v}})
	}
	for i := range out {
		out[i].path = sanitize.String(sanitize.CgroupPath, out[i].path)
	}
	slices.SortFunc(out, func(a, b cgPoint) int {
		return cmp.Or(cmp.Compare(a.path, b.path), compareMounts(a.mount, b.mount), cmp.Compare(a.op, b.op))
	})
	for op := filelat.Read; op <= filelat.Fsync; op++ {
		if v, ok := f.other[op]; ok {
			out = append(out, cgPoint{path: otherCgroup, point: point{op: op, start: f.started, v: v}})
		}
	}
	f.prev = ts
	return out, removed
}

// forgetMounts drops the state of the gone mounts' series at a scrape that could not fold (the
// hierarchy could not be read): the probe forgets them all the same, and what they did since the last
// scrape is in no per-cgroup series (their mounts' series have it).
func (f *cgFolder) forgetMounts(gone []uint32) {
	for k := range f.states {
		if _, found := slices.BinarySearch(gone, k.id); found {
			delete(f.states, k)
		}
	}
}

// compareMounts orders mounts by mount point and ID, nil ("other") last.
func compareMounts(a, b *fsusage.Mount) int {
	switch {
	case a == b:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return cmp.Or(cmp.Compare(a.MountPoint, b.MountPoint), cmp.Compare(a.ID, b.ID))
}

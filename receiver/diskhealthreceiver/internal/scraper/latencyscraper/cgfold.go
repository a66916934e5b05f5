package latencyscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper"

import (
	"cmp"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/topn"
)

// otherPath is the cgroup.path of a device's series that sums every cgroup not in its top N, the
// requests without an owner and the removed cgroups. A real path starts with "/".
const otherPath = "other"

// cgPoint is one per-cgroup series to emit: cumulative since start.
type cgPoint struct {
	path      string // otherPath for the device's rest
	dev       biolat.Dev
	direction biolat.Direction
	start     pcommon.Timestamp
	hist      biolat.Histogram
	bytes     uint64
	// busy is the requests' time in flight in the last interval (seconds), for the occupancy share.
	busy float64
}

// cgKey is one {cgroup, device, direction} of the probe.
type cgKey struct {
	id  uint64
	dev biolat.Dev
	dir biolat.Direction
}

// cgState is what the folder remembers of a live series: its last cumulative value, and while it is
// shown, the value it was shown from (base) and since when.
type cgState struct {
	last      biolat.Histogram
	lastBytes uint64
	shown     bool
	base      biolat.Histogram
	baseBytes uint64
	since     pcommon.Timestamp
}

// devDir is one device and direction.
type devDir struct {
	dev biolat.Dev
	dir biolat.Direction
}

// rest is a sum of histograms and bytes.
type rest struct {
	hist  biolat.Histogram
	bytes uint64
}

// folder turns the probe's cumulative per-cgroup series into at most topN cgroups per device (the
// holders, see topn.Decay) plus one "other" series per device and direction, every series
// monotonic and every request counted in exactly one of them:
//
//   - a cgroup shown is shown from the value it had when it entered the top N (its start is the
//     scrape that value was read at; its whole count when first seen, with the probe's start), every
//     scrape while it holds its slot, idle or not;
//   - a cgroup not shown adds what it did in the interval to its device's other series; evicted, its
//     series ends, and if it enters again it is shown from then, with a new start;
//   - a removed cgroup's counts arrive in the probe's Other (all of them): what this folder had
//     already counted of it elsewhere (its last value) is taken off, so only the rest is new.
//
// Its state is per live {cgroup, device, direction} and {cgroup, device}, bounded by the probe's
// table (max_cgroups), and freed at the first fold that no longer sees the cgroup.
type folder struct {
	topN   int
	states map[cgKey]*cgState
	// holders, per device, decide which cgroups are shown (topn: by decayed requests per interval).
	holders map[biolat.Dev]*topn.Holders[uint64]
	// acc is what cgroups not shown added, deadSeen the last values of removed cgroups.
	acc, deadSeen map[devDir]*rest
	// otherSum is each other series' last sum, for its time in flight in the interval.
	otherSum map[devDir]float64
	prev     pcommon.Timestamp // the last scrape, the start of a series shown from now
	// window is, after a fold, what every live cgroup did on each kept device in the interval (all
	// directions), top N or not, and what the device did in all: the noisy-neighbour verdict's input.
	window  []cgWindow
	devBusy map[biolat.Dev]float64
}

// cgDevKey is one cgroup on one device.
type cgDevKey struct {
	id  uint64
	dev biolat.Dev
}

// cgWindow is one live cgroup's interval on one device, over every direction.
type cgWindow struct {
	path string
	dev  biolat.Dev
	hist biolat.Histogram // the requests completed in the interval
}

func newFolder(topN int, started pcommon.Timestamp) *folder {
	return &folder{topN: topN, states: map[cgKey]*cgState{},
		holders: map[biolat.Dev]*topn.Holders[uint64]{}, acc: map[devDir]*rest{}, deadSeen: map[devDir]*rest{},
		otherSum: map[devDir]float64{}, prev: started}
}

// fold is one scrape at ts: the series to emit, sorted by device, path and direction. keep says which
// devices are reported.
func (f *folder) fold(s *biolat.CgroupSnapshot, keep func(biolat.Dev) bool, started, ts pcommon.Timestamp) []cgPoint {
	deltaOps := map[cgDevKey]uint64{}
	paths := map[cgDevKey]string{}
	live := make(map[cgKey]bool, len(s.Cgroups))
	byKey := make(map[cgKey]*biolat.CgroupSeries, len(s.Cgroups))
	for i := range s.Cgroups {
		x := &s.Cgroups[i]
		if !keep(x.Dev) {
			continue
		}
		k := cgKey{id: x.CgroupID, dev: x.Dev, dir: x.Direction}
		live[k], byKey[k] = true, x
		st := f.states[k]
		if st == nil {
			st = &cgState{since: started}
			f.states[k] = st
		}
		c := cgDevKey{x.CgroupID, x.Dev}
		deltaOps[c] += x.Histogram.Count - st.last.Count
		paths[c] = x.Path
	}
	// Removed cgroups: their last values come back through the probe's Other. A device no longer
	// reported (gone, or filtered out) is forgotten whole.
	for k, st := range f.states {
		if live[k] {
			continue
		}
		if keep(k.dev) {
			addRest(f.deadSeen, devDir{k.dev, k.dir}, st.last, st.lastBytes, 1)
		}
		delete(f.states, k)
	}
	for _, m := range []map[devDir]*rest{f.acc, f.deadSeen} {
		for k := range m {
			if !keep(k.dev) {
				delete(m, k)
			}
		}
	}
	f.hold(deltaOps, paths)
	var out []cgPoint
	windows := map[cgDevKey]*cgWindow{}
	for k, x := range byKey {
		st := f.states[k]
		dSum := x.Histogram.Sum - st.last.Sum
		delta := x.Histogram.Sub(st.last)
		w := windows[cgDevKey{k.id, k.dev}]
		if w == nil {
			w = &cgWindow{path: x.Path, dev: k.dev}
			windows[cgDevKey{k.id, k.dev}] = w
		}
		w.hist = w.hist.Add(delta)
		if f.holders[k.dev].Held(k.id) {
			if !st.shown {
				st.shown, st.base, st.baseBytes = true, st.last, st.lastBytes
				if st.last.Count > 0 {
					st.since = f.prev
				}
			}
			out = append(out, cgPoint{path: x.Path, dev: k.dev, direction: k.dir, start: st.since,
				hist: x.Histogram.Sub(st.base), bytes: x.Bytes - st.baseBytes, busy: dSum})
		} else {
			st.shown = false
			addRest(f.acc, devDir{k.dev, k.dir}, delta, x.Bytes-st.lastBytes, 1)
		}
		st.last, st.lastBytes = x.Histogram, x.Bytes
	}
	// other = the probe's Other + what unshown cgroups added − what removed cgroups had shown before.
	others := map[devDir]*rest{}
	for i := range s.Other {
		x := &s.Other[i]
		if keep(x.Dev) {
			addRest(others, devDir{x.Dev, x.Direction}, x.Histogram, x.Bytes, 1)
		}
	}
	for k, r := range f.acc {
		addRest(others, k, r.hist, r.bytes, 1)
	}
	for k, r := range f.deadSeen {
		addRest(others, k, r.hist, r.bytes, -1)
	}
	for k := range f.otherSum {
		if !keep(k.dev) {
			delete(f.otherSum, k)
		}
	}
	for k, r := range others {
		if !keep(k.dev) {
			continue
		}
		out = append(out, cgPoint{path: otherPath, dev: k.dev, direction: k.dir, start: started, hist: r.hist, bytes: r.bytes,
			busy: max(0, r.hist.Sum-f.otherSum[k])})
		f.otherSum[k] = r.hist.Sum
	}
	f.prev = ts
	f.window = f.window[:0]
	for _, w := range windows {
		f.window = append(f.window, *w)
	}
	slices.SortFunc(f.window, func(a, b cgWindow) int {
		return cmp.Or(cmp.Compare(a.dev.Major, b.dev.Major), cmp.Compare(a.dev.Minor, b.dev.Minor), cmp.Compare(a.path, b.path))
	})
	f.devBusy = map[biolat.Dev]float64{}
	for i := range out {
		f.devBusy[out[i].dev] += out[i].busy
	}
	slices.SortFunc(out, func(a, b cgPoint) int {
		return cmp.Or(cmp.Compare(a.dev.Major, b.dev.Major), cmp.Compare(a.dev.Minor, b.dev.Minor),
			cmp.Compare(a.path, b.path), cmp.Compare(a.direction, b.direction))
	})
	return out
}

// hold updates who holds each device's top N from every live {cgroup, device}'s requests in the
// interval (deltaOps; see topn.Holders.Update, ties by path); a device without live cgroups (gone,
// or filtered out) lets go of its holders.
func (f *folder) hold(deltaOps map[cgDevKey]uint64, paths map[cgDevKey]string) {
	perDev := map[biolat.Dev]map[uint64]uint64{}
	for c, n := range deltaOps {
		if perDev[c.dev] == nil {
			perDev[c.dev] = map[uint64]uint64{}
		}
		perDev[c.dev][c.id] = n
	}
	for dev := range f.holders {
		if _, ok := perDev[dev]; !ok {
			delete(f.holders, dev)
		}
	}
	for dev, ops := range perDev {
		h := f.holders[dev]
		if h == nil {
			h = topn.New[uint64](f.topN)
			f.holders[dev] = h
		}
		h.Update(ops, func(a, b uint64) int { return cmp.Compare(paths[cgDevKey{a, dev}], paths[cgDevKey{b, dev}]) })
	}
}

// addRest adds sign × (h, bytes) to m[k].
func addRest(m map[devDir]*rest, k devDir, h biolat.Histogram, bytes uint64, sign int) {
	r := m[k]
	if r == nil {
		r = &rest{}
		m[k] = r
	}
	if sign < 0 {
		r.hist, r.bytes = r.hist.Sub(h), r.bytes-bytes
		return
	}
	r.hist, r.bytes = r.hist.Add(h), r.bytes+bytes
}

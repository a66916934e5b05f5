// Package topn decides which keys hold the N series slots of a bounded report (the top N cgroups of a
// device, the top N mounts), with hysteresis so that series do not flap. It is a library: values in,
// decisions out.
package topn // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/topn"

import "slices"

// Who holds a slot. A key's activity is its operations per interval, weighted down by Decay per
// update since; a key not holding a slot takes the one of the holder with the least activity only when
// its own is more than EvictFactor times that. So a holder keeps its series through idle intervals (its
// cumulative values stand still, its start stays) until a busier key needs the slot: one as busy as it
// was waits out about 8 idle intervals, one ten times as busy gets the slot at once, and two keys busy
// in turn do not trade the slot every interval.
const (
	Decay       = 0.75
	EvictFactor = 2
)

// Holders is the slot holders of one report. Its state is per live key, freed at the first update
// that no longer lists the key.
type Holders[K comparable] struct {
	n        int
	activity map[K]float64
	held     map[K]bool
}

// New returns Holders with n slots.
func New[K comparable](n int) *Holders[K] {
	return &Holders[K]{n: n, activity: map[K]float64{}, held: map[K]bool{}}
}

// Update takes every live key's operations in the interval (a key not listed is gone and lets go of
// its slot), then the keys with operations, the most active first (ties by tie), take a free slot or
// evict the least active holder if more than EvictFactor times as active.
func (h *Holders[K]) Update(ops map[K]uint64, tie func(a, b K) int) {
	for k := range h.activity {
		if _, ok := ops[k]; !ok {
			delete(h.activity, k)
			delete(h.held, k)
		}
	}
	var candidates []K
	for k, n := range ops {
		h.activity[k] = h.activity[k]*Decay + float64(n)
		if n > 0 && !h.held[k] {
			candidates = append(candidates, k)
		}
	}
	order := func(a, b K) int {
		if x, y := h.activity[a], h.activity[b]; x != y {
			if x > y {
				return -1
			}
			return 1
		}
		return tie(a, b)
	}
	slices.SortFunc(candidates, order)
	for _, k := range candidates {
		if len(h.held) < h.n {
			h.held[k] = true
			continue
		}
		// The least active holder (the last in order); the candidates come most active first, so
		// once one cannot evict it none after can.
		var least K
		first := true
		for x := range h.held {
			if first || order(x, least) > 0 {
				least, first = x, false
			}
		}
		if h.activity[k] <= EvictFactor*h.activity[least] {
			break
		}
		delete(h.held, least)
		h.held[k] = true
	}
}

// Held reports whether k holds a slot.
func (h *Holders[K]) Held(k K) bool { return h.held[k] }

// Len is the number of slots held.
func (h *Holders[K]) Len() int { return len(h.held) }

// Live is the number of keys tracked: those of the last update.
func (h *Holders[K]) Live() int { return len(h.activity) }

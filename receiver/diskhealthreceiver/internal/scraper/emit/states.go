package emit

import "slices"

// States emits a state metric the semantic conventions do not prescribe as a state set: each series key
// (a part, a disk, a mount) gets a point of 1 for each of its current states, and, at the scrape where
// a state is left, a point of 0 for it, once. The backend's last value of the state left is then 0, so
// an alert on `{state!="ok"} == 1` resolves at the change instead of when the series goes stale, and at
// steady state a key costs a point per current state instead of one per state it could take (hw.status,
// which the conventions make a full state set, is not emitted through it).
//
// A key not emitted in a scrape (its device gone, its read skipped) is forgotten at EndScrape, so what
// it remembers is bounded by the keys its source already bounds; one emitted again later starts afresh.
// Not safe for concurrent use: a scraper's scrapes do not overlap.
type States[K comparable, S comparable] struct {
	keys map[K]*stateKey[S]
}

type stateKey[S comparable] struct {
	last []S // the states last emitted at 1 (or kept quiet by EmitOnChange)
	seen bool
}

// NewStates returns a tracker that remembers no key.
func NewStates[K comparable, S comparable]() *States[K, S] {
	return &States[K, S]{keys: map[K]*stateKey[S]{}}
}

// Emit calls record(s, 1) for each state of current, then record(s, 0) for each state key had at its
// previous scrape and has no longer. current may hold several states (a set of flags), or none.
func (t *States[K, S]) Emit(key K, record func(state S, value int64), current ...S) {
	t.emit(key, false, record, current)
}

// EmitOnChange is Emit for a diagnostic that says a host has none of something (no md driver, no
// device-mapper, a disk without SMART): it emits at the key's first scrape and at the scrapes where
// its states change, and nothing while they stay, since the same answer every scrape says nothing new.
// Emit and EmitOnChange may alternate on one key: a key quiet since its first scrape that changes
// emits its new state at 1 and the old one at 0.
func (t *States[K, S]) EmitOnChange(key K, record func(state S, value int64), current ...S) {
	t.emit(key, true, record, current)
}

func (t *States[K, S]) emit(key K, onChange bool, record func(S, int64), current []S) {
	k, known := t.keys[key]
	if !known {
		k = &stateKey[S]{}
		t.keys[key] = k
	}
	k.seen = true
	if onChange && known && sameSet(k.last, current) {
		return
	}
	for _, s := range current {
		record(s, 1)
	}
	for _, s := range k.last {
		if !slices.Contains(current, s) {
			record(s, 0)
		}
	}
	k.last = append(k.last[:0], current...)
}

// EndScrape ends a scrape: the keys not emitted in it are forgotten.
func (t *States[K, S]) EndScrape() {
	for key, k := range t.keys {
		if !k.seen {
			delete(t.keys, key)
		}
		k.seen = false
	}
}

// sameSet reports whether a and b hold the same states, in any order (both are a handful at most).
func sameSet[S comparable](a, b []S) bool {
	if len(a) != len(b) {
		return false
	}
	for _, s := range b {
		if !slices.Contains(a, s) {
			return false
		}
	}
	return true
}

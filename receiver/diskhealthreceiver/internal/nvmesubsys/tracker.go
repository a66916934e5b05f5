package nvmesubsys

import (
	"slices"
	"strings"
)

// Tracker remembers, per subsystem, each namespace's most live paths since it was first seen (its best)
// and the path combinations the subsystem has had, so that a namespace that lost three of four paths is
// told from one that always had one, and a count that fell to zero is reported as zero rather than
// dropped. A subsystem that disappears, or comes back under its name with another NQN, starts over.
type Tracker struct {
	subsystems map[string]*tracked // by subsystem name
}

type tracked struct {
	nqn        string
	keys       map[PathKey]bool
	namespaces map[string]*tracking
}

type tracking struct {
	best int
	live map[string]PathInfo // the paths live at the last observation, by path name
}

// PathInfo names a path for a person: its controller, transport and address, and the state it was last
// seen in.
type PathInfo struct {
	Path, Controller string
	Transport        Transport
	Address          string
	State            State
	ANA              ANAState
	Removed          bool // the path is gone from sysfs (its controller deleted)
}

func (p PathInfo) String() string {
	var b strings.Builder
	b.WriteString(p.Controller + " (" + p.Transport.String())
	if p.Address != "" {
		b.WriteString(" " + p.Address)
	}
	b.WriteString(")")
	switch {
	case p.Removed:
		b.WriteString(" removed")
	case p.State != StateLive:
		b.WriteString(" " + p.State.String())
	case p.ANA != ANANone && p.ANA != ANAOptimized: // the state a path is expected in goes unsaid
		b.WriteString(" ana " + p.ANA.String())
	}
	return b.String()
}

// ChangeKind says which way a namespace's live paths moved.
type ChangeKind uint8

// The changes Observe reports.
const (
	// Dropped: the namespace's live paths fell, and are below its best.
	Dropped ChangeKind = iota + 1
	// Recovered: the namespace's live paths are back at its best after being below it.
	Recovered
)

// Change is one namespace's drop or recovery.
type Change struct {
	Kind       ChangeKind
	Namespace  string
	Live, Best int
	// Paths are the paths lost since the previous observation (Dropped) or back since it (Recovered).
	Paths []PathInfo
}

// NamespaceStatus is one namespace's paths with its best.
type NamespaceStatus struct {
	NamespacePaths
	Best int
}

// Observation is what one subsystem's read adds up to.
type Observation struct {
	// Counts holds every path combination the subsystem has had since it was first seen, 0 for those it
	// has no longer.
	Counts     map[PathKey]int
	Namespaces []NamespaceStatus
	Changes    []Change
}

// NewTracker returns a Tracker that has seen nothing.
func NewTracker() *Tracker { return &Tracker{subsystems: map[string]*tracked{}} }

// Observe takes one read of s and returns its counts, its namespaces with their best, and every drop
// and recovery since the previous read. A namespace seen for the first time sets its best and changes
// nothing.
func (t *Tracker) Observe(s *Subsystem) Observation {
	ts := t.subsystems[s.Name]
	if ts == nil || ts.nqn != s.NQN {
		ts = &tracked{nqn: s.NQN, keys: map[PathKey]bool{}, namespaces: map[string]*tracking{}}
		t.subsystems[s.Name] = ts
	}
	o := Observation{Counts: Count(s)}
	for k := range o.Counts {
		ts.keys[k] = true
	}
	for k := range ts.keys {
		o.Counts[k] += 0
	}
	seen := map[string]bool{}
	for i, n := range Namespaces(s) {
		seen[n.Name] = true
		live := livePaths(s, &s.Namespaces[i])
		tn := ts.namespaces[n.Name]
		if tn == nil {
			tn = &tracking{best: n.Live, live: live}
			ts.namespaces[n.Name] = tn
		}
		prev := len(tn.live)
		switch {
		case n.Live < prev && n.Live < tn.best:
			o.Changes = append(o.Changes, Change{Kind: Dropped, Namespace: n.Name, Live: n.Live, Best: tn.best, Paths: lost(s, &s.Namespaces[i], tn.live, live)})
		case prev < tn.best && n.Live >= tn.best:
			o.Changes = append(o.Changes, Change{Kind: Recovered, Namespace: n.Name, Live: n.Live, Best: tn.best, Paths: sorted(added(tn.live, live))})
		}
		tn.best = max(tn.best, n.Live)
		tn.live = live
		o.Namespaces = append(o.Namespaces, NamespaceStatus{NamespacePaths: n, Best: tn.best})
	}
	for name := range ts.namespaces {
		if !seen[name] {
			delete(ts.namespaces, name)
		}
	}
	return o
}

// Keep forgets every subsystem whose name is not in names: it disappeared.
func (t *Tracker) Keep(names map[string]bool) {
	for n := range t.subsystems {
		if !names[n] {
			delete(t.subsystems, n)
		}
	}
}

func info(s *Subsystem, p Path) PathInfo {
	c := &s.Controllers[p.Controller]
	return PathInfo{Path: p.Name, Controller: c.Name, Transport: c.Transport, Address: c.Address, State: c.State, ANA: p.ANA}
}

func livePaths(s *Subsystem, ns *Namespace) map[string]PathInfo {
	out := map[string]PathInfo{}
	for _, p := range ns.Paths {
		if s.Live(p) {
			out[p.Name] = info(s, p)
		}
	}
	return out
}

// lost names the paths live before and not now: in the state they are in now, or removed.
func lost(s *Subsystem, ns *Namespace, before, now map[string]PathInfo) []PathInfo {
	current := map[string]PathInfo{}
	for _, p := range ns.Paths {
		current[p.Name] = info(s, p)
	}
	var out []PathInfo
	for name, was := range before {
		if _, ok := now[name]; ok {
			continue
		}
		if cur, ok := current[name]; ok {
			out = append(out, cur)
		} else {
			was.Removed = true
			out = append(out, was)
		}
	}
	return sorted(out)
}

func added(before, now map[string]PathInfo) []PathInfo {
	var out []PathInfo
	for name, p := range now {
		if _, ok := before[name]; !ok {
			out = append(out, p)
		}
	}
	return out
}

func sorted(ps []PathInfo) []PathInfo {
	slices.SortFunc(ps, func(a, b PathInfo) int { return byNumber(a.Controller, b.Controller) })
	return ps
}

package nvmesubsys

// A path serves I/O when its controller is live and its ANA state, where it has one, lets it
// (nvme_path_is_disabled, nvme_path_is_optimized): an inaccessible, persistent-loss or changing group
// is skipped by the kernel's path selector even on a live controller.

// Live reports whether p serves I/O.
func (s *Subsystem) Live(p Path) bool {
	return s.Controllers[p.Controller].State == StateLive && (p.ANA == ANANone || p.ANA == ANAOptimized || p.ANA == ANANonOptimized)
}

// Optimized reports whether p serves I/O on the optimized path: without ANA every live path is (the
// kernel marks it so).
func (s *Subsystem) Optimized(p Path) bool {
	return s.Live(p) && (p.ANA == ANANone || p.ANA == ANAOptimized)
}

// PathKey is what the subsystem's path count is broken down by.
type PathKey struct {
	State     State
	ANA       ANAState
	Transport Transport
}

// Count returns the subsystem's paths (one per namespace and controller) by controller state, ANA state
// and transport; combinations without a path are absent.
func Count(s *Subsystem) map[PathKey]int {
	out := map[PathKey]int{}
	for _, ns := range s.Namespaces {
		for _, p := range ns.Paths {
			c := &s.Controllers[p.Controller]
			out[PathKey{c.State, p.ANA, c.Transport}]++
		}
	}
	return out
}

// NamespacePaths is one namespace's path count: every path, those that serve I/O, those that serve it
// optimized.
type NamespacePaths struct {
	Name                   string
	Total, Live, Optimized int
}

// Namespaces counts each namespace's paths, in the subsystem's order.
func Namespaces(s *Subsystem) []NamespacePaths {
	out := make([]NamespacePaths, len(s.Namespaces))
	for i, ns := range s.Namespaces {
		n := NamespacePaths{Name: ns.Name, Total: len(ns.Paths)}
		for _, p := range ns.Paths {
			if s.Live(p) {
				n.Live++
			}
			if s.Optimized(p) {
				n.Optimized++
			}
		}
		out[i] = n
	}
	return out
}

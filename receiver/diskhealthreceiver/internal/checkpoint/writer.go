package checkpoint

import "time"

// Write is what one cgroup wrote to one whole disk in the interval between two samples that ended At,
// as the kernel counts it per cgroup (cgroup v2 io.stat wbytes, v1 blkio io_service_bytes Write).
type Write struct {
	At           time.Time
	Cgroup       string
	Major, Minor uint32
	Bytes        uint64
}

// Writer names the cgroup that wrote save s to the whole disk major:minor, from writes (any order,
// any disks and times): the one cgroup whose writes to that disk in the intervals ending in (From, To]
// add up to more than half of the bytes saved, when no other cgroup's also do. More written than saved
// is usual (journal, metadata, a file overwritten in place), so a second cgroup can pass the half
// too; then, as when none does, nothing is named rather than a guess.
func Writer(s Save, major, minor uint32, writes []Write) (cgroup string, ok bool) {
	if s.Bytes == 0 {
		return "", false
	}
	var totals map[string]uint64
	for i := range writes {
		w := &writes[i]
		if w.Major != major || w.Minor != minor || !w.At.After(s.From) || w.At.After(s.To) || w.Bytes == 0 {
			continue
		}
		if totals == nil {
			totals = map[string]uint64{}
		}
		totals[w.Cgroup] += w.Bytes
	}
	for cg, b := range totals {
		if b <= s.Bytes/2 {
			continue
		}
		if ok {
			return "", false // two cgroups each wrote more than half: neither is named
		}
		cgroup, ok = cg, true
	}
	return cgroup, ok
}

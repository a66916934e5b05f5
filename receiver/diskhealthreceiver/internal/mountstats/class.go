package mountstats // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/mountstats"

// Class groups operations by what an application waits on.
type Class uint8

// Operation classes.
const (
	// ClassRead is READ (and NFSv4.2 READ_PLUS): data read from the server.
	ClassRead Class = iota
	// ClassWrite is WRITE (and WRITE_PLUS): data written. COMMIT is not in it, so that the class
	// matches nfsiostat's "write" line.
	ClassWrite
	// ClassMetadata is the namespace and attribute operations an ls, open, stat or create waits on.
	ClassMetadata
	// ClassOther is everything else: COMMIT, NULL, and the NFSv4 lease, session and state
	// housekeeping (RENEW, SEQUENCE, EXCHANGE_ID, DELEGRETURN, LAYOUT…).
	ClassOther
	// NumClasses is the number of classes.
	NumClasses
)

func (c Class) String() string {
	switch c {
	case ClassRead:
		return "read"
	case ClassWrite:
		return "write"
	case ClassMetadata:
		return "metadata"
	}
	return "other"
}

// metadataOps are the NFSv3 procedures and NFSv4 operations of ClassMetadata, as mountstats names
// them.
var metadataOps = map[string]bool{
	"GETATTR": true, "SETATTR": true, "LOOKUP": true, "LOOKUPP": true, "LOOKUP_ROOT": true, "ACCESS": true,
	"READLINK": true, "READDIR": true, "READDIRPLUS": true, "CREATE": true, "MKDIR": true, "SYMLINK": true,
	"MKNOD": true, "REMOVE": true, "RMDIR": true, "RENAME": true, "LINK": true, "FSSTAT": true,
	"FSINFO": true, "PATHCONF": true, "STATFS": true, "SERVER_CAPS": true, "OPEN": true,
	"OPEN_CONFIRM": true, "OPEN_NOATTR": true, "OPEN_DOWNGRADE": true, "CLOSE": true, "LOCK": true,
	"LOCKT": true, "LOCKU": true, "GETACL": true, "SETACL": true, "FS_LOCATIONS": true,
	"GETXATTR": true, "SETXATTR": true, "LISTXATTRS": true, "REMOVEXATTR": true, "ALLOCATE": true,
	"DEALLOCATE": true, "SEEK": true, "CLONE": true, "COPY": true, "LAYOUTSTATS": true,
}

// ClassOf returns the class of a mountstats operation name.
func ClassOf(op string) Class {
	switch op {
	case "READ", "READ_PLUS":
		return ClassRead
	case "WRITE", "WRITE_PLUS":
		return ClassWrite
	}
	if metadataOps[op] {
		return ClassMetadata
	}
	return ClassOther
}

// Classes sums the mount's operations by class. Sums saturate at the largest uint64 rather than wrap,
// so that garbage counters cannot make a sum go back.
func (m *Mount) Classes() [NumClasses]Op {
	var c [NumClasses]Op
	for i := range m.Ops {
		c[ClassOf(m.Ops[i].Name)].add(&m.Ops[i])
	}
	for i := range c {
		c[i].Name = Class(i).String()
	}
	return c
}

// Total sums every operation of the mount (saturating, as Classes).
func (m *Mount) Total() Op {
	var t Op
	for i := range m.Ops {
		t.add(&m.Ops[i])
	}
	return t
}

// add sums o's counters into s.
func (s *Op) add(o *Op) {
	s.Ops = sat(s.Ops, o.Ops)
	s.Transmissions = sat(s.Transmissions, o.Transmissions)
	s.MajorTimeouts = sat(s.MajorTimeouts, o.MajorTimeouts)
	s.BytesSent = sat(s.BytesSent, o.BytesSent)
	s.BytesReceived = sat(s.BytesReceived, o.BytesReceived)
	s.QueueMS = sat(s.QueueMS, o.QueueMS)
	s.RTTMS = sat(s.RTTMS, o.RTTMS)
	s.ExecuteMS = sat(s.ExecuteMS, o.ExecuteMS)
	s.Errors = sat(s.Errors, o.Errors)
}

// sat is a + b, or the largest uint64 when that overflows.
func sat(a, b uint64) uint64 {
	if a+b < a {
		return 1<<64 - 1
	}
	return a + b
}

// Retransmissions is Transmissions - Ops, never negative (an operation in flight has been counted
// as transmitted but not yet as done only briefly; the kernel counts both at completion).
func (o Op) Retransmissions() uint64 {
	if o.Transmissions < o.Ops {
		return 0
	}
	return o.Transmissions - o.Ops
}

// Means is what nfsiostat prints per operation for an interval: the mean round-trip, execute and
// queue time per operation, in seconds.
type Means struct {
	Ops                 uint64 // operations completed in the interval
	RTT, Execute, Queue float64
	OK                  bool // operations completed and no counter went back
}

// Interval returns the means of the operations completed between prev and cur (Δrtt/Δops and so
// on, as nfsiostat). OK is false when none completed, or when a counter went back (a different
// mount instance, whose difference means nothing).
func Interval(prev, cur Op) Means {
	if cur.Ops < prev.Ops || cur.RTTMS < prev.RTTMS || cur.ExecuteMS < prev.ExecuteMS || cur.QueueMS < prev.QueueMS {
		return Means{}
	}
	n := cur.Ops - prev.Ops
	if n == 0 {
		return Means{}
	}
	per := func(a, b uint64) float64 { return float64(a-b) / float64(n) / 1000 }
	return Means{Ops: n, RTT: per(cur.RTTMS, prev.RTTMS), Execute: per(cur.ExecuteMS, prev.ExecuteMS), Queue: per(cur.QueueMS, prev.QueueMS), OK: true}
}

// Reset reports whether any counter a reader reports as cumulative went back from prev to cur: the
// kernel never lowers them for one mount, so it is a different mount (a remount at the same place) or
// a bad reading, and the series must start again.
func Reset(prev, cur *Mount) bool {
	if cur.Age < prev.Age {
		return true
	}
	pc, cc := prev.Classes(), cur.Classes()
	for i := range cc {
		if cc[i].Ops < pc[i].Ops {
			return true
		}
	}
	pt, ct := prev.Total(), cur.Total()
	if ct.Retransmissions() < pt.Retransmissions() || ct.MajorTimeouts < pt.MajorTimeouts ||
		cur.Transport.Sends < prev.Transport.Sends || cur.Transport.Receives < prev.Transport.Receives ||
		cur.Transport.Connects < prev.Transport.Connects ||
		cur.Bytes.ServerRead < prev.Bytes.ServerRead || cur.Bytes.ServerWrite < prev.Bytes.ServerWrite {
		return true
	}
	ops := make(map[string]uint64, len(prev.Ops))
	for _, o := range prev.Ops {
		ops[o.Name] = o.Ops
	}
	for _, o := range cur.Ops {
		if o.Ops < ops[o.Name] {
			return true
		}
	}
	return false
}

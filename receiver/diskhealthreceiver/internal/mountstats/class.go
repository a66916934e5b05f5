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

// Classes sums the mount's operations by class.
func (m *Mount) Classes() [NumClasses]Op {
	var c [NumClasses]Op
	for i := range m.Ops {
		o := &m.Ops[i]
		s := &c[ClassOf(o.Name)]
		s.Ops += o.Ops
		s.Transmissions += o.Transmissions
		s.MajorTimeouts += o.MajorTimeouts
		s.BytesSent += o.BytesSent
		s.BytesReceived += o.BytesReceived
		s.QueueMS += o.QueueMS
		s.RTTMS += o.RTTMS
		s.ExecuteMS += o.ExecuteMS
		s.Errors += o.Errors
	}
	for i := range c {
		c[i].Name = Class(i).String()
	}
	return c
}

// Total sums every operation of the mount.
func (m *Mount) Total() Op {
	var t Op
	for _, c := range m.Classes() {
		t.Ops += c.Ops
		t.Transmissions += c.Transmissions
		t.MajorTimeouts += c.MajorTimeouts
		t.BytesSent += c.BytesSent
		t.BytesReceived += c.BytesReceived
		t.QueueMS += c.QueueMS
		t.RTTMS += c.RTTMS
		t.ExecuteMS += c.ExecuteMS
		t.Errors += c.Errors
	}
	return t
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

// Reset reports whether any counter of cur is below prev's: the kernel never lowers them for one
// mount, so it is a different mount (a remount at the same place) or a bad reading.
func Reset(prev, cur *Mount) bool {
	pt, ct := prev.Total(), cur.Total()
	return cur.Age < prev.Age || ct.Ops < pt.Ops || ct.Transmissions < pt.Transmissions ||
		ct.MajorTimeouts < pt.MajorTimeouts || ct.RTTMS < pt.RTTMS ||
		cur.Transport.Sends < prev.Transport.Sends || cur.Transport.Receives < prev.Transport.Receives ||
		cur.Bytes.ServerRead < prev.Bytes.ServerRead || cur.Bytes.ServerWrite < prev.Bytes.ServerWrite
}

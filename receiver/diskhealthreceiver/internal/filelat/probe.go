package filelat

// Options configures Open.
type Options struct {
	// MaxMounts bounds the mounts with series and sizes the preallocated table: 3 operations of 1960 B
	// per mount, 1.5 MiB for the default 256. Only mounts with file I/O take entries; calls on further
	// mounts count in Drops.Full.
	MaxMounts int
	// PerCgroup also keeps every call's numbers per {cgroup, mount, operation} (Snapshot.Cgroups),
	// charged to the calling task's cgroup in the io/blkio hierarchy: the ids cgroupio.IDs maps to
	// paths, as biolat's per-cgroup probe's. It costs each measured call a second table update.
	PerCgroup bool
	// MaxCgroupSeries sizes that table, preallocated: 1984 B per {cgroup, mount, operation}, 2 MiB for
	// the default 1024. A call with no room counts in Drops.CgroupsFull (its mount's series has it).
	MaxCgroupSeries int
}

const (
	defaultMaxMounts       = 256
	defaultMaxCgroupSeries = 1024
)

// measure names this probe in an *biolat.UnavailableError's sentence.
const measure = "file latency"

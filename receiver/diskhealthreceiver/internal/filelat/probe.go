package filelat

// Options configures Open.
type Options struct {
	// MaxMounts bounds the mounts with series and sizes the preallocated table: 3 operations of 1960 B
	// per mount, 1.5 MiB for the default 256. Only mounts with file I/O take entries; calls on further
	// mounts count in Drops.Full.
	MaxMounts int
}

const defaultMaxMounts = 256

// measure names this probe in an *biolat.UnavailableError's sentence.
const measure = "file latency"

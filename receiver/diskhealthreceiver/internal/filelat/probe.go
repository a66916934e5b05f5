package filelat

// Options configures Open.
type Options struct {
	// MaxMounts bounds the mounts with series (and sizes the preallocated table: 3 operations of
	// 1.96 KiB each per mount); calls on further mounts count in Drops.Full. 0 means 256.
	MaxMounts int
}

const defaultMaxMounts = 256

package biolat

import "time"

// Options configures Open.
type Options struct {
	// DeviceTime also measures issue to completion per request (Kind DeviceTime), at the cost of a map
	// insert and delete per I/O.
	DeviceTime bool
	// MaxDevices bounds the devices with histograms (and sizes the preallocated maps: 9.1 KiB of map
	// memory and 7.8 KiB of Go heap per device, about twice that with DeviceTime); completions beyond it count in Drops. 0 means 64.
	MaxDevices int
}

const defaultMaxDevices = 64

// ProgramStats is one attached BPF program's cumulative cost: RunTime stays 0 unless BPF statistics
// are on (sysctl kernel.bpf_stats_enabled=1), RunCount counts its runs then too.
type ProgramStats struct {
	Program  string
	RunTime  time.Duration
	RunCount uint64
}

// Package diskstats reads and parses the kernel's per-device I/O counters
// (/proc/diskstats) and each device's identity from sysfs. Parsing is pure:
// it takes bytes, never opens files, so every format can be tested without root.
package diskstats // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"

import "github.com/prometheus/procfs/blockdevice"

// Stat is one /proc/diskstats line. The counters use procfs' field names and
// units (I/Os, 512-byte sectors, milliseconds) exactly as the kernel prints them.
type Stat struct {
	blockdevice.Info
	blockdevice.IOStats
	// Fields is the number of fields on the line including major, minor and
	// name: 14 (kernel < 4.18), 18 (4.18+, discard) or 20 (5.5+, flush).
	Fields int
}

// HasDiscard reports whether the kernel printed the discard fields.
func (s *Stat) HasDiscard() bool { return s.Fields >= 18 }

// HasFlush reports whether the kernel printed the flush fields.
func (s *Stat) HasFlush() bool { return s.Fields >= 20 }

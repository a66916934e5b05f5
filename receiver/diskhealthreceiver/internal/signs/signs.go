// Package signs is the board on which a source that sees a physical disk's
// trouble outside SMART posts it for the SMART source's per-disk verdict.
//
// Scrapers never import each other, yet the SMART verdict of a disk should
// also weigh what the kernel and the filesystems count on it: ext4 and
// btrfs errors on its partitions, corrected read errors of its md members,
// the I/O errors the latency source sees. The
// receiver creates one Board (sources.go) and hands it to every section that
// posts or reads, through a `mapstructure:"-"` field; a source publishes its
// whole set of counters after each scrape, keyed by the disk's hw.id, and
// the SMART source reads a disk's counters when it evaluates that disk.
//
// A Board holds values only: cumulative counters, never a verdict. Whether a
// counter "rises" is decided by the health rules against the baseline they
// keep per disk (package smart/health: kernel_io_errors_rising,
// filesystem_errors_rising), so every sign reaches a disk's hw.status and
// its events through the one engine, whatever source saw it. Safe for
// concurrent use; a nil *Board takes nothing and gives nothing, so a source
// built without the receiver (tests, a lone factory) needs no board.
package signs // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// Kind says which health rule weighs a counter.
type Kind string

const (
	// KernelIOErrors are errors of filesystem and block I/O to the disk:
	// md's corrected read errors of a member on the disk, errors the block
	// layer completes requests with. Never a count that pass-through
	// commands (SG_IO, NVMe admin: REQ_OP_DRV_IN/OUT) move, such as SCSI
	// ioerr_cnt: every tool that polls a disk's SMART would raise it.
	KernelIOErrors Kind = "kernel_io_errors"
	// FilesystemErrors are errors a filesystem recorded on a device of the
	// disk: ext4 errors_count, btrfs per-device error_stats.
	FilesystemErrors Kind = "filesystem_errors"
)

// Counter is one cumulative count a source saw on one disk.
type Counter struct {
	Kind Kind
	// Subject names the counter for people and keys its baseline; it must
	// be stable across scrapes: "kernel-seen I/O errors of sda", "ext4 errors on sda1 (/data)".
	Subject string
	Value   uint64
}

// Board is the set of counters every source posted, by source and disk.
type Board struct {
	mu sync.Mutex
	by map[string]map[string][]Counter // source → hw.id → counters
}

// New returns an empty board.
func New() *Board { return &Board{by: map[string]map[string][]Counter{}} }

// Publish replaces everything source posted with byDisk (hw.id → its
// counters): a disk or counter the source no longer sees is gone from the
// board. byDisk is copied.
func (b *Board) Publish(source string, byDisk map[string][]Counter) {
	if b == nil {
		return
	}
	cp := make(map[string][]Counter, len(byDisk))
	for id, cs := range byDisk {
		if id != "" && len(cs) > 0 {
			cp[id] = slices.Clone(cs)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(cp) == 0 {
		delete(b.by, source)
		return
	}
	b.by[source] = cp
}

// Counters returns every source's counters for the disk hwID, sorted by
// kind and subject; nil when none.
func (b *Board) Counters(hwID string) []Counter {
	if b == nil || hwID == "" {
		return nil
	}
	b.mu.Lock()
	var out []Counter
	for _, disks := range b.by {
		out = append(out, disks[hwID]...)
	}
	b.mu.Unlock()
	slices.SortFunc(out, func(x, y Counter) int {
		return cmp.Or(strings.Compare(string(x.Kind), string(y.Kind)), strings.Compare(x.Subject, y.Subject))
	})
	return out
}

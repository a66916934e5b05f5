package capacityscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper"

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/checkpoint"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
)

// writerIntervals bounds the scrape intervals whose per-cgroup writes are kept: a save whose usage rose
// over more of them than this (at a 10 s scrape, over 20 minutes) is not attributed.
const writerIntervals = 128

// writer is a cgroup named as a domain's checkpoint writer, with what its path says.
type writer struct {
	path, podUID, containerID string
}

// checkpointWriters names the cgroup that wrote each domain's checkpoint saves, from the per-cgroup
// write bytes the kernel counts (the cgroups source's collector, bounded by the same top_n and
// max_depth): it keeps the busiest cgroups' writes per whole disk for the last writerIntervals scrapes
// and, when a domain's learner reports a save, sums them over the save's span (checkpoint.Writer).
type checkpointWriters struct {
	logger *zap.Logger
	root   string
	topN   int
	depth  int

	col     *cgroupio.Collector // nil until the first collect, and on a host without per-cgroup I/O
	started bool
	// writes are the intervals' writes, oldest first; times the ends of the intervals kept.
	writes []checkpoint.Write
	times  []time.Time
	// named is each domain's last named writer.
	named map[fsusage.Domain]writer
}

func newCheckpointWriters(logger *zap.Logger, cfg *Config) *checkpointWriters {
	if !cfg.CheckpointWriters {
		return nil
	}
	return &checkpointWriters{logger: logger, root: cfg.RootPath, topN: cfg.CgroupTopN, depth: cfg.CgroupMaxDepth,
		named: map[fsusage.Domain]writer{}}
}

// collect reads the cgroups' write counters at now (one interval more); the first call finds the
// hierarchy, and a host without per-cgroup I/O accounting is said once and names no writer.
func (w *checkpointWriters) collect(now time.Time) error {
	if !w.started {
		w.started = true
		h, err := cgroupio.Detect(filepath.Join(w.root, "sys", "fs", "cgroup"))
		if errors.Is(err, cgroupio.ErrNoIOAccounting) {
			w.logger.Info("No per-cgroup I/O accounting on this host: checkpoint writers are not named.", zap.Error(err))
			return nil
		}
		if err != nil {
			return fmt.Errorf("checkpoint writers: %w", err)
		}
		// Start only dates the counters' series, which are not emitted here.
		w.col, err = cgroupio.NewCollector(cgroupio.NewDirFS(h.Dir), cgroupio.Config{Version: h.Version, TopN: w.topN, MaxDepth: w.depth})
		if err != nil {
			return fmt.Errorf("checkpoint writers: %w", err)
		}
	}
	if w.col == nil {
		return nil
	}
	res, err := w.col.Collect(now)
	for i := range res.Cgroups {
		cg := &res.Cgroups[i]
		for j := range cg.Devices {
			if b := cg.Written(j); b > 0 {
				w.writes = append(w.writes, checkpoint.Write{At: now, Cgroup: cg.Path, Major: cg.Devices[j].Major, Minor: cg.Devices[j].Minor, Bytes: b})
			}
		}
	}
	w.times = append(w.times, now)
	if len(w.times) > writerIntervals {
		w.times = w.times[len(w.times)-writerIntervals:]
		oldest, k := w.times[0], 0
		for k < len(w.writes) && w.writes[k].At.Before(oldest) {
			k++
		}
		w.writes = w.writes[:copy(w.writes, w.writes[k:])]
	}
	if err != nil {
		return fmt.Errorf("checkpoint writers: %w", err)
	}
	return nil
}

// saved attributes the save the domain's learner just reported, and returns the domain's writer (the
// last named). A domain on no block device (tmpfs, overlay, btrfs's anonymous devices, NFS) has no
// per-cgroup counters to read.
func (w *checkpointWriters) saved(dom fsusage.Domain, s checkpoint.Save) error {
	if w.col == nil || dom.Major == 0 || len(w.times) == 0 || s.From.Before(w.times[0]) {
		return nil // not collecting, no disk, or the span began before the writes kept
	}
	major, minor, err := blockdev.WholeDisk(filepath.Join(w.root, "sys"), dom.Major, dom.Minor)
	if err != nil {
		return fmt.Errorf("checkpoint writer of %s: %w", blockdev.MajorMinor(dom.Major, dom.Minor), err)
	}
	path, ok := checkpoint.Writer(s, major, minor, w.writes)
	// One line per save (minutes apart): what an operator checks when no writer, or a surprising one, is named.
	w.logger.Debug("checkpoint save attributed", zap.String("domain", blockdev.MajorMinor(dom.Major, dom.Minor)),
		zap.Uint64("bytes", s.Bytes), zap.Time("from", s.From), zap.Time("to", s.To), zap.String("writer", path))
	if ok {
		a := cgroupio.Attribute(path)
		w.named[dom] = writer{path: path, podUID: a.PodUID, containerID: a.ContainerID}
	}
	return nil
}

// writer returns the domain's last named writer.
func (w *checkpointWriters) writer(dom fsusage.Domain) (writer, bool) {
	if w == nil {
		return writer{}, false
	}
	wr, ok := w.named[dom]
	return wr, ok
}

// sweep forgets the writers of the domains that have no learner any more.
func (w *checkpointWriters) sweep(learned func(fsusage.Domain) bool) {
	for d := range w.named {
		if !learned(d) {
			delete(w.named, d)
		}
	}
}

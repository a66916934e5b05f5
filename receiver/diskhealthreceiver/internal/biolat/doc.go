// Package biolat measures block request latency per device with eBPF, as cumulative exponential
// histograms ready for OTLP, and counts the I/O errors the kernel sees on completion. It is a library:
// no pdata, no configuration; the latency scraper builds on it.
//
// # Use
//
//	p, err := biolat.Open(biolat.Options{DeviceTime: false, MaxDevices: 64})
//	if err != nil {
//		// An *UnavailableError: log err once (its message names the cause and the fix) and emit
//		// nothing; errors.As gives Cause and Missing for tests and status.
//	}
//	defer p.Close()
//	s, err := p.Collect() // every scrape: cumulative since p.Started()
//	for _, x := range s.Series { ... }   // {Dev, Direction, Kind, Histogram}
//	for _, e := range s.Errors { ... }   // {Dev, Direction, Status, Count}
//	p.Forget(dev)                         // a device left /sys/block: its series restart from zero
//
// A Histogram maps one to one onto an OTLP exponential histogram data point: scale Scale (3),
// zero threshold ZeroThreshold (2^-20 s), ZeroCount, Positive().Offset = Offset,
// Positive().BucketCounts = Buckets, Count, Sum (seconds); cumulative, with start time
// p.Started() (or the time of Forget for a device forgotten and back). Min and max are not kept.
// Bucket i holds (2^(i/8), 2^((i+1)/8)] seconds, upper-inclusive as OTLP defines it; the index is
// computed with integers only and is exact (see thresholds). Lowering the scale is exact too (bucket
// i goes to i>>1 per step) where a backend wants fewer buckets.
//
// Dev is the whole disk's major:minor; map it to a name and identity (and apply the device filter)
// from /sys/dev/block/MAJOR:MINOR. Directions are /proc/diskstats' groups: read, write, discard, flush.
// For Kind Total, each direction's Count and Sum advance exactly as that device's completed operations
// and time fields in /proc/diskstats, but for the completions under load that neither program sees
// (up to a queue depth at once; no count here shows them, the latency scraper's uncounted reason does:
// docs/block-latency.md) (the per-request term of iostat's await; on the block_rq_complete
// hook Sum runs a little below, as the hook fires before the request's bios are completed, work the
// kernel's time includes: 40–80 µs per request under QEMU TCG); an fsync's data-less
// PREFLUSH write counts as a write there and here. Kind DeviceTime (Options.DeviceTime) is issue to
// the driver to completion.
//
// ErrorCount.Status names the request's blk_status_t (ioerr, timeout, medium, nospc, ...; see
// statusTable for the numbers on each kernel), counted once per failed request when the kernel would
// log it: never for a pass-through request (REQ_OP_SCSI_IN/OUT up to 5.10, REQ_OP_DRV_IN/OUT since; an
// ATA command sent with CK_COND completes with BLK_STS_IOERR though it succeeded), nor RQF_QUIET.
//
// # Per cgroup (opt-in)
//
// OpenCgroups loads a second, separate program (bpf/cglat.bpf.c, its own object, so the per-device
// path and its cost are the same whether it runs or not): the owner of each request is read at its
// start from its first bio's blkcg (rq->bio->bi_blkg->blkcg->css.cgroup->kn->id: the cgroup io.stat
// and blkio.* charge, so writeback is the page owner's), and at Open's completion hook and accounting
// filter the latency goes into a histogram per {cgroup, device, direction} with Series' buckets,
// together with the time in flight (the cgroup's share of the device's occupancy) and bytes.
//
//	cp, err := biolat.OpenCgroups(biolat.CgroupOptions{MaxCgroups: 1024})
//	s, err := cp.Collect(func() (map[uint64]string, error) { return cgroupio.IDs(hierarchy.Dir) })
//	for _, x := range s.Cgroups { ... } // {CgroupID, Path, Dev, Direction, Histogram, Bytes}
//	for _, x := range s.Other { ... }   // per {Dev, Direction}: unowned, overflow, removed cgroups
//
// The table is preallocated, 2 × MaxCgroups entries: 4.0 KiB of map memory and 3.8 KiB of Go heap per
// tracked cgroup, 1.9 MiB fixed (BenchmarkCgroupProbeMemory); beyond it a completion
// goes to its device's Other series. From the first Collect after a cgroup is removed its counts are
// in Other, and the Collect after that deletes its entries (one interval later, so that no completion
// still adding to an entry is lost with it): a removed cgroup's state is freed and no series carries
// an id without a cgroup (TestCgroupChurn5000: 5 000 cgroups through a 256-cgroup table, the series
// and Other together count what /proc/diskstats counts, within the per-device probe's tolerance). TestCgroupsAgreeWithBlkioServiced checks the counts against v1
// blkio.throttle.io_serviced and fio on a loop device; TestCgroupWritebackChargedToOwner (in e2e's QEMU
// guest, cgroup v2 on the block_rq_issue path) that a cgroup's buffered writes flushed by writeback are
// its own, against its io.stat, where the task-based attribution has them on the flusher.
//
// # Kernel and privileges
//
// Open picks its tracepoint from the kernel's BTF: tp_btf/block_io_done on 6.5+, the final
// tp_btf/block_rq_complete on 5.5–6.4 (Hook says which). It needs CAP_BPF and CAP_PERFMON (or
// CAP_SYS_ADMIN before 5.8); no root, no tracefs, no hostPID. Memory is preallocated per device (MaxDevices):
// 9.1 KiB of map memory and 7.8 KiB of Go heap (Collect's read buffers), about twice that and 1.3 MiB
// more for the in-flight table with DeviceTime (BenchmarkProbeMemory).
// Stats returns the programs' run counts and, with kernel.bpf_stats_enabled=1, their run time.
//
// # Build
//
// bpf/biolat.bpf.c, bpf/cglat.bpf.c, bpf/hist.h (what they share), bpf/kernel.h, and bpf/slots.h and
// bpf/types.h (which filelat shares too) are the sources;
// biolat_bpfel.{o,go} and cglat_bpfel.{o,go} are generated
// by `make bpf` (bpf2go, Debian's clang-14) and committed, so nothing else needs clang.
// TestObjectMatchesSources fails when they drift.
package biolat

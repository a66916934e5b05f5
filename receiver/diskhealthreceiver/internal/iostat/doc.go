// Package iostat turns successive /proc/diskstats reads into cumulative
// counters with a correct per-series start time and into the gauges of
// `iostat -x`. It is pure: the caller passes each device's parsed line and the
// time it was read; nothing here reads files or clocks.
//
// Series rules. A device seen in the engine's first scrape counts since boot.
// A device first seen later counts since the previous scrape, the last one
// that did not see it; so does a device that disappears and returns. When a
// 64-bit counter (I/Os, merges, sectors) goes down, the device's counters
// restarted: a new series begins at the previous read with the raw values.
// So does a name that the previous scrape saw under another major:minor (a
// device re-created and renumbered between two reads, as NVMe, loop and nbd
// devices are); its gauges count from zero, as sysstat's do.
// The 32-bit millisecond fields (rd/wr/dc/fl_ticks, io_ticks, time_in_queue)
// wrap at 2^32: a step back is read as a wrap, its modular difference.
//
// Plausibility, both ways. Every increase, forward or across a wrap, must fit
// what a device can do in the wall-clock interval Δt between the two reads
// (bounds in sample.go, with why each holds), whatever is in flight and
// however long the host has been up:
//   - io_ticks ≤ Δt + 1 s;
//   - rd/wr/dc/fl_ticks, time_in_queue ≤ (Δt + 1 s) × MaxInFlight;
//   - a 32-bit field's increase < 2^31 (a larger modular step is a step back);
//   - ios and merges ≤ (Δt + 1 s) × MaxOpsPerSecond;
//   - sectors ≤ (Δios + MaxInFlight) × 4 GiB / 512.
//
// An increase beyond its bound, or a 32-bit field stepping back further, is a
// glitch: that counter adds nothing for the interval (its cumulative value
// holds, its gauges count nothing) and counting resumes from the new kernel
// value, in the same series. (An io_ticks stepping back by 3e9 ms, or forward
// by 1e9 ms, in 1 s is no activity: utilization 0 for that interval, not
// 1 296 135 or 999 406.) A glitch that ends by stepping back is not a wrap
// and, for 64-bit counters, not a re-created device: the next series starts
// at the true values with no activity for that interval.
//
// Gauges follow sysstat 12.6.1 (iostat.c write_ext_stat, rd_stats.c
// compute_ext_disk_stats, the "removed then inserted again" test in
// write_stats), checked against the installed binary, with these deliberate
// differences:
//   - The interval is now.Sub(previous read) on Go's monotonic clock, where
//     sysstat uses /proc/uptime in centiseconds.
//   - A device's first read has no gauges; sysstat prints averages since boot.
//   - A 64-bit counter that went down outside the re-creation pattern counts
//     as no activity. sysstat 12.6.1 subtracts in unsigned long and prints the
//     modular difference (r/s ≈ 1.8e18).
//   - An increase beyond what the clock allows counts as no activity; sysstat
//     takes it as read.
//   - A 32-bit field that stepped back by more than a plausible wrap counts as
//     no time. sysstat 12.6.1 prints the modular difference (r_await, %util
//     and aqu-sz in the millions). A plausible wrap gives the modular
//     difference in both; sysstat 12.6.1 does not clamp %util or aqu-sz on a
//     wrap, while later sysstat reports %util 0 when io_ticks went back: we
//     keep the wrap's true increase.
package iostat // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/iostat"

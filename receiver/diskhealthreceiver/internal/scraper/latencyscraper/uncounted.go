package latencyscraper

import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"

// Under load a few completions reach none of the probe's programs, with recursion_misses at 0 (issue 31:
// up to a queue depth at once on a loop device under a qd32 writer; the kernel path is not found), so no
// count inside the probe can see them. /proc/diskstats counts them, and this is how they become the
// dropped reason uncounted: per device with histograms, the completions diskstats counted since a
// baseline less the histograms' count since then, the most seen, summed over devices, less what the
// host-wide reasons not_run and histograms_full already show.
//
// Why the difference never runs ahead of the real misses. The kernel accounts a completion in
// blk_account_io_done: first the block_io_done tracepoint (the probe's program runs, or is missed), then
// the diskstats increment. At any instant, per device, diskstats' count d, the histograms' h and the
// misses m satisfy d − h = m − w + K, w being the completions between the two steps and K a constant.
//   - A scrape reads diskstats (D) first and the maps (H) after: D − H ≤ d − h at the instant D was read
//     (h only grows), so D − H ≤ m + K.
//   - A baseline reads the maps (H0) first and diskstats (D0) after: D0 − H0 ≥ d − h at the instant D0
//     was read, so D0 − H0 ≥ m0 − w0 + K.
//
// So (D − D0) − (H − H0) ≤ m − m0 + w0: never more than the misses since the baseline, but for w0,
// completions caught between their tracepoint and their diskstats increment, a few instructions apart,
// at the baseline's read of diskstats (at most that device's requests in flight then; none on an idle
// device). The baseline's order costs the other way: completions wholly between its two reads are not
// reported when missed (e0, same window). Once the device is quiet (w = 0) the difference is exactly
// the misses since the baseline, less e0 − w0, which is 0 for a baseline taken while the device was
// idle (or on a quiet moment: the window is one map read and one /proc/diskstats read long). Taking the
// most seen keeps the counter monotonic without ever exceeding the final, exact value.
//
// not_run and histograms_full are host-wide (the kernel counts skipped runs per program, not per
// device), and a completion of a reported device that one of them holds is also in that device's
// difference; so they are subtracted from the sum, which only ever under-reports: by their counts on
// devices not reported or from before a device's baseline (counted from the first baseline taken). The per-cgroup probe misses the same
// requests (it runs on the same tracepoint), so the device reason covers its series too.

// deviceCompletions is one device at one scrape.
type deviceCompletions struct {
	// D and H: /proc/diskstats' reads + writes + discards + flushes, read before the probe's maps, and
	// the device's total histograms' count (every direction) from those maps.
	D, H uint64
	// D0, for a device that needs a baseline (uncounted.needsBaseline): /proc/diskstats' count read
	// again after the maps; Fresh is false when it was not (or could not be) read.
	D0    uint64
	Fresh bool
}

// uncounted is what the scraper keeps to report the reason: one baseline per device with histograms,
// freed when the device leaves.
type uncounted struct {
	devs map[biolat.Dev]*uncountedDevice
	// banked is what devices since gone (or restarted) had shown: the counter never gives it back.
	banked uint64
	// total is the last value reported.
	total uint64
	// elsewhere0 is not_run + histograms_full when the first baseline was taken: none of what they
	// counted before is in any device's difference; based says whether it is set.
	elsewhere0 uint64
	based      bool
}

type uncountedDevice struct {
	d0, h0 uint64
	shown  uint64 // the most of (D − D0) − (H − H0) seen
}

func newUncounted() *uncounted { return &uncounted{devs: map[biolat.Dev]*uncountedDevice{}} }

// needsBaseline reports whether a device with these counts has no baseline that they continue: it is
// new, or a counter went back: the device's diskstats restarted (a re-created device), the probe
// forgot its series, or, on a 32-bit kernel whose unsigned long completion counters wrap at 2^32, a
// wrap (64-bit counters never wrap, and the iostat engine also takes their step back for a restart).
// A new baseline loses at most the misses of the interval it is taken in: it never over-reports.
func (u *uncounted) needsBaseline(dev biolat.Dev, c deviceCompletions) bool {
	b, ok := u.devs[dev]
	return !ok || c.D < b.d0 || c.H < b.h0
}

// update takes one scrape: every device with histograms that is reported, and the host-wide count of
// the reasons not_run and histograms_full, read with the maps. A device absent from devs has left (or no longer passes the
// filter) and its state is freed; one that needs a baseline gets it from H and D0 when Fresh. It
// returns the reason's cumulative value, which only grows.
func (u *uncounted) update(devs map[biolat.Dev]deviceCompletions, shownElsewhere uint64) uint64 {
	for dev, b := range u.devs {
		if _, ok := devs[dev]; !ok {
			u.banked += b.shown
			delete(u.devs, dev)
		}
	}
	sum := u.banked
	for dev, c := range devs {
		if u.needsBaseline(dev, c) {
			if b, ok := u.devs[dev]; ok {
				u.banked += b.shown
				sum += b.shown
				delete(u.devs, dev)
			}
			if c.Fresh {
				u.devs[dev] = &uncountedDevice{d0: c.D0, h0: c.H}
				if !u.based {
					u.elsewhere0, u.based = shownElsewhere, true
				}
			}
			continue
		}
		b := u.devs[dev]
		if dd, dh := c.D-b.d0, c.H-b.h0; dd > dh {
			b.shown = max(b.shown, dd-dh)
		}
		sum += b.shown
	}
	if e := shownElsewhere - u.elsewhere0; sum > e {
		u.total = max(u.total, sum-e)
	}
	return u.total
}

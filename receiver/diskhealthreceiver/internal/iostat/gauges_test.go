package iostat

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Lines shared by the formula table and the sysstat cross-check. The sysstat
// values in TestAgainstSysstat1261 were printed by sysstat 12.6.1
// (`iostat -x -p ALL -y -o JSON 1 1`) with these lines bound over
// /proc/diskstats and /proc/uptime 1000.00 → 1010.00 (Δt = 10 s) in a private
// mount namespace.
const (
	// 20 fields: a busy NVMe with discard and flush.
	nvmeA = "259 0 nvme0n1 1000 100 80000 2000 500 50 40000 3000 0 1500 5000 10 1 800 20 30 60"
	nvmeB = "259 0 nvme0n1 1100 120 96000 2300 600 70 50000 3400 2 2500 6000 14 2 1200 30 40 80"
	// nvmeA's device removed and re-added: every counter lower.
	nvmeRecreated = "259 0 nvme0n1 50 5 4000 100 20 2 1600 60 1 200 300 1 0 8 2 3 6"
	// Only rd_ios, rd_merges and some ticks went down: not sysstat's re-creation
	// pattern (the I/O sum grew), still a restart of the 64-bit counters.
	nvmeReadDrop = "259 0 nvme0n1 900 90 96000 1900 600 70 50000 3400 2 1400 4000 14 2 1200 10 40 80"
	// 14 fields (kernel < 4.18): every 32-bit millisecond field wraps.
	sdaWrapA = "8 0 sda 1000 100 80000 4294967000 500 50 40000 4294967200 1 4294966296 4294960000"
	sdaWrapB = "8 0 sda 1100 120 96000 704 600 70 50000 296 1 704 3704"
	// 14 fields: rd_ticks steps back by 100 ms while reads complete.
	sdaA          = "8 0 sda 1000 100 80000 2000 500 50 40000 3000 0 1500 5000"
	sdaTicksBack  = "8 0 sda 1100 120 96000 1900 600 70 50000 3400 0 1600 5100"
	sdbDiscardA   = "8 16 sdb 10 0 80 5 0 0 0 0 0 4 4 100 2 2048 50"
	sdbDiscardB   = "8 16 sdb 10 0 80 5 0 0 0 0 0 1004 1504 300 6 206848 1550"
	sdcFlushOnlyA = "8 32 sdc 0 0 0 0 7 0 0 0 0 10 10 0 0 0 0 100 400"
	sdcFlushOnlyB = "8 32 sdc 0 0 0 0 7 0 0 0 0 110 260 0 0 0 0 150 650"
)

// TestGaugeFormulas checks every gauge against values computed by hand from
// the deltas written next to each case.
func TestGaugeFormulas(t *testing.T) {
	tests := []struct {
		name       string
		prev, cur  string
		dt         time.Duration
		want       Gauges
		reset      bool
		hasDiscard bool
		hasFlush   bool
	}{
		{
			// rd: Δios 100 Δmerges 20 Δsect 16000 Δticks 300; wr: 100 20 10000 400;
			// dc: 4 1 400 10; fl: 10 ios 20 ms; io_ticks +1000; time_in_queue +1000.
			name: "busy nvme, 20 fields", prev: nvmeA, cur: nvmeB, dt: 10 * time.Second,
			hasDiscard: true, hasFlush: true,
			want: Gauges{
				ReadOpsRate: 10, WriteOpsRate: 10, DiscardOpsRate: 0.4, FlushOpsRate: 1,
				ReadBytesRate: 16000 * 512 / 10, WriteBytesRate: 10000 * 512 / 10, DiscardBytesRate: 400 * 512 / 10,
				ReadMergedRate: 2, WriteMergedRate: 2, DiscardMergedRate: 0.1,
				ReadMergedRatio: 20.0 / 120, WriteMergedRatio: 20.0 / 120, DiscardMergedRatio: 1.0 / 5,
				ReadAwait: 0.003, WriteAwait: 0.004, DiscardAwait: 0.0025, FlushAwait: 0.002,
				ReadAvgSize: 160 * 512, WriteAvgSize: 100 * 512, DiscardAvgSize: 100 * 512,
				QueueLength: 0.1, Utilization: 0.1,
			},
		},
		{
			// sysstat's re-creation pattern: the interval is measured against
			// zero, i.e. the new device's whole counts over Δt.
			name: "device re-created", prev: nvmeA, cur: nvmeRecreated, dt: 10 * time.Second,
			hasDiscard: true, hasFlush: true, reset: true,
			want: Gauges{
				ReadOpsRate: 5, WriteOpsRate: 2, DiscardOpsRate: 0.1, FlushOpsRate: 0.3,
				ReadBytesRate: 4000 * 512 / 10, WriteBytesRate: 1600 * 512 / 10, DiscardBytesRate: 8 * 512 / 10.0,
				ReadMergedRate: 0.5, WriteMergedRate: 0.2, DiscardMergedRate: 0,
				ReadMergedRatio: 5.0 / 55, WriteMergedRatio: 2.0 / 22, DiscardMergedRatio: 0,
				ReadAwait: 0.002, WriteAwait: 0.003, DiscardAwait: 0.002, FlushAwait: 0.002,
				ReadAvgSize: 80 * 512, WriteAvgSize: 80 * 512, DiscardAvgSize: 8 * 512,
				QueueLength: 0.03, Utilization: 0.02,
			},
		},
		{
			// rd_ios/rd_merges went down outside the re-creation pattern: they
			// count as no activity (Δ 0, so r/s, rrqm/s, %rrqm, r_await and
			// rareq-sz are 0) while rd_sectors still grew 16000. The 32-bit
			// steps back (rd_ticks, dc_ticks, io_ticks, time_in_queue) are too
			// large to be wraps and count 0 too.
			name: "read counters dropped", prev: nvmeA, cur: nvmeReadDrop, dt: 10 * time.Second,
			hasDiscard: true, hasFlush: true, reset: true,
			want: Gauges{
				WriteOpsRate: 10, DiscardOpsRate: 0.4, FlushOpsRate: 1,
				ReadBytesRate: 16000 * 512 / 10, WriteBytesRate: 10000 * 512 / 10, DiscardBytesRate: 400 * 512 / 10,
				WriteMergedRate: 2, DiscardMergedRate: 0.1,
				WriteMergedRatio: 20.0 / 120, DiscardMergedRatio: 1.0 / 5,
				WriteAwait: 0.004, FlushAwait: 0.002,
				WriteAvgSize: 100 * 512, DiscardAvgSize: 100 * 512,
			},
		},
		{
			// Every 32-bit field wraps: rd_ticks 296+704 = 1000, wr_ticks
			// 96+296 = 392, io_ticks 1000+704 = 1704, time_in_queue 7296+3704 = 11000.
			name: "u32 wraps, 14 fields", prev: sdaWrapA, cur: sdaWrapB, dt: 10 * time.Second,
			want: Gauges{
				ReadOpsRate: 10, WriteOpsRate: 10,
				ReadBytesRate: 16000 * 512 / 10, WriteBytesRate: 10000 * 512 / 10,
				ReadMergedRate: 2, WriteMergedRate: 2,
				ReadMergedRatio: 20.0 / 120, WriteMergedRatio: 20.0 / 120,
				ReadAwait: 0.010, WriteAwait: 0.00392,
				ReadAvgSize: 160 * 512, WriteAvgSize: 100 * 512,
				QueueLength: 1.1, Utilization: 0.1704,
			},
		},
		{
			// rd_ticks 2000 → 1900 is no wrap (modular step 2^32-100): Δ 0,
			// so r_await is 0 while reads completed.
			name: "u32 step back", prev: sdaA, cur: sdaTicksBack, dt: 10 * time.Second,
			want: Gauges{
				ReadOpsRate: 10, WriteOpsRate: 10,
				ReadBytesRate: 16000 * 512 / 10, WriteBytesRate: 10000 * 512 / 10,
				ReadMergedRate: 2, WriteMergedRate: 2,
				ReadMergedRatio: 20.0 / 120, WriteMergedRatio: 20.0 / 120,
				ReadAwait: 0, WriteAwait: 0.004,
				ReadAvgSize: 160 * 512, WriteAvgSize: 100 * 512,
				QueueLength: 0.01, Utilization: 0.01,
			},
		},
		{
			name: "idle", prev: sdaA, cur: sdaA, dt: 10 * time.Second,
		},
		{
			// 18 fields, discard only: Δdc_ios 200 Δmerges 4 Δsect 204800 Δticks 1500,
			// io_ticks +1000, time_in_queue +1500 over 2 s.
			name: "discard only, 18 fields", prev: sdbDiscardA, cur: sdbDiscardB, dt: 2 * time.Second,
			hasDiscard: true,
			want: Gauges{
				DiscardOpsRate: 100, DiscardBytesRate: 204800 * 512 / 2, DiscardMergedRate: 2,
				DiscardMergedRatio: 4.0 / 204, DiscardAwait: 0.0075, DiscardAvgSize: 1024 * 512,
				QueueLength: 0.75, Utilization: 0.5,
			},
		},
		{
			// Flushes only: Δfl_ios 50 Δfl_ticks 250, io_ticks +100,
			// time_in_queue +250 over 500 ms. No read/write activity → their
			// awaits and sizes are 0, not NaN.
			name: "flush only", prev: sdcFlushOnlyA, cur: sdcFlushOnlyB, dt: 500 * time.Millisecond,
			hasDiscard: true, hasFlush: true,
			want: Gauges{FlushOpsRate: 100, FlushAwait: 0.005, QueueLength: 0.5, Utilization: 0.2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := pair(t, tc.prev, tc.cur, tc.dt)
			require.True(t, r.HasGauges)
			assert.Equal(t, tc.reset, r.Reset)
			assert.Equal(t, tc.hasDiscard, r.HasDiscard)
			assert.Equal(t, tc.hasFlush, r.HasFlush)
			assertGauges(t, tc.want, r.Gauges)
			checkResult(t, nil, r, boot.Add(time.Hour+tc.dt))
		})
	}
}

// sysstatColumns converts gauges to the units `iostat -x` prints.
func sysstatColumns(g Gauges) map[string]float64 {
	return map[string]float64{
		"r/s": g.ReadOpsRate, "w/s": g.WriteOpsRate, "d/s": g.DiscardOpsRate, "f/s": g.FlushOpsRate,
		"rkB/s": g.ReadBytesRate / 1024, "wkB/s": g.WriteBytesRate / 1024, "dkB/s": g.DiscardBytesRate / 1024,
		"rrqm/s": g.ReadMergedRate, "wrqm/s": g.WriteMergedRate, "drqm/s": g.DiscardMergedRate,
		"rrqm": g.ReadMergedRatio * 100, "wrqm": g.WriteMergedRatio * 100, "drqm": g.DiscardMergedRatio * 100,
		"r_await": g.ReadAwait * 1000, "w_await": g.WriteAwait * 1000, "d_await": g.DiscardAwait * 1000,
		"f_await":  g.FlushAwait * 1000,
		"rareq-sz": g.ReadAvgSize / 1024, "wareq-sz": g.WriteAvgSize / 1024, "dareq-sz": g.DiscardAvgSize / 1024,
		"aqu-sz": g.QueueLength, "util": g.Utilization * 100,
	}
}

// TestAgainstSysstat1261 compares with what sysstat 12.6.1 printed for the same
// lines (two decimals, so a tolerance of half a unit in the last place).
func TestAgainstSysstat1261(t *testing.T) {
	tests := []struct {
		name      string
		prev, cur string
		printed   map[string]float64
	}{
		{
			name: "busy nvme", prev: nvmeA, cur: nvmeB,
			printed: map[string]float64{
				"r/s": 10.00, "w/s": 10.00, "d/s": 0.40, "f/s": 1.00, "rkB/s": 800.00, "wkB/s": 500.00,
				"dkB/s": 20.00, "rrqm/s": 2.00, "wrqm/s": 2.00, "drqm/s": 0.10, "rrqm": 16.67, "wrqm": 16.67,
				"drqm": 20.00, "r_await": 3.00, "w_await": 4.00, "d_await": 2.50, "f_await": 2.00,
				"rareq-sz": 80.00, "wareq-sz": 50.00, "dareq-sz": 50.00, "aqu-sz": 0.10, "util": 10.00,
			},
		},
		{
			name: "removed and re-added (iozero)", prev: nvmeA, cur: nvmeRecreated,
			printed: map[string]float64{
				"r/s": 5.00, "w/s": 2.00, "d/s": 0.10, "f/s": 0.30, "rkB/s": 200.00, "wkB/s": 80.00,
				"dkB/s": 0.40, "rrqm/s": 0.50, "wrqm/s": 0.20, "drqm/s": 0.00, "rrqm": 9.09, "wrqm": 9.09,
				"drqm": 0.00, "r_await": 2.00, "w_await": 3.00, "d_await": 2.00, "f_await": 2.00,
				"rareq-sz": 40.00, "wareq-sz": 40.00, "dareq-sz": 4.00, "aqu-sz": 0.03, "util": 2.00,
			},
		},
		{
			name: "u32 wraps", prev: sdaWrapA, cur: sdaWrapB,
			printed: map[string]float64{
				"r/s": 10.00, "w/s": 10.00, "d/s": 0.00, "f/s": 0.00, "rkB/s": 800.00, "wkB/s": 500.00,
				"dkB/s": 0.00, "rrqm/s": 2.00, "wrqm/s": 2.00, "drqm/s": 0.00, "rrqm": 16.67, "wrqm": 16.67,
				"drqm": 0.00, "r_await": 10.00, "w_await": 3.92, "d_await": 0.00, "f_await": 0.00,
				"rareq-sz": 80.00, "wareq-sz": 50.00, "dareq-sz": 0.00, "aqu-sz": 1.10, "util": 17.04,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := sysstatColumns(pair(t, tc.prev, tc.cur, 10*time.Second).Gauges)
			require.Len(t, tc.printed, len(got))
			for col, want := range tc.printed {
				assert.InDelta(t, want, got[col], 0.00501, col)
			}
		})
	}
}

// TestDeviationsFromSysstat1261 pins the two places where we deliberately do
// not print what sysstat 12.6.1 prints for the same lines (recorded next to
// each case): sysstat subtracts in the fields' C types and prints the modular
// difference of a counter that went down.
func TestDeviationsFromSysstat1261(t *testing.T) {
	t.Run("64-bit counter went down", func(t *testing.T) {
		// sysstat: "r/s": 1844674407370955264.00, "rrqm/s": 1844674407370955264.00,
		// "rrqm": 100.00, "d_await": 1073741821.50, "aqu-sz": 429496.63,
		// "util": 42949671.96 (unsigned long / unsigned int wraparound).
		got := sysstatColumns(pair(t, nvmeA, nvmeReadDrop, 10*time.Second).Gauges)
		for _, col := range []string{"r/s", "rrqm/s", "rrqm", "r_await", "rareq-sz", "d_await", "aqu-sz", "util"} {
			assert.Zero(t, got[col], col)
		}
		assert.InDelta(t, 800.0, got["rkB/s"], 1e-9) // rd_sectors still grew
	})
	t.Run("32-bit tick field stepped back", func(t *testing.T) {
		// sysstat: "r_await": 42949671.96, i.e. (2^32 - 100) ms / 100 reads.
		got := sysstatColumns(pair(t, sdaA, sdaTicksBack, 10*time.Second).Gauges)
		assert.Zero(t, got["r_await"])
		assert.InDelta(t, 4.0, got["w_await"], 1e-9)
	})
}

func TestPlausibleDelta(t *testing.T) {
	tests := []struct {
		prev, cur uint32
		want      uint64
	}{
		{prev: 5, cur: 5, want: 0},
		{prev: 5, cur: 9, want: 4},
		{prev: 0, cur: 1<<31 - 1, want: 1<<31 - 1}, // forward: never read as a step back
		{prev: 1<<32 - 1, cur: 0, want: 1},         // wrap
		{prev: 1<<32 - 10, cur: 20, want: 30},      // wrap
		{prev: 1 << 31, cur: 0, want: 0},           // modular step 2^31: no plausible wrap…
		{prev: 1<<31 + 1, cur: 0, want: 1<<31 - 1}, // …one less is
		{prev: 2000, cur: 1900, want: 0},           // step back
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, plausibleDelta(tc.prev, tc.cur, wrapLimit-1), "%d -> %d", tc.prev, tc.cur)
	}
}

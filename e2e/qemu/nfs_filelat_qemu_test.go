package qemu

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/e2e/internal/e2ekit"
	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
)

// nfsReadHist is the filelat read histogram of the mount at mp in an export, with its type and
// device (ok false when the export has none: no read on the mount yet).
func nfsReadHist(md pmetric.Metrics, mp string) (h e2ekit.ExpHist, fstype, device string, ok bool) {
	pdatawalk.ForEachHistogramPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.ExponentialHistogramDataPoint) {
		a := dp.Attributes()
		p, _ := a.Get("system.filesystem.mountpoint")
		op, _ := a.Get("disk_health.file.operation")
		if m.Name() != "disk_health.filesystem.operation.duration" || p.Str() != mp || op.Str() != "read" {
			return
		}
		typ, _ := a.Get("system.filesystem.type")
		dev, _ := a.Get("system.device")
		h, fstype, device, ok = e2ekit.ExpHistOf(dp), typ.Str(), dev.Str(), true
	})
	return h, fstype, device, ok
}

// nfsHistPoints lists an export's histogram points as "metric{attributes} count".
func nfsHistPoints(md pmetric.Metrics) []string {
	var out []string
	pdatawalk.ForEachHistogramPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.ExponentialHistogramDataPoint) {
		out = append(out, fmt.Sprintf("%s%v %d", m.Name(), dp.Attributes().AsRaw(), dp.Count()))
	})
	return out
}

var nfsRsize = regexp.MustCompile(`(?:^|,)rsize=(\d+)`)

// nfsFileLatency (issue 35, "done when" 4): the filelat source on the guest's v3 mount, O_DIRECT
// reads of 64 KiB (at most the mount's rsize, so each read is one READ of the server and no read is
// answered from the page cache), a pass as the server is and a pass with netem delaying every packet
// the loopback interface sends (the READ's call and its reply each cross it once). Per pass, between
// the receiver's last export before it and its first export after it:
//   - the histogram counted every read, mountstats one READ per read;
//   - the histogram's mean (sum/count: each read(2), entry to return) is at least mountstats' mean
//     READ execute time (Δexecute/ΔREAD: each READ's RPC, from its start to its end), since the
//     read(2) encloses its one RPC; the difference is the client's own work per read, a fixed cost:
//     with the server delayed the two are within 10 %, without it (a READ under a millisecond) the
//     difference stays under 1 ms;
//   - with the delay the mean and the median rise by about twice the delay, one per crossing.
func nfsFileLatency(t *testing.T, b *vmproto.NFSBundle) {
	require.Len(t, b.ReadPasses, 2, "file latency passes")
	m := nfsMount(t, b, b.ReadMount)
	var means, medians [2]float64
	for i, p := range b.ReadPasses {
		h0, _, _, _ := nfsReadHist(unmarshalMetrics(t, p.Before), m.MountPoint)
		h1, fstype, device, ok := nfsReadHist(unmarshalMetrics(t, p.After), m.MountPoint)
		require.True(t, ok, "pass %d: the export after the reads has no read histogram for %s; its histograms: %v", i, m.MountPoint, nfsHistPoints(unmarshalMetrics(t, p.After)))
		assert.Equal(t, "nfs", fstype, "the mount's system.filesystem.type")
		assert.Equal(t, m.Source, device, "the mount's system.device")
		d := h1.Sub(h0)

		s0, s1 := parseNFSStats(t, p.MountstatsBefore), parseNFSStats(t, p.MountstatsAfter)
		before, after := s0[m.MountPoint], s1[m.MountPoint]
		require.NotNil(t, before, "mountstats before the pass has no %s", m.MountPoint)
		require.NotNil(t, after, "mountstats after the pass has no %s", m.MountPoint)
		rs := nfsRsize.FindStringSubmatch(after.opts)
		require.NotNil(t, rs, "rsize in the mount's options %q", after.opts)
		rsize, _ := strconv.Atoi(rs[1])
		require.LessOrEqual(t, p.ReadSize, rsize, "each read is at most one READ")
		r0, r1 := before.ops["READ"], after.ops["READ"]
		require.True(t, len(r0) >= 8 && len(r1) >= 8, "mountstats' READ lines: %v, %v", r0, r1)
		reads, exeMS := r1[0]-r0[0], r1[7]-r0[7]

		mean := d.Sum / float64(d.Count) * 1e3
		exe := float64(exeMS) / float64(reads)
		means[i], medians[i] = mean, e2ekit.LowerBound(d.Buckets, d.Count, 0.5)*1e3
		pct := 100 * (mean - exe) / exe
		t.Logf("delay %.0f ms a crossing: %d reads of %d B (rsize %d) in %.2f s; filelat %d reads, mean %.3f ms, median bucket ≥ %.3f ms; mountstats %d READs, mean execute %.3f ms (%d ms); filelat/mountstats %.4f (%+.2f %%)",
			p.Delay*1e3, p.Reads, p.ReadSize, rsize, p.Seconds, d.Count, mean, medians[i], reads, exe, exeMS, mean/exe, pct)
		assert.Equal(t, uint64(p.Reads), d.Count, "every read in the mount's histogram")
		assert.Equal(t, uint64(p.Reads), reads, "one READ per read")
		// mountstats' execute ms is the floor of a cumulative ns sum: ±1 ms on the difference.
		digit := 1 / float64(reads)
		assert.GreaterOrEqual(t, mean, exe-digit, "a read(2) encloses its READ")
		if p.Delay > 0 {
			assert.InDelta(t, exe, mean, 0.1*exe+digit, "with the server delayed, the histogram's mean within 10 %% of mountstats' mean READ execute time")
		} else {
			// A READ over loopback is under a millisecond here: the client's own work per read(2)
			// (entry and return, pinning the buffer, waking the reader; 0.22 ms measured under TCG)
			// is a quarter of it.
			assert.Less(t, mean-exe, 1.0, "the client's own work per read under 1 ms")
		}
	}
	delay := 2 * b.ReadPasses[1].Delay * 1e3 // ms: a call and a reply
	rise, medianRise := means[1]-means[0], medians[1]-medians[0]
	t.Logf("with netem's %.0f ms a crossing (%.0f ms a READ): mean %.3f → %.3f ms (+%.3f ms), median bucket %.3f → %.3f ms (+%.3f ms)",
		delay/2, delay, means[0], means[1], rise, medians[0], medians[1], medianRise)
	// netem holds each packet at least its delay; the rise is that and some, never less.
	assert.GreaterOrEqual(t, rise, delay, "the mean rises by at least the delay")
	assert.Less(t, rise, 1.25*delay, "the mean rises by about the delay")
	// The median's bucket is 9 % wide (scale 3): the bucket holding the delay starts at most a bucket
	// below it.
	assert.GreaterOrEqual(t, medians[1], math.Max(delay*math.Exp2(-1.0/8), medians[0]), "the median rises past the delay")
}

// folioCounts is what the filelat source exported of the read series of the mount at mp: bytes, page-
// cache hits and misses, calls; the mount's type.
type folioCounts struct {
	bytes, hits, misses int64
	calls               uint64
	fstype              string
}

func folioCountsOf(md pmetric.Metrics, mp string) folioCounts {
	var c folioCounts
	pdatawalk.ForEachNumberPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		a := dp.Attributes()
		if p, _ := a.Get("system.filesystem.mountpoint"); p.Str() != mp {
			return
		}
		switch m.Name() {
		case "disk_health.filesystem.io":
			if d, _ := a.Get("disk.io.direction"); d.Str() == "read" {
				c.bytes = dp.IntValue()
			}
		case "disk_health.filesystem.page_cache.pages":
			switch r, _ := a.Get("disk_health.page_cache.result"); r.Str() {
			case "hit":
				c.hits = dp.IntValue()
			case "miss":
				c.misses = dp.IntValue()
			}
		}
	})
	h, fstype, _, _ := nfsReadHist(md, mp)
	c.calls, c.fstype = h.Count, fstype
	return c
}

// nfsLargeFolios: on 6.1 a large folio's order is folio->_folio_order, not _flags_1's low byte as
// since 6.6 (where the host's TestColdAndWarmReadsOnLoopExt4 counts misses). The guest's XFS caches a
// 64 MiB file in large folios (readahead's, read with 1 MiB read(2) calls after a fresh mount); a cold
// pass must count each of its pages as a miss once, a folio of order n as 2^n pages, and a warm pass
// each as a hit. A probe counting a large folio as one page has fewer misses than pages, and the
// rest as hits.
func nfsLargeFolios(t *testing.T, b *vmproto.NFSBundle) {
	f := b.Folio
	require.Len(t, f.Passes, 2, "large-folio passes")
	pages := int64(f.Size / 4096)
	var folios, large, inFolios int
	for order, n := range f.Orders {
		folios += n
		inFolios += n << order
		if order > 0 {
			large += n
		}
	}
	t.Logf("the file's %d pages after the passes: %d folios by order %v (%d large); the part took %.1f s",
		pages, folios, f.Orders, large, f.Seconds)
	require.Equal(t, int(pages), inFolios, "every page of the file cached, in one folio each")
	require.Positive(t, large, "the XFS page cache holds the file in large folios")
	for _, p := range f.Passes {
		c0, c1 := folioCountsOf(unmarshalMetrics(t, p.Before), f.MountPoint), folioCountsOf(unmarshalMetrics(t, p.After), f.MountPoint)
		bytes, hits, misses, calls := c1.bytes-c0.bytes, c1.hits-c0.hits, c1.misses-c0.misses, c1.calls-c0.calls
		t.Logf("%s: %d read(2) calls, %d B in %.2f s; filelat %d calls, %d B, pages %d: hits %d, misses %d",
			p.Name, p.Calls, p.Bytes, p.Seconds, calls, bytes, hits+misses, hits, misses)
		assert.Equal(t, "xfs", c1.fstype, "%s: the mount's system.filesystem.type", p.Name)
		require.Equal(t, f.Size, p.Bytes, "%s: the guest read the whole file", p.Name)
		assert.Equal(t, uint64(p.Calls), calls, "%s: calls", p.Name)
		assert.Equal(t, int64(p.Bytes), bytes, "%s: bytes", p.Name)
		if p.Name == "cold" {
			assert.Equal(t, pages, misses, "cold: each page a miss, once (a folio of order n is 2^n pages)")
			assert.Zero(t, hits, "cold: no hits")
		} else {
			assert.Equal(t, pages, hits, "warm: each page a hit")
			assert.Zero(t, misses, "warm: no misses")
		}
	}
}

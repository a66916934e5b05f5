package latencyscraper

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/noisy"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper/internal/metadata"
)

// requests is n requests at the top of the bucket at offset (−80: about 1 ms, −56: about 7.8 ms).
func requests(n uint64, offset int32) biolat.Histogram {
	return biolat.Histogram{Offset: offset, Buckets: []uint64{n}, Count: n, Sum: float64(n) * math.Exp2(float64(offset+1)/8)}
}

// noisyPoints is each disk_health.container.disk.noisy_neighbor point's attributes and value.
func noisyPoints(md pmetric.Metrics) []map[string]any {
	var out []map[string]any
	for i := range md.ResourceMetrics().Len() {
		ms := md.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			if m := ms.At(j); m.Name() == "disk_health.container.disk.noisy_neighbor" {
				for k := range m.Gauge().DataPoints().Len() {
					dp := m.Gauge().DataPoints().At(k)
					a := dp.Attributes().AsRaw()
					a["value"] = dp.DoubleValue()
					out = append(out, a)
				}
			}
		}
	}
	return out
}

// noisyScraper is a scraper with per_cgroup on over a fake cgroup v2 tree holding the pod's container
// and /B on sda, whose probe serves the cumulative histograms scrape is given.
type noisyScraper struct {
	t      *testing.T
	s      *latencyScraper
	cp     *fakeCgroupProbe
	c      *clock
	sink   *consumertest.LogsSink
	cgroup string // the hierarchy's directory
}

func newNoisyScraper(t *testing.T) *noisyScraper {
	root, cg := fakeCgroupRoot(t, podPath, "/B")
	cfg := createDefaultConfig()
	cfg.RootPath = root
	cfg.PerCgroup.Enabled = true
	require.NoError(t, cfg.Validate("latency"))
	p := &fakeProbe{started: t0, snap: sampleSnapshot()}
	n := &noisyScraper{t: t, cp: &fakeCgroupProbe{started: t0, hists: map[string]biolat.Histogram{}}, c: &clock{t0},
		sink: new(consumertest.LogsSink), cgroup: cg}
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, fakeOpener(p, new(biolat.Options)), n.c.now)
	require.NoError(t, err)
	s.sink = n.sink
	s.openCgroups = func(biolat.CgroupOptions) (cgroupProbe, error) { return n.cp, nil }
	require.NoError(t, s.start(t.Context(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
	n.s = s
	return n
}

// scrape adds the interval's requests of the victim and the aggressor, 2 s later, and returns the
// disk_health.container.disk.noisy_neighbor points.
func (n *noisyScraper) scrape(victim, aggressor biolat.Histogram) []map[string]any {
	n.cp.hists[podPath] = n.cp.hists[podPath].Add(victim)
	n.cp.hists["/B"] = n.cp.hists["/B"].Add(aggressor)
	n.c.t = n.c.t.Add(2 * time.Second)
	md, err := n.s.scrape(n.t.Context())
	require.NoError(n.t, err)
	return noisyPoints(md)
}

// The pod's container reads about 1 ms per request alone for the warm-up; then /B writes 1000
// requests an interval and the container's reads take 7.8 ms: one disk_health.noisy_neighbor event
// naming /B with its share, the gauge at 1 on the victim's identity while it lasts; with /B idle
// again, after three intervals one cleared event and the gauge at 0, then no point.
func TestScrapeNoisyNeighbor(t *testing.T) {
	n := newNoisyScraper(t)
	scrape, sink := n.scrape, n.sink
	for range 10 {
		require.Empty(t, scrape(requests(40, -80), biolat.Histogram{}))
	}
	require.Zero(t, sink.LogRecordCount())

	victim, aggressor := requests(40, -56), requests(1000, -80)
	share := aggressor.Sum / (aggressor.Sum + victim.Sum)
	for i := range 4 {
		got := scrape(victim, aggressor)
		require.Len(t, got, 1)
		require.Equal(t, podPath, got[0]["cgroup.path"])
		require.Equal(t, "sda", got[0]["system.device"])
		require.Equal(t, podUID, got[0]["k8s.pod.uid"])
		require.Equal(t, container, got[0]["container.id"])
		require.NotEmpty(t, got[0]["hw.id"])
		require.Equal(t, "/B", got[0]["noisy_neighbor.aggressor.cgroup.path"])
		require.NotContains(t, got[0], "noisy_neighbor.aggressor.share", "a number is a value, never an attribute")
		require.InDelta(t, share, got[0]["value"], 0.005)
		require.Equal(t, math.Round(share*100)/100, got[0]["value"], "to two decimals, fixed for the episode")
		require.Equal(t, 1, sink.LogRecordCount(), "one event per episode (interval %d)", i)
	}
	lr := sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	a := lr.Attributes().AsRaw()
	require.Equal(t, "disk_health.noisy_neighbor", lr.EventName())
	require.Equal(t, podPath, a["cgroup.path"])
	require.Equal(t, "sda", a["system.device"])
	require.Equal(t, podUID, a["k8s.pod.uid"])
	require.Equal(t, []any{"/B"}, a["noisy_neighbor.aggressor.cgroup.paths"])
	require.InDelta(t, share, a["noisy_neighbor.aggressor.shares"].([]any)[0], 1e-9)
	require.InDelta(t, 1-share, a["noisy_neighbor.victim.share"], 1e-9)
	require.InDelta(t, math.Exp2(-55.0/8), a["noisy_neighbor.victim.latency"], 1e-12)
	require.InDelta(t, math.Exp2(-79.0/8), a["noisy_neighbor.victim.baseline"], 1e-12)
	require.Equal(t, "WARN", lr.SeverityText())
	require.Contains(t, lr.Body().Str(), "waits on sda")
	require.Contains(t, lr.Body().Str(), "/B (")

	for range 2 {
		got := scrape(requests(40, -80), biolat.Histogram{})
		require.Len(t, got, 1, "held through the hysteresis")
	}
	got := scrape(requests(40, -80), biolat.Histogram{})
	require.Len(t, got, 1)
	require.Equal(t, 0.0, got[0]["value"], "the closing point")
	require.Equal(t, 2, sink.LogRecordCount())
	lr = sink.AllLogs()[1].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	require.Equal(t, "disk_health.noisy_neighbor.cleared", lr.EventName())
	require.Equal(t, "INFO", lr.SeverityText())
	require.Empty(t, scrape(requests(40, -80), biolat.Histogram{}))
}

// On cgroup v2 the victim's io.pressure stall is a signal too: its latency stays at its baseline, but
// it stalls 1 s of a 2 s interval (against a baseline of none) while /B holds the device: one event,
// with the stall and its floored baseline.
func TestScrapeNoisyNeighborStall(t *testing.T) {
	n := newNoisyScraper(t)
	total := uint64(5_000_000)
	psi := func() {
		require.NoError(t, os.WriteFile(filepath.Join(n.cgroup, podPath, "io.pressure"), fmt.Appendf(nil,
			"some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n", total, total), 0o644))
	}
	for range 12 {
		psi()
		require.Empty(t, n.scrape(requests(40, -80), biolat.Histogram{}))
	}
	total += 1_000_000
	psi()
	got := n.scrape(requests(40, -80), requests(1000, -80))
	require.Len(t, got, 1)
	require.Equal(t, 1, n.sink.LogRecordCount())
	a := n.sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().AsRaw()
	require.InDelta(t, 0.5, a["noisy_neighbor.victim.stall"], 1e-9)
	require.InDelta(t, noisy.StallFloor/10, a["noisy_neighbor.victim.stall_baseline"], 1e-12)
	require.InDelta(t, a["noisy_neighbor.victim.baseline"], a["noisy_neighbor.victim.latency"], 1e-12, "not the latency")

	// A bad io.pressure is that cgroup's error, the scrape goes on.
	require.NoError(t, os.WriteFile(filepath.Join(n.cgroup, podPath, "io.pressure"), []byte("bogus\n"), 0o644))
	n.cp.hists[podPath] = n.cp.hists[podPath].Add(requests(40, -80))
	n.c.t = n.c.t.Add(2 * time.Second)
	md, err := n.s.scrape(t.Context())
	require.ErrorContains(t, err, "io.pressure")
	require.Len(t, noisyPoints(md), 1)
}

package latencyscraper

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/latencyscraper/internal/metadata"
)

// fakeCgroupProbe serves reads on sda per cgroup path, for the paths the live hierarchy has, and an
// Other count; opts is what it was opened with.
type fakeCgroupProbe struct {
	started time.Time
	reads   map[string]uint64
	// hists, where set for a path, replaces its reads' 1 ms requests.
	hists  map[string]biolat.Histogram
	other  uint64
	opts   biolat.CgroupOptions
	closed bool
}

func (p *fakeCgroupProbe) Started() time.Time { return p.started }
func (p *fakeCgroupProbe) Close() error       { p.closed = true; return nil }
func (p *fakeCgroupProbe) Collect(live func() (map[uint64]string, error)) (biolat.CgroupSnapshot, error) {
	ids, err := live()
	if err != nil {
		return biolat.CgroupSnapshot{}, err
	}
	var s biolat.CgroupSnapshot
	for id, path := range ids {
		if h, ok := p.hists[path]; ok {
			s.Cgroups = append(s.Cgroups, biolat.CgroupSeries{CgroupID: id, Path: path, Dev: sda, Direction: biolat.Read, Histogram: h, Bytes: 4096 * h.Count})
		} else if n, ok := p.reads[path]; ok {
			s.Cgroups = append(s.Cgroups, biolat.CgroupSeries{CgroupID: id, Path: path, Dev: sda, Direction: biolat.Read, Histogram: histOf(n), Bytes: 4096 * n})
		}
	}
	s.Other = []biolat.CgroupSeries{{Dev: sda, Direction: biolat.Read, Histogram: histOf(p.other), Bytes: 4096 * p.other}}
	return s, nil
}

// fakeCgroupRoot is a fake root with sda and a cgroup v2 tree (io among its controllers) holding
// paths; it returns the root and the tree's directory.
func fakeCgroupRoot(t *testing.T, paths ...string) (root, dir string) {
	root = fakeRoot(t, "sda")
	dir = filepath.Join(root, "sys/fs/cgroup")
	for _, d := range paths {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpu io memory\n"), 0o644))
	return root, dir
}

const (
	podUID    = "0c6f9d7a-1b2c-4d5e-8f90-a1b2c3d4e5f6"
	container = "4f5e6d7c8b9a0f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0"
	podPath   = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0c6f9d7a_1b2c_4d5e_8f90_a1b2c3d4e5f6.slice/cri-containerd-" + container + ".scope"
)

// With per_cgroup on and top_n 2, the two busiest cgroups on sda get their own series (the pod's
// container with its pod uid and container id), the third and the probe's Other are one "other"
// series; the occupancy shares of the device add up to 1 and the bytes follow the requests.
func TestScrapePerCgroup(t *testing.T) {
	root, _ := fakeCgroupRoot(t, podPath, "/system.slice/a.service", "/system.slice/b.service")

	cfg := createDefaultConfig()
	cfg.RootPath = root
	cfg.PerCgroup.Enabled, cfg.PerCgroup.TopN, cfg.PerCgroup.MaxCgroups = true, 2, 64
	require.NoError(t, cfg.Validate("latency"))
	p := &fakeProbe{started: t0, snap: sampleSnapshot()}
	cp := &fakeCgroupProbe{started: t0, reads: map[string]uint64{podPath: 30, "/system.slice/a.service": 20, "/system.slice/b.service": 5}, other: 1}
	c := &clock{t0.Add(time.Minute)}
	var got biolat.Options
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, fakeOpener(p, &got), c.now)
	require.NoError(t, err)
	s.openCgroups = func(o biolat.CgroupOptions) (cgroupProbe, error) { cp.opts = o; return cp, nil }
	require.NoError(t, s.start(t.Context(), componenttest.NewNopHost()))
	require.Equal(t, biolat.CgroupOptions{MaxCgroups: 64, MaxDevices: 64}, cp.opts)

	md, err := s.scrape(t.Context())
	require.NoError(t, err)
	hists := map[string]uint64{}
	shares := map[string]float64{}
	bytes := map[string]int64{}
	attrs := map[string]map[string]any{}
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := range ms.Len() {
		m := ms.At(i)
		switch m.Name() {
		case "disk_health.container.disk.operation.duration":
			for j := range m.ExponentialHistogram().DataPoints().Len() {
				dp := m.ExponentialHistogram().DataPoints().At(j)
				path, _ := dp.Attributes().Get("cgroup.path")
				hists[path.Str()] = dp.Count()
				attrs[path.Str()] = dp.Attributes().AsRaw()
				require.Equal(t, t0.UnixNano(), dp.StartTimestamp().AsTime().UnixNano())
			}
		case "disk_health.container.disk.occupancy.share":
			for j := range m.Gauge().DataPoints().Len() {
				dp := m.Gauge().DataPoints().At(j)
				path, _ := dp.Attributes().Get("cgroup.path")
				shares[path.Str()] = dp.DoubleValue()
			}
		case "disk_health.container.disk.operation.io":
			require.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality())
			for j := range m.Sum().DataPoints().Len() {
				dp := m.Sum().DataPoints().At(j)
				path, _ := dp.Attributes().Get("cgroup.path")
				bytes[path.Str()] = dp.IntValue()
			}
		}
	}
	require.Equal(t, map[string]uint64{podPath: 30, "/system.slice/a.service": 20, otherPath: 6}, hists)
	require.Equal(t, map[string]int64{podPath: 30 * 4096, "/system.slice/a.service": 20 * 4096, otherPath: 6 * 4096}, bytes)
	require.InDelta(t, 30.0/56, shares[podPath], 1e-9)
	require.InDelta(t, 20.0/56, shares["/system.slice/a.service"], 1e-9)
	require.InDelta(t, 6.0/56, shares[otherPath], 1e-9)
	require.Equal(t, map[string]any{"cgroup.path": podPath, "system.device": "sda", "disk.io.direction": "read",
		"hw.id": attrs[podPath]["hw.id"], "k8s.pod.uid": podUID, "container.id": container}, attrs[podPath])
	require.NotEmpty(t, attrs[podPath]["hw.id"])
	require.NotContains(t, attrs[otherPath], "k8s.pod.uid")
	dhtest.AssertGolden(t, "per-cgroup", md)

	// A minute later each cgroup has read more: the same series, from the same start.
	cp.reads = map[string]uint64{podPath: 70, "/system.slice/a.service": 32, "/system.slice/b.service": 9}
	cp.other = 3
	c.t = c.t.Add(time.Minute)
	md, err = s.scrape(t.Context())
	require.NoError(t, err)
	dhtest.AssertGolden(t, "per-cgroup-next", md)

	require.NoError(t, s.shutdown(t.Context()))
	require.True(t, cp.closed)
}

// Per-cgroup latency off (the default): the per-cgroup probe is never opened.
func TestPerCgroupOffByDefault(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.RootPath = fakeRoot(t, "sda")
	require.False(t, cfg.PerCgroup.Enabled)
	p := &fakeProbe{started: t0, snap: sampleSnapshot()}
	var got biolat.Options
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, fakeOpener(p, &got), (&clock{t0}).now)
	require.NoError(t, err)
	s.openCgroups = func(biolat.CgroupOptions) (cgroupProbe, error) {
		t.Fatal("opened")
		return nil, nil
	}
	require.NoError(t, s.start(t.Context(), componenttest.NewNopHost()))
	require.NoError(t, s.shutdown(t.Context()))
}

func TestPerCgroupConfigBounds(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.PerCgroup = PerCgroupConfig{TopN: 0, MaxCgroups: 0}
	err := cfg.Validate("latency")
	require.ErrorContains(t, err, "latency.per_cgroup.top_n: 0 is out of range, want 1 to 1000")
	require.ErrorContains(t, err, "latency.per_cgroup.max_cgroups: 0 is out of range, want top_n (or 1) to 65536")
	cfg.PerCgroup = PerCgroupConfig{TopN: 20, MaxCgroups: 10}
	require.ErrorContains(t, cfg.Validate("latency"), "latency.per_cgroup.max_cgroups: 10 is out of range")
}

// The verdict's thresholds are checked with their full keys; the defaults pass.
func TestNoisyNeighborConfigBounds(t *testing.T) {
	cfg := createDefaultConfig()
	require.NoError(t, cfg.Validate("latency"))
	require.Equal(t, NoisyNeighborConfig{Enabled: true, K: 3, Share: 0.5, MinVictimIOs: 20}, cfg.PerCgroup.NoisyNeighbor)
	cfg.PerCgroup.NoisyNeighbor = NoisyNeighborConfig{K: 1, Share: 50, MinVictimIOs: 0}
	err := cfg.Validate("latency")
	require.ErrorContains(t, err, "latency.per_cgroup.noisy_neighbor.k: 1 is out of range, want 1.1 to 1000")
	require.ErrorContains(t, err, "latency.per_cgroup.noisy_neighbor.share: 50 is out of range, want more than 0 and at most 1 (a ratio, not a percentage)")
	require.ErrorContains(t, err, "latency.per_cgroup.noisy_neighbor.min_victim_ios: 0 is out of range, want 1 to 1000000")
	cfg.PerCgroup.NoisyNeighbor = NoisyNeighborConfig{K: math.NaN(), Share: 0.5, MinVictimIOs: 20}
	require.ErrorContains(t, cfg.Validate("latency"), "latency.per_cgroup.noisy_neighbor.k: NaN is out of range")
}

// A pod that pauses its I/O keeps its series: scrape after idle scrape, its point has the same start
// and count, while a less busy cgroup stays in other; its series never restarts.
func TestScrapeIdleCgroupKeepsStart(t *testing.T) {
	root, _ := fakeCgroupRoot(t, podPath, "/system.slice/a.service")
	cfg := createDefaultConfig()
	cfg.RootPath = root
	cfg.PerCgroup.Enabled, cfg.PerCgroup.TopN = true, 1
	p := &fakeProbe{started: t0, snap: sampleSnapshot()}
	cp := &fakeCgroupProbe{started: t0, reads: map[string]uint64{podPath: 30}}
	c := &clock{t0.Add(time.Minute)}
	var got biolat.Options
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, fakeOpener(p, &got), c.now)
	require.NoError(t, err)
	s.openCgroups = func(biolat.CgroupOptions) (cgroupProbe, error) { return cp, nil }
	require.NoError(t, s.start(t.Context(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, s.shutdown(t.Context())) }()

	type point struct {
		count uint64
		start time.Time
	}
	scrape := func() map[string]point {
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		out := map[string]point{}
		ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
		for i := range ms.Len() {
			if ms.At(i).Name() != "disk_health.container.disk.operation.duration" {
				continue
			}
			dps := ms.At(i).ExponentialHistogram().DataPoints()
			for j := range dps.Len() {
				path, _ := dps.At(j).Attributes().Get("cgroup.path")
				out[path.Str()] = point{dps.At(j).Count(), dps.At(j).StartTimestamp().AsTime()}
			}
		}
		return out
	}
	require.Equal(t, point{30, t0}, scrape()[podPath])
	for k := range uint64(4) {
		cp.reads["/system.slice/a.service"] = 3 * (k + 1)
		c.t = c.t.Add(time.Minute)
		pts := scrape()
		require.Equal(t, point{30, t0}, pts[podPath], "idle scrape %d", k+1)
		require.Equal(t, 3*(k+1), pts[otherPath].count)
	}
	cp.reads[podPath] = 45
	c.t = c.t.Add(time.Minute)
	require.Equal(t, point{45, t0}, scrape()[podPath])
}

package latencyscraper

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
)

// kernelDev models one device as blk_account_io_done accounts it: a completion first reaches the
// tracepoint (the histogram counts it, or the program is missed: uncounted, or skipped: not_run), and
// only then diskstats counts it.
type kernelDev struct {
	d, h    uint64 // diskstats' and the histograms' counts
	between int    // completions past the tracepoint, not yet in diskstats
	missed  uint64 // completions no count of the probe saw

	// At the baseline (set once update has taken one): missed then, completions between the
	// tracepoint and diskstats at the D0 read (w0), and histogram counts between the H0 and D0 reads (e0).
	based   bool
	missed0 uint64
	w0, e0  uint64
}

type kernelModel struct {
	rng    *rand.Rand
	devs   map[biolat.Dev]*kernelDev
	notRun uint64
	// notRunP is the chance that a completion's program run is skipped (not_run), missP that it is missed.
	notRunP, missP float64
}

// step lets one thing happen on a random device: a completion reaches its tracepoint (at most 32
// between the two steps, a queue depth), or one reaches diskstats.
func (m *kernelModel) step(devs []biolat.Dev) {
	k := m.devs[devs[m.rng.IntN(len(devs))]]
	if k.between > 0 && (k.between >= 32 || m.rng.IntN(2) == 0) {
		k.between--
		k.d++
		return
	}
	k.between++
	switch r := m.rng.Float64(); {
	case r < m.missP:
		k.missed++
	case r < m.missP+m.notRunP:
		m.notRun++
	default:
		k.h++
	}
}

func (m *kernelModel) steps(devs []biolat.Dev, n int) {
	for range n {
		m.step(devs)
	}
}

// scrape reads as the scraper does, with the model running between the reads: diskstats, then the
// maps (and the host-wide reasons), then for devices without a baseline diskstats again.
func (m *kernelModel) scrape(u *uncounted, devs []biolat.Dev, maxSteps int) uint64 {
	obs := map[biolat.Dev]deviceCompletions{}
	for _, d := range devs {
		obs[d] = deviceCompletions{D: m.devs[d].d}
	}
	m.steps(devs, m.rng.IntN(maxSteps+1))
	need := map[biolat.Dev]bool{}
	for _, d := range devs {
		c := obs[d]
		c.H = m.devs[d].h
		obs[d] = c
		if u.needsBaseline(d, c) {
			need[d] = true
		}
	}
	other := m.notRun
	if len(need) > 0 {
		m.steps(devs, m.rng.IntN(maxSteps+1))
		for _, d := range devs {
			if c, k := obs[d], m.devs[d]; need[d] {
				c.D0, c.Fresh = k.d, true
				obs[d] = c
				k.based, k.missed0, k.w0, k.e0 = true, k.missed, uint64(k.between), k.h-c.H
			}
		}
	}
	return u.update(obs, other)
}

func (m *kernelModel) quiet(devs []biolat.Dev) {
	for _, d := range devs {
		k := m.devs[d]
		k.d += uint64(k.between)
		k.between = 0
	}
}

// Under every interleaving of completions and reads the model allows, the reason never exceeds the
// completions really missed since the baselines (but for those caught mid-accounting at a baseline's
// read, w0), never goes down, and once the devices are quiet equals exactly what was missed when the
// baselines were taken on a still moment.
func TestUncountedInterleavings(t *testing.T) {
	a, b := biolat.Dev{Major: 7, Minor: 0}, biolat.Dev{Major: 7, Minor: 1}
	exact := 0
	for seed := range uint64(300) {
		m := &kernelModel{
			rng:   rand.New(rand.NewPCG(seed, 31)),
			devs:  map[biolat.Dev]*kernelDev{a: {}, b: {}},
			missP: []float64{0, 0.01, 0.2}[seed%3],
		}
		if seed%2 == 1 {
			m.notRunP = 0.01
		}
		u := newUncounted()
		devs := []biolat.Dev{a}
		var last uint64
		for i := range 40 {
			if i == 10 {
				devs = append(devs, b) // a device that appears after the probe attached
			}
			m.steps(devs, m.rng.IntN(200))
			maxSteps := 3
			if seed%4 < 2 && (i == 0 || i == 10) { // a baseline taken on a still moment
				m.quiet(devs)
				maxSteps = 0
			}
			got := m.scrape(u, devs, maxSteps)
			require.GreaterOrEqual(t, got, last, "seed %d scrape %d: monotonic", seed, i)
			last = got
			var bound uint64
			for _, d := range devs {
				if k := m.devs[d]; k.based {
					bound += k.missed - k.missed0 + k.w0
				}
			}
			require.LessOrEqual(t, got, bound, "seed %d scrape %d: never more than was missed", seed, i)
		}
		m.quiet(devs)
		got := m.scrape(u, devs, 0)
		var want uint64
		clean := m.notRunP == 0
		for _, d := range devs {
			k := m.devs[d]
			want += k.missed - k.missed0
			clean = clean && k.w0 == 0 && k.e0 == 0
		}
		if clean {
			require.Equal(t, want, got, "seed %d: exact once quiet", seed)
			exact++
		}
	}
	require.Positive(t, exact, "some runs took their baselines on a still moment")
}

// A scrape on a quiet device after a load reports exactly what was missed since a baseline taken
// while idle, though a mid-load scrape (diskstats read before the maps) saw less.
func TestUncountedExactWhenQuiet(t *testing.T) {
	dev := biolat.Dev{Major: 7, Minor: 3}
	u := newUncounted()
	assert.Zero(t, u.update(map[biolat.Dev]deviceCompletions{dev: {D: 100, H: 0, D0: 100, Fresh: true}}, 0), "baseline")
	// Mid-load: diskstats read at 1 000 completions, the maps later at 1 030 of which 32 missed.
	assert.Equal(t, uint64(0), u.update(map[biolat.Dev]deviceCompletions{dev: {D: 1100, H: 1030}}, 0))
	// Quiet: 2 000 completions, 1 968 in the histograms.
	assert.Equal(t, uint64(32), u.update(map[biolat.Dev]deviceCompletions{dev: {D: 2100, H: 1968}}, 0))
	assert.Equal(t, uint64(32), u.update(map[biolat.Dev]deviceCompletions{dev: {D: 2100, H: 1968}}, 0), "stays")
}

// not_run and histograms_full are host-wide and already dropped reasons: the completions they hold
// are not reported again, and one on another device can only hide as many here.
func TestUncountedLessOtherReasons(t *testing.T) {
	dev := biolat.Dev{Major: 8, Minor: 0}
	u := newUncounted()
	u.update(map[biolat.Dev]deviceCompletions{dev: {D0: 50, Fresh: true}}, 4)
	assert.Equal(t, uint64(3), u.update(map[biolat.Dev]deviceCompletions{dev: {D: 60, H: 5}}, 6), "5 missed, 2 of them not_run")
	assert.Equal(t, uint64(3), u.update(map[biolat.Dev]deviceCompletions{dev: {D: 70, H: 15}}, 9), "never less")
}

// A device that leaves is freed, and what it showed stays in the counter; one that comes back under
// the same number (counters restarted: a hot-swap, or hw.id or diskseq changed and the probe forgot
// its series), or whose counters wrapped at 2^32 on a 32-bit kernel, starts a new baseline.
func TestUncountedDevicesLeaveAndRestart(t *testing.T) {
	a, b := biolat.Dev{Major: 8, Minor: 0}, biolat.Dev{Major: 8, Minor: 16}
	u := newUncounted()
	u.update(map[biolat.Dev]deviceCompletions{a: {D0: 10, Fresh: true}, b: {D0: 1<<32 - 5, H: 7, Fresh: true}}, 0)
	assert.Equal(t, uint64(5), u.update(map[biolat.Dev]deviceCompletions{a: {D: 20, H: 5}, b: {D: 1<<32 - 3, H: 9}}, 0))

	assert.Equal(t, uint64(5), u.update(map[biolat.Dev]deviceCompletions{b: {D: 1<<32 - 2, H: 10}}, 0), "a left")
	assert.NotContains(t, u.devs, a, "its state is freed")

	// a is back with new counters: a new baseline, which this scrape could not read yet.
	back := deviceCompletions{D: 3, H: 1}
	assert.True(t, u.needsBaseline(a, back))
	assert.Equal(t, uint64(5), u.update(map[biolat.Dev]deviceCompletions{a: back, b: {D: 1<<32 - 2, H: 10}}, 0))
	assert.NotContains(t, u.devs, a, "no baseline without a fresh read")

	// b's diskstats wrapped (32-bit) and the probe forgot nothing: a step back, a new baseline.
	wrapped := deviceCompletions{D: 4, H: 17, D0: 5, Fresh: true}
	assert.True(t, u.needsBaseline(b, wrapped))
	assert.Equal(t, uint64(5), u.update(map[biolat.Dev]deviceCompletions{a: {D: 3, H: 1, D0: 3, Fresh: true}, b: wrapped}, 0))
	assert.Equal(t, uint64(7), u.update(map[biolat.Dev]deviceCompletions{a: {D: 13, H: 10}, b: {D: 15, H: 26}}, 0),
		"1 on a and 1 on b since their new baselines, on top of 5")

	// The probe forgot b's series (its identity changed): H went back, a new baseline.
	assert.True(t, u.needsBaseline(b, deviceCompletions{D: 20, H: 0}))
}

// The scraper reads /proc/diskstats before the probe's maps: completions that reach diskstats while
// the maps are read (in the histograms only at the next read) are never taken for misses. Missed
// completions become the reason uncounted, less those not_run shows, and the device's histograms'
// Δcount plus Δ(not_run + uncounted) is diskstats' Δ once it is quiet.
func TestScrapeUncounted(t *testing.T) {
	root := fakeRoot(t, "sda", "dm-0")
	writes := uint64(20) // sda's in the fixture
	setWrites := func(n uint64) {
		writes = n
		line := fmt.Sprintf("   8       0 sda 10 0 80 5 %d 0 160 9 0 14 14 1 0 8 3 2 1\n", n)
		dm := " 252       0 dm-0 3 0 24 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
		require.NoError(t, os.WriteFile(filepath.Join(root, "proc/diskstats"), []byte(line+dm), 0o644))
	}
	p := &fakeProbe{started: t0, snap: sampleSnapshot()}
	sdaWrites := func(n uint64) { // completions the histograms count
		for i := range p.snap.Series {
			if x := &p.snap.Series[i]; x.Dev == sda && x.Direction == biolat.Write && x.Kind == biolat.Total {
				x.Histogram.ZeroCount += n
				x.Histogram.Count += n
			}
		}
	}
	cfg := createDefaultConfig()
	cfg.RootPath = root
	var opts biolat.Options
	s, _ := newTestScraper(t, cfg, fakeOpener(p, &opts), &clock{t0.Add(time.Minute)})
	scrape := func() map[string]int64 {
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		return dropped(t, md)
	}
	sdaCount := func() (n uint64) {
		for _, x := range p.snap.Series {
			if x.Dev == sda && x.Kind == biolat.Total {
				n += x.Histogram.Count
			}
		}
		return n
	}
	writes0, count0 := writes, sdaCount()
	assert.Zero(t, scrape()["uncounted"], "the baseline")

	setWrites(writes + 4 + 3) // 4 counted, 3 missed: 1 not_run, 2 uncounted
	sdaWrites(4)
	p.snap.Drops.NotRun++
	late := uint64(5) // done while the maps are read: diskstats has them, the histograms only next time
	p.collecting = func() { setWrites(writes + late); p.collecting = func() { sdaWrites(late) } }
	assert.Equal(t, int64(2), scrape()["uncounted"])
	d := scrape()
	assert.Equal(t, map[string]int64{"no_start_time": 5, "histograms_full": 0, "errors_full": 1, "no_issue_time": 7, "not_run": 3, "uncounted": 2}, d)
	assert.Equal(t, writes-writes0, sdaCount()-count0+uint64(d["not_run"]-2+d["uncounted"]), "Δdiskstats = Δcount + Δdropped")
}

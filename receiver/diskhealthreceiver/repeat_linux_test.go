//go:build linux

package diskhealthreceiver

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap/zapcore"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// repeatScrapes is how many times each fixture is scraped: a value two series share at every one of
// them, while the fixture's filesystems and counters move under them, is no accident of one reading.
const repeatScrapes = 3

// repeatTelling is the smallest magnitude an integer value must reach to say anything: states,
// booleans, counts of mounts, disks, copies or projects stay below it, and two of them being equal
// is what small numbers do. Bytes, inodes, sectors and seconds are far above it on every fixture.
const repeatTelling = 1024

// telling reports whether v, equal in two series, says they carry the same thing: an integer of at
// least repeatTelling in magnitude, or a fraction that is no simple one (0.5, 0.25 … are what a
// ratio of small numbers gives in two unrelated places; 0.3719… is not).
func telling(v float64) bool {
	if math.Abs(v) >= repeatTelling {
		return true
	}
	return v*16 != math.Trunc(v*16)
}

// TestDefaultRepeatsNoSeries (issue 33, Done-when 2): the default configuration emits no series whose
// value another default series of the same resource already carries. Each fixture tree the receiver's
// tests use is scraped repeatScrapes times by every default source, and two series (metric name and
// point attributes) of different metrics on one resource are the same thing said twice when both
// were emitted at the same scrapes, equal at each, and that value is telling at one of them at least.
// Series of one metric are not compared: two mounts of one filesystem, or two disks that read alike,
// are distinct series by design (the identity rule), not a repetition.
func TestDefaultRepeatsNoSeries(t *testing.T) {
	src := func(parts ...string) func(t *testing.T) string {
		return func(t *testing.T) string {
			r := testkit.NewRoot(t)
			r.CopyTree(filepath.Join(parts...), ".", nil)
			return r.Dir
		}
	}
	roots := filepath.Join("internal", "scraper")
	fixtures := map[string]func(t *testing.T) string{
		"iostat/k4.15-sata":     src(roots, "iostatscraper", "testdata", "roots", "k4.15-sata"),
		"iostat/k5.4-nvme":      src(roots, "iostatscraper", "testdata", "roots", "k5.4-nvme"),
		"iostat/k6.8-nvme-raid": src(roots, "iostatscraper", "testdata", "roots", "k6.8-nvme-raid"),
		"capacity/k6.18-binds":  src(roots, "capacityscraper", "testdata", "roots", "k6.18-binds"),
		"netfs/k6.8-nfs-fuse":   src(roots, "netfsscraper", "testdata", "roots", "k6.8-nfs-fuse"),
		// A kubelet's node: the eviction headroom (bytes and inodes) is emitted beside df's numbers.
		"gpu-node": func(t *testing.T) string {
			r, _ := testkit.GPUNode(t)
			require.NoError(t, os.MkdirAll(r.Path("var/lib/kubelet"), 0o755))
			return r.Dir
		},
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range fixtures {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			for _, pair := range defaultRepeats(t, fixtures[name](t)) {
				t.Error(pair)
			}
		})
	}
}

// defaultRepeats scrapes root with the default configuration and names each pair of series that repeat
// each other (see TestDefaultRepeatsNoSeries).
func defaultRepeats(t *testing.T, root string) []string {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.RootPath = root
	require.NoError(t, cfg.Validate())
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	snaps := tick.New(root, func() time.Time { return clock }, nil)
	scrapers := startReported(t, cfg, snaps, zapcore.NewNopCore())
	// values[resource][series] holds the series' value at each scrape, NaN where it was not emitted.
	values := map[string]map[string][]float64{}
	for i := range repeatScrapes {
		for _, s := range scrapers {
			md, err := s.ScrapeMetrics(t.Context())
			if err != nil {
				t.Logf("%s: %v", s.name, err) // a fixture without a source's input: that source says so
			}
			pdatawalk.ForEachNumberPoint(md, func(res pcommon.Resource, m pmetric.Metric, p pmetric.NumberDataPoint) {
				rk := attrsKey(res.Attributes())
				if values[rk] == nil {
					values[rk] = map[string][]float64{}
				}
				sk := m.Name() + attrsKey(p.Attributes())
				if values[rk][sk] == nil {
					values[rk][sk] = slices.Repeat([]float64{math.NaN()}, repeatScrapes)
				}
				v := p.DoubleValue()
				if p.ValueType() == pmetric.NumberDataPointValueTypeInt {
					v = float64(p.IntValue())
				}
				values[rk][sk][i] = v
			})
		}
		clock = clock.Add(cfg.ControllerConfig.CollectionInterval)
	}
	var pairs []string
	for rk, series := range values {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range series {
				if !yield(k) {
					return
				}
			}
		})
		for i, a := range keys {
			for _, b := range keys[i+1:] {
				if metricOf(a) != metricOf(b) && repeats(series[a], series[b]) {
					pairs = append(pairs, fmt.Sprintf("resource %s: %s and %s carry %v", rk, a, b, series[a]))
				}
			}
		}
	}
	sort.Strings(pairs)
	return pairs
}

// repeats reports whether two series were emitted at the same scrapes (two at least), equal at each,
// with a telling value among them.
func repeats(a, b []float64) bool {
	n, tell := 0, false
	for i := range a {
		if math.IsNaN(a[i]) != math.IsNaN(b[i]) {
			return false
		}
		if math.IsNaN(a[i]) {
			continue
		}
		if a[i] != b[i] {
			return false
		}
		n++
		tell = tell || telling(a[i])
	}
	return n >= 2 && tell
}

// attrsKey is a set of attributes as one string, keys sorted.
func attrsKey(attrs pcommon.Map) string {
	kv := make([]string, 0, attrs.Len())
	for k, v := range attrs.All() {
		kv = append(kv, k+"="+v.AsString())
	}
	sort.Strings(kv)
	return "{" + strings.Join(kv, ",") + "}"
}

func metricOf(series string) string { return series[:strings.IndexByte(series, '{')] }

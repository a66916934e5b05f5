package capacityscraper

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/eviction"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
)

// pointsBy returns metric name's points keyed by the values of attrs, joined by spaces.
func pointsBy(md pmetric.Metrics, name string, attrs ...string) map[string]pmetric.NumberDataPoint {
	out := map[string]pmetric.NumberDataPoint{}
	pdatawalk.ForEachMetric(md, func(_ pcommon.Resource, m pmetric.Metric) {
		if m.Name() != name {
			return
		}
		dps := pdatawalk.NumberPoints(m)
		for i := range dps.Len() {
			key := make([]string, len(attrs))
			for j, a := range attrs {
				v, _ := dps.At(i).Attributes().Get(a)
				key[j] = v.Str()
			}
			out[strings.Join(key, " ")] = dps.At(i)
		}
	})
	return out
}

// limitPoints is metric name's values by "domain limit.name".
func limitPoints(md pmetric.Metrics, name string) map[string]int64 {
	out := map[string]int64{}
	for k, dp := range pointsBy(md, name, "disk_health.filesystem.domain", "disk_health.filesystem.limit.name") {
		out[k] = dp.IntValue()
	}
	return out
}

// The binds root's statfs answers, in 4 KiB blocks: / (259:2) has 2 500 000 blocks, 875 000 free
// for a non-root writer, 655 360 inodes, 500 000 free; /data (259:5) 1 000 000 blocks, 350 000
// free; /dev/shm (0:45) 407 500 blocks, 407 000 free.
const blk = 4096

// TestFSScraperEvictionHeadroom: off a node only free blocks limit a domain; on a node the kubelet's
// default thresholds limit its nodefs, and a configuration file's hard and soft ones replace them, the
// limit that bites first named.
func TestFSScraperEvictionHeadroom(t *testing.T) {
	scrape := func(prep func(*dhtest.Root, *Config)) pmetric.Metrics {
		clock := t0
		s, _ := bindsRootWith(t, "drop", &clock, nil, prep)
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		return md
	}

	// No /var/lib/kubelet: not a node.
	md := scrape(nil)
	assert.Equal(t, map[string]int64{
		"259:2 free_blocks": 875_000 * blk, "259:5 free_blocks": 350_000 * blk, "0:45 free_blocks": 407_000 * blk,
	}, limitPoints(md, "disk_health.filesystem.domain.headroom"))
	assert.Equal(t, map[string]int64{"259:2 free_blocks": 1, "259:5 free_blocks": 1, "0:45 free_blocks": 1},
		limitPoints(md, "disk_health.filesystem.domain.binding_limit"))
	assert.Empty(t, limitPoints(md, "disk_health.filesystem.domain.inodes.headroom"))

	// A node with the kubelet's defaults: nodefs.available<10 %, nodefs.inodesFree<5 % on / (which
	// holds /var/lib/kubelet and, not dedicated, /var/lib/containerd).
	md = scrape(func(r *dhtest.Root, _ *Config) { r.Write("var/lib/kubelet/.keep", "") })
	dhtest.AssertGolden(t, "capacity-eviction-defaults", md, pmetrictest.IgnoreStartTimestamp())
	assert.Equal(t, map[string]int64{
		"259:2 free_blocks": 875_000 * blk, "259:2 nodefs_eviction_hard": (875_000 - 250_000) * blk,
		"259:5 free_blocks": 350_000 * blk, "0:45 free_blocks": 407_000 * blk,
	}, limitPoints(md, "disk_health.filesystem.domain.headroom"))
	assert.Equal(t, int64(1), limitPoints(md, "disk_health.filesystem.domain.binding_limit")["259:2 nodefs_eviction_hard"])
	assert.Equal(t, int64(0), limitPoints(md, "disk_health.filesystem.domain.binding_limit")["259:2 free_blocks"])
	assert.Equal(t, map[string]int64{"259:2 nodefs_eviction_hard": 500_000 - 32_768},
		limitPoints(md, "disk_health.filesystem.domain.inodes.headroom"))

	// A configuration file: hard 1Gi and soft 30 % on nodefs, a dedicated imagefs on /data at 20 %;
	// the soft threshold bites first on /.
	md = scrape(func(r *dhtest.Root, cfg *Config) {
		r.Write("var/lib/kubelet/config.yaml", `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
evictionHard:
  nodefs.available: 1Gi
  imagefs.available: "20%"
evictionSoft:
  nodefs.available: "30%"
`)
		cfg.KubeletConfigFile = "/var/lib/kubelet/config.yaml"
		cfg.ImageFSDir = "/data/containerd"
	})
	assert.Equal(t, map[string]int64{
		"259:2 free_blocks": 875_000 * blk, "259:2 nodefs_eviction_hard": 875_000*blk - 1<<30,
		"259:2 nodefs_eviction_soft": (875_000 - 750_000) * blk,
		"259:5 free_blocks":          350_000 * blk, "259:5 imagefs_eviction_hard": (350_000 - 200_000) * blk,
		"0:45 free_blocks": 407_000 * blk,
	}, limitPoints(md, "disk_health.filesystem.domain.headroom"))
	bind := limitPoints(md, "disk_health.filesystem.domain.binding_limit")
	assert.Equal(t, int64(1), bind["259:2 nodefs_eviction_soft"])
	assert.Equal(t, int64(1), bind["259:5 imagefs_eviction_hard"])
	assert.Empty(t, limitPoints(md, "disk_health.filesystem.domain.inodes.headroom"), "evictionHard names no inode signal")
}

// TestBindingLimitChange: a domain's binding limit is one point at 1; when another limit takes over,
// the one it replaced gets a 0 at that scrape only, so its last value says it no longer binds and no
// point is spent on it afterwards.
func TestBindingLimitChange(t *testing.T) {
	clock := t0
	var root *dhtest.Root
	s, _ := bindsRootWith(t, "drop", &clock, nil, func(r *dhtest.Root, _ *Config) { root = r })
	scrape := func() map[string]int64 {
		t.Helper()
		clock = clock.Add(time.Minute)
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		return limitPoints(md, "disk_health.filesystem.domain.binding_limit")
	}
	want := map[string]int64{"259:2 free_blocks": 1, "259:5 free_blocks": 1, "0:45 free_blocks": 1}
	assert.Equal(t, want, scrape(), "not a node: free blocks bind")
	assert.Equal(t, want, scrape(), "unchanged: one point a domain")

	root.Write("var/lib/kubelet/.keep", "") // the node's kubelet appears: its default threshold binds on /
	want["259:2 nodefs_eviction_hard"], want["259:2 free_blocks"] = 1, 0
	assert.Equal(t, want, scrape(), "the limit replaced gets a 0 once")
	delete(want, "259:2 free_blocks")
	assert.Equal(t, want, scrape(), "and nothing after")
}

// TestKubeletConfigReread: the file is read again when it changes; a bad one keeps the thresholds last
// read and is logged once, however many scrapes see it.
func TestKubeletConfigReread(t *testing.T) {
	root := dhtest.NewRoot(t)
	root.Write("var/lib/kubelet/config.yaml", "evictionHard: {nodefs.available: 1Gi}\n")
	core, logs := observer.New(zap.InfoLevel)
	cfg := testConfig()
	cfg.RootPath, cfg.KubeletConfigFile = root.Dir, "/var/lib/kubelet/config.yaml"
	k := newKubelet(zap.New(core), cfg)
	require.True(t, k.refresh())
	assert.Equal(t, eviction.Threshold{Quantity: 1 << 30}, k.th.Hard[eviction.NodeFSAvailable])

	root.Write("var/lib/kubelet/config.yaml", "evictionHard: [broken\n")
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(root.Path("var/lib/kubelet/config.yaml"), later, later))
	for range 3 {
		require.True(t, k.refresh())
	}
	assert.Equal(t, eviction.Threshold{Quantity: 1 << 30}, k.th.Hard[eviction.NodeFSAvailable], "the last good thresholds stay")
	assert.Equal(t, 1, logs.FilterMessageSnippet("with problems").Len())

	root.Write("var/lib/kubelet/config.yaml", "evictionHard: {nodefs.available: 2Gi}\n")
	later = later.Add(time.Minute)
	require.NoError(t, os.Chtimes(root.Path("var/lib/kubelet/config.yaml"), later, later))
	require.True(t, k.refresh())
	assert.Equal(t, eviction.Threshold{Quantity: 2 << 30}, k.th.Hard[eviction.NodeFSAvailable])

	require.NoError(t, os.RemoveAll(root.Path("var/lib/kubelet")))
	assert.False(t, k.refresh(), "no kubelet root directory: not a node")
}

// refusedThresholds are values of a threshold the kubelet refuses (or, NaN and 2^64 and past, would
// misread): the five a hostile tester used in issue 31, then empty, words, bare and signed forms, a
// zero quantity (the kubelet takes only a positive one), infinities and underscores.
var refusedThresholds = []string{"200%", "-5%", "NaN%", "0x10", "1e30Gi",
	"", "abc", "%", "Gi", "10Xi", "-5Gi", "0", "0Mi", "Inf%", "-Inf%", "+Inf", "1e400", "1_000", "100.1%", "10 %"}

// writeKubeletConfig points cfg at a kubelet configuration file of content under r, with a dedicated
// imagefs on /data.
func writeKubeletConfig(r *dhtest.Root, cfg *Config, content string) {
	r.Write("var/lib/kubelet/config.yaml", content)
	cfg.KubeletConfigFile = "/var/lib/kubelet/config.yaml"
	cfg.ImageFSDir = "/data/containerd"
}

// TestFSScraperRefusedThreshold: a threshold the kubelet refuses keeps its signal's fallback in force —
// here the kubelet's default, none having been read before — and costs no other signal: the nodefs
// limit never silently becomes free blocks (issue 31: headroom 7.71e10 instead of 5.01e10 bytes).
func TestFSScraperRefusedThreshold(t *testing.T) {
	for _, bad := range refusedThresholds {
		t.Run(fmt.Sprintf("%q", bad), func(t *testing.T) {
			clock := t0
			s, _ := bindsRootWith(t, "drop", &clock, nil, func(r *dhtest.Root, cfg *Config) {
				writeKubeletConfig(r, cfg, fmt.Sprintf("evictionHard:\n  nodefs.available: %q\n  nodefs.inodesFree: %[1]q\n  imagefs.available: \"20%%\"\n", bad))
			})
			md, err := s.scrape(t.Context())
			require.NoError(t, err)
			headroom := limitPoints(md, "disk_health.filesystem.domain.headroom")
			assert.Equal(t, int64((875_000-250_000)*blk), headroom["259:2 nodefs_eviction_hard"], "nodefs.available<10 %%, the kubelet's default")
			assert.Equal(t, int64((350_000-200_000)*blk), headroom["259:5 imagefs_eviction_hard"], "imagefs.available<20 %% as read")
			bind := limitPoints(md, "disk_health.filesystem.domain.binding_limit")
			assert.Equal(t, int64(1), bind["259:2 nodefs_eviction_hard"], "binds, not free_blocks")
			assert.Equal(t, map[string]int64{"259:2 nodefs_eviction_hard": 500_000 - 32_768},
				limitPoints(md, "disk_health.filesystem.domain.inodes.headroom"), "nodefs.inodesFree<5 %%, the kubelet's default")
		})
	}
}

// TestKubeletRefusedThresholdKeepsLastGood: once a good threshold was read, a refused one keeps it —
// not the default, not free blocks — in the binding limit of the nodefs.
func TestKubeletRefusedThresholdKeepsLastGood(t *testing.T) {
	u := fsusage.Usage{Limit: 2_500_000 * blk, Free: 875_000 * blk}
	for _, bad := range refusedThresholds {
		t.Run(fmt.Sprintf("%q", bad), func(t *testing.T) {
			root := dhtest.NewRoot(t)
			cfg := testConfig()
			cfg.RootPath = root.Dir
			writeKubeletConfig(root, cfg, "evictionHard: {nodefs.available: 1Gi}\n")
			k := newKubelet(zap.NewNop(), cfg)
			require.True(t, k.refresh())

			root.Write("var/lib/kubelet/config.yaml", fmt.Sprintf("evictionHard: {nodefs.available: %q}\n", bad))
			later := time.Now().Add(time.Minute)
			require.NoError(t, os.Chtimes(root.Path("var/lib/kubelet/config.yaml"), later, later))
			require.True(t, k.refresh())
			bytes, _ := limits(&u, &k.th, true, false, nil, nil)
			assert.Equal(t, limit{metadata.AttributeDiskHealthFilesystemLimitNameNodefsEvictionHard, 875_000*blk - 1<<30}, binding(bytes))
		})
	}
}

// TestFSScraperThresholdOff: as in the kubelet, "0%" and "100%" switch a signal off rather than put
// its limit at nothing or at the whole filesystem.
func TestFSScraperThresholdOff(t *testing.T) {
	for _, off := range []string{"0%", "100%"} {
		t.Run(off, func(t *testing.T) {
			clock := t0
			s, _ := bindsRootWith(t, "drop", &clock, nil, func(r *dhtest.Root, cfg *Config) {
				writeKubeletConfig(r, cfg, fmt.Sprintf("evictionHard:\n  nodefs.available: %q\n  imagefs.available: \"20%%\"\n", off))
			})
			md, err := s.scrape(t.Context())
			require.NoError(t, err)
			assert.Equal(t, map[string]int64{
				"259:2 free_blocks": 875_000 * blk,
				"259:5 free_blocks": 350_000 * blk, "259:5 imagefs_eviction_hard": (350_000 - 200_000) * blk,
				"0:45 free_blocks": 407_000 * blk,
			}, limitPoints(md, "disk_health.filesystem.domain.headroom"))
		})
	}
}

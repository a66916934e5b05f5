package cgroupio

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// ioStatOf returns an io.stat of n devices, each counter scaled by k so two readings differ.
func ioStatOf(n int, k uint64) []byte {
	var sb strings.Builder
	for i := range n {
		st := DeviceStat{Major: uint32(8 + i>>20), Minor: uint32(i & (1<<20 - 1)), HasDiscard: true,
			Counters: Counters{ReadBytes: k * 4096, WriteBytes: k * 8192, ReadOps: k, WriteOps: 2 * k, DiscardBytes: k, DiscardOps: k}}
		sb.WriteString(formatIOStat(st))
	}
	return []byte(sb.String())
}

// oneCgroupFS is a hierarchy of one child cgroup whose io.stat is data.
type oneCgroupFS struct{ data []byte }

func (f *oneCgroupFS) ReadFile(_ string, buf []byte) ([]byte, error) {
	return append(buf[:0], f.data...), nil
}

func (f *oneCgroupFS) SubDirs(name string, dst []string) ([]string, error) {
	if name == "" {
		return append(dst, "big.slice"), nil
	}
	return dst, nil
}

// collectTwice runs a first collection (the baseline) and a second one over a cgroup whose n devices all
// moved, so the second compares every device with its previous reading.
func collectTwice(tb testing.TB, n int, first, second []byte) {
	fsys := &oneCgroupFS{data: first}
	c, err := NewCollector(fsys, Config{Version: V2, TopN: 10, MaxDepth: 4, Start: t1})
	require.NoError(tb, err)
	_, err = c.Collect(t1)
	require.NoError(tb, err)
	fsys.data = second
	res, err := c.Collect(t1.Add(time.Minute))
	require.NoError(tb, err)
	require.Len(tb, res.Cgroups, 1)
	require.Len(tb, res.Cgroups[0].Devices, n)
}

// A cgroup with 60 000 devices in its io.stat (a hostile or huge host) costs one parse and one comparison
// per device, not one per pair of devices: under a second of CPU for two collections. CPU time of this
// thread, not wall time, so a loaded machine does not fail it; linear code needs ~1/50 of the bound.
func TestSixtyThousandDevicesLinear(t *testing.T) {
	const n = 60000
	first, second := ioStatOf(n, 1), ioStatOf(n, 2)
	cpu := testkit.ThreadCPU(t, func() { collectTwice(t, n, first, second) })
	t.Logf("two collections of one cgroup with %d devices: %v CPU", n, cpu)
	require.Less(t, cpu, testkit.RaceSlowdown*time.Second)
}

// BenchmarkDevicesPerIOStat measures one cgroup's baseline and second collection at 10× steps up to 10× the
// largest device list the tests use: the time per device stays flat.
func BenchmarkDevicesPerIOStat(b *testing.B) {
	for _, n := range []int{600, 6000, 60000} {
		first, second := ioStatOf(n, 1), ioStatOf(n, 2)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				collectTwice(b, n, first, second)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/device")
		})
	}
}

// BenchmarkParseBlkioDevices is the v1 parse at the same sizes.
func BenchmarkParseBlkioDevices(b *testing.B) {
	for _, n := range []int{600, 6000, 60000} {
		stats, err := ParseIOStat(ioStatOf(n, 1), nil)
		require.NoError(b, err)
		bytesFile, opsFile := formatBlkio(stats)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			var dst []DeviceStat
			for range b.N {
				dst, err = ParseBlkio([]byte(bytesFile), []byte(opsFile), dst)
				if err != nil || len(dst) != n {
					b.Fatal(err, len(dst))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/device")
		})
	}
}

// podTree is an in-memory Kubernetes-like v2 hierarchy: pods of 3 containers below one QoS slice, every
// container's counters growing by its own weight each generation and every inner cgroup's the sum of its
// children's, as the kernel's hierarchical io.stat is.
type podTree struct {
	gen     uint64
	weights map[string]uint64   // cgroup → its bytes per generation
	dirs    map[string][]string // cgroup → child cgroups
}

func newPodTree(cgroups int) *podTree {
	t := &podTree{weights: map[string]uint64{}, dirs: map[string][]string{}}
	const qos = "kubepods.slice/kubepods-burstable.slice"
	t.dirs[""] = []string{"kubepods.slice"}
	t.dirs["kubepods.slice"] = []string{"kubepods-burstable.slice"}
	for p := range cgroups / 4 {
		pod := fmt.Sprintf("kubepods-burstable-pod%08x.slice", p)
		t.dirs[qos] = append(t.dirs[qos], pod)
		for c := range 3 {
			leaf := fmt.Sprintf("cri-containerd-%064x.scope", 3*p+c)
			t.dirs[qos+"/"+pod] = append(t.dirs[qos+"/"+pod], leaf)
			w := uint64(3*p+c+1) << 12
			for dir := qos + "/" + pod + "/" + leaf; ; {
				t.weights[dir] += w
				i := strings.LastIndexByte(dir, '/')
				if i < 0 {
					break
				}
				dir = dir[:i]
			}
		}
	}
	return t
}

func (t *podTree) ReadFile(name string, buf []byte) ([]byte, error) {
	dir, ok := strings.CutSuffix(name, "/io.stat")
	w, known := t.weights[dir]
	if !ok || !known {
		return nil, fs.ErrNotExist
	}
	b := t.gen * w
	return fmt.Appendf(buf[:0], "259:0 rbytes=%d wbytes=%d rios=%d wios=%d dbytes=0 dios=0\n", b/2, b-b/2, b>>12, b>>13), nil
}

func (t *podTree) SubDirs(name string, dst []string) ([]string, error) {
	return append(dst, t.dirs[name]...), nil
}

// A collection with every container busy (a full walk and the choice of the top 10) costs the same per
// cgroup at 5 000 cgroups (TestTopNBound5000's tree) and at 50 000.
func TestCollectLinearInCgroups(t *testing.T) {
	testkit.RequireLinear(t, "busy cgroups per collection", 5000, testkit.ThreadCPU, func(n int) func() {
		tree := newPodTree(n)
		c, err := NewCollector(tree, Config{Version: V2, TopN: 10, MaxDepth: 5, Start: t1})
		require.NoError(t, err)
		now := t1
		collect := func() {
			tree.gen++
			now = now.Add(30 * time.Second)
			res, err := c.Collect(now)
			require.NoError(t, err)
			if tree.gen > 1 {
				require.Equal(t, 3*(n/4), res.Active)
				require.Len(t, res.Cgroups, 10)
			}
		}
		collect() // the baseline
		return collect
	})
}

// BenchmarkCollectBusyCgroups is one collection with every container of a pod tree busy, at the
// 5 000 cgroups of TestTopNBound5000 and at 10× them: the time per cgroup stays flat.
func BenchmarkCollectBusyCgroups(b *testing.B) {
	for _, n := range []int{5000, 50000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			tree := newPodTree(n)
			c, err := NewCollector(tree, Config{Version: V2, TopN: 10, MaxDepth: 5, Start: t1})
			require.NoError(b, err)
			now := t1
			tree.gen++
			_, err = c.Collect(now)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				tree.gen++
				now = now.Add(30 * time.Second)
				if res, err := c.Collect(now); err != nil || res.Active != 3*(n/4) {
					b.Fatal(res.Active, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/cgroup")
		})
	}
}

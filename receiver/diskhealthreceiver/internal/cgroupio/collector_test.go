package cgroupio

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/pressure"
)

var (
	boot = time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	t1   = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	t2   = t1.Add(30 * time.Second)
)

// switchFS lets a test replace the tree under a Collector between two collections, as time does.
type switchFS struct{ FS }

// snapshot is a fixture tree's hierarchy at one time.
type snapshot struct {
	h        Hierarchy
	stats    *switchFS
	pressure *switchFS
}

func openSnapshot(t *testing.T, tree, snap string) snapshot {
	t.Helper()
	h, err := Detect(filepath.Join("testdata", tree, snap, "sys", "fs", "cgroup"))
	require.NoError(t, err)
	s := snapshot{h: h, stats: &switchFS{NewDirFS(h.Dir)}}
	if h.PressureDir != "" {
		s.pressure = &switchFS{NewDirFS(h.PressureDir)}
	}
	return s
}

func (s snapshot) config(topN, depth int) Config {
	cfg := Config{Version: s.h.Version, TopN: topN, MaxDepth: depth, Start: boot}
	if s.pressure != nil {
		cfg.Pressure = s.pressure
	}
	return cfg
}

// moveTo points the collector's FS at another snapshot of the same tree.
func (s snapshot) moveTo(t *testing.T, tree, snap string) {
	next := openSnapshot(t, tree, snap)
	s.stats.FS = next.stats.FS
	if s.pressure != nil {
		s.pressure.FS = next.pressure.FS
	}
}

// goldenCgroup is the reviewed form of a reported cgroup.
type goldenCgroup struct {
	Path        string
	Attribution Attribution
	Devices     []DeviceStat
	Bytes       uint64
	Start       string
	Pressure    *pressure.Pressure `json:",omitempty"`
}

type goldenResult struct {
	TopN, MaxDepth int
	Active         int
	Cgroups        []goldenCgroup
}

func toGolden(res Result, topN, depth int) goldenResult {
	g := goldenResult{TopN: topN, MaxDepth: depth, Active: res.Active}
	for _, cg := range res.Cgroups {
		gc := goldenCgroup{Path: cg.Path, Attribution: cg.Attribution, Devices: cg.Devices, Bytes: cg.Bytes, Start: cg.Start.Format(time.RFC3339)}
		if cg.HasPressure {
			p := cg.Pressure
			gc.Pressure = &p
		}
		g.Cgroups = append(g.Cgroups, gc)
	}
	return g
}

func TestCollectorGolden(t *testing.T) {
	for _, tc := range []struct {
		tree        string
		topN, depth int
		version     Version
		pressure    bool // every reported cgroup has io.pressure; else none has or the golden says which
	}{
		{tree: "v2-k8s-containerd", topN: 3, depth: 5, version: V2, pressure: true},
		{tree: "v2-k8s-containerd", topN: 10, depth: 2, version: V2, pressure: true},
		{tree: "v2-k8s-crio", topN: 10, depth: 5, version: V2, pressure: true},
		{tree: "v2-docker", topN: 10, depth: 5, version: V2, pressure: true},
		{tree: "v2-systemd", topN: 10, depth: 4, version: V2},
		{tree: "v1-blkio", topN: 10, depth: 5, version: V1},
	} {
		name := tc.tree + "-top" + strconv.Itoa(tc.topN) + "-depth" + strconv.Itoa(tc.depth)
		t.Run(name, func(t *testing.T) {
			s := openSnapshot(t, tc.tree, "t1")
			require.Equal(t, tc.version, s.h.Version)
			c, err := NewCollector(s.stats, s.config(tc.topN, tc.depth))
			require.NoError(t, err)

			first, err := c.Collect(t1)
			require.NoError(t, err)
			assert.Empty(t, first.Cgroups, "the first collection is a baseline")
			assert.Zero(t, first.Active)

			s.moveTo(t, tc.tree, "t2")
			second, err := c.Collect(t2)
			require.NoError(t, err)
			require.LessOrEqual(t, len(second.Cgroups), tc.topN)
			for _, cg := range second.Cgroups {
				if tc.pressure || s.h.PressureDir == "" {
					assert.Equal(t, tc.pressure, cg.HasPressure, cg.Path)
				}
			}

			got := toGolden(second, tc.topN, tc.depth)
			testkit.GoldenJSON(t, filepath.Join("testdata", "golden", name+".json"), got)
		})
	}
}

// countingFS counts what the Collector reads and can fail chosen files.
type countingFS struct {
	FS
	reads, listings int
	files           []string
	fail            map[string]error // file or directory name → error
}

func (c *countingFS) ReadFile(name string, buf []byte) ([]byte, error) {
	c.reads++
	c.files = append(c.files, name)
	if err := c.fail[name]; err != nil {
		return buf[:0], err
	}
	return c.FS.ReadFile(name, buf)
}

func (c *countingFS) SubDirs(name string, dst []string) ([]string, error) {
	c.listings++
	if err := c.fail[name]; err != nil {
		return dst, err
	}
	return c.FS.SubDirs(name, dst)
}

// TestCollectorReadsOnlyWhatMoved: an unchanged hierarchy costs one listing of the root and one read per
// top-level cgroup; a change is followed down its path only.
func TestCollectorReadsOnlyWhatMoved(t *testing.T) {
	s := openSnapshot(t, "v2-k8s-containerd", "t1")
	fsys := &countingFS{FS: s.stats}
	c, err := NewCollector(fsys, s.config(3, 5))
	require.NoError(t, err)

	first, err := c.Collect(t1)
	require.NoError(t, err)
	// Every cgroup of the tree is read once at the first collection: 15 directories below the root.
	assert.Equal(t, 15, first.Reads)
	assert.Equal(t, first.Reads, fsys.reads)

	fsys.reads, fsys.listings = 0, 0
	same, err := c.Collect(t2)
	require.NoError(t, err)
	assert.Empty(t, same.Cgroups)
	// kubepods.slice, system.slice, init.scope: nothing below moved, nothing else is read.
	assert.Equal(t, 3, fsys.reads)
	assert.Equal(t, 1, fsys.listings)

	s.moveTo(t, "v2-k8s-containerd", "t2")
	fsys.reads, fsys.listings, fsys.files = 0, 0, nil
	moved, err := c.Collect(t2.Add(30 * time.Second))
	require.NoError(t, err)
	require.Len(t, moved.Cgroups, 3)
	assert.Equal(t, 5, moved.Active)
	// t2 has 17 cgroups. Read: the 3 top-level ones, the 3 QoS-level ones, the 2 guaranteed containers,
	// the 2 burstable pods and their 2 containers, the 3 services = 15; not the besteffort pod and its
	// container below their unchanged QoS slice. Result.Reads adds io.pressure of the 3 reported.
	assert.Equal(t, 15, fsys.reads)
	assert.Equal(t, 15+3, moved.Reads)
	assert.Contains(t, fsys.files, "kubepods.slice/kubepods-besteffort.slice/io.stat")
	assert.NotContains(t, fsys.files, "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"+
		"c1e5a9d3_7b2f_4a6c_8e1d_2f3b4c5d6e03.slice/io.stat")
}

func TestCollectorMalformedFile(t *testing.T) {
	r := testkit.NewRoot(t) // a copy of the fixture snapshot, for the test to change
	r.CopyTree(filepath.Join("testdata", "v2-docker", "t1"), ".", nil)
	root := r.Dir
	cg := filepath.Join(root, "sys", "fs", "cgroup")
	c, err := NewCollector(NewDirFS(cg), Config{Version: V2, TopN: 10, MaxDepth: 5, Start: boot})
	require.NoError(t, err)
	_, err = c.Collect(t1)
	require.NoError(t, err)

	// Both containers write; one io.stat has a garbage line next to its good one.
	bad := "system.slice/docker-" + "7bdc25d1694ef984782a16f6f1710c1c6bc83ba7a131b515baf532bea021d011.scope"
	good := "system.slice/docker-" + "4b5e57f6eb2f42b9039b3d1e13929295f231749c510cbe341cd68036d9af97e2.scope"
	for _, dir := range []string{"", "system.slice", bad, good} {
		bumpWrites(t, filepath.Join(cg, dir, "io.stat"), 1<<20)
	}
	appendLine(t, filepath.Join(cg, bad, "io.stat"), "259:x rbytes=1\n")
	res, err := c.Collect(t2)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cgroup /"+bad+": io.stat line 2")
	assert.Contains(t, err.Error(), `"259:x"`)
	require.Len(t, res.Cgroups, 2, "the bad line costs neither its cgroup's good line nor the other cgroup")
	for _, cg := range res.Cgroups {
		assert.Equal(t, uint64(1<<20), cg.Bytes, cg.Path)
	}
}

// A cgroup whose io.stat is past the cap (or unreadable) is an error naming it, and its children are
// read all the same: a busy container below an over-cap slice is still reported, collection after
// collection.
func TestOverCapParentStillReadsChildren(t *testing.T) {
	r := testkit.NewRoot(t)
	r.CopyTree(filepath.Join("testdata", "v2-docker", "t1"), ".", nil)
	cg := filepath.Join(r.Dir, "sys", "fs", "cgroup")
	huge := strings.Repeat("8:0 rbytes=1 wbytes=1 rios=1 wios=1 dbytes=0 dios=0\n", bounded.CgroupStat/50+1)
	require.NoError(t, os.WriteFile(filepath.Join(cg, "system.slice", "io.stat"), []byte(huge), 0o644))
	c, err := NewCollector(NewDirFS(cg), Config{Version: V2, TopN: 10, MaxDepth: 5, Start: boot})
	require.NoError(t, err)
	_, err = c.Collect(t1)
	require.ErrorIs(t, err, bounded.ErrTooLarge)
	assert.Contains(t, err.Error(), "cgroup /system.slice: ")

	busy := "system.slice/docker-" + "4b5e57f6eb2f42b9039b3d1e13929295f231749c510cbe341cd68036d9af97e2.scope"
	for i, at := range []time.Time{t2, t2.Add(30 * time.Second)} {
		bumpWrites(t, filepath.Join(cg, "io.stat"), 1<<20)
		bumpWrites(t, filepath.Join(cg, busy, "io.stat"), 1<<20)
		res, err := c.Collect(at)
		require.ErrorIs(t, err, bounded.ErrTooLarge, "collection %d", i)
		require.Len(t, res.Cgroups, 1, "collection %d: the container below the over-cap slice", i)
		assert.Equal(t, "/"+busy, res.Cgroups[0].Path)
		assert.Equal(t, uint64(1<<20), res.Cgroups[0].Bytes)
	}
}

func bumpWrites(t *testing.T, path string, by uint64) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	stats, err := ParseIOStat(data, nil)
	require.NoError(t, err)
	var out strings.Builder
	for i, st := range stats {
		if i == 0 {
			st.WriteBytes += by
			st.WriteOps++
		}
		out.WriteString(formatIOStat(st))
	}
	require.NoError(t, os.WriteFile(path, []byte(out.String()), 0o644))
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(line)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestCollectorChurn: a cgroup that disappears between the listing and the read (ENOENT, or ENODEV
// from a dying cgroup), a pressure file the kernel refuses (psi=0: EOPNOTSUPP) are no errors; a
// permission problem is, naming the cgroup.
func TestCollectorChurn(t *testing.T) {
	s := openSnapshot(t, "v2-k8s-containerd", "t1")
	fsys := &countingFS{FS: s.stats, fail: map[string]error{}}
	pfs := &countingFS{FS: s.pressure, fail: map[string]error{}}
	cfg := s.config(10, 5)
	cfg.Pressure = pfs
	c, err := NewCollector(fsys, cfg)
	require.NoError(t, err)
	_, err = c.Collect(t1)
	require.NoError(t, err)

	s.moveTo(t, "v2-k8s-containerd", "t2")
	trainer := "kubepods.slice/kubepods-pod3f6c1f2e_8b1a_4c55_9a59_1d2f0e6b7a01.slice/cri-containerd-06ea17a8981d25b0315ff17bd1ebad3d95c15a3f8b764eaadb93612d9b61a54e.scope"
	fsys.fail[trainer+"/io.stat"] = &os.PathError{Op: "open", Path: trainer, Err: syscall.ENOENT}
	fsys.fail["system.slice/kubelet.service/io.stat"] = &os.PathError{Op: "read", Path: "kubelet", Err: syscall.ENODEV}
	pfs.fail["system.slice/containerd.service/io.pressure"] = &os.PathError{Op: "read", Path: "containerd", Err: syscall.EOPNOTSUPP}
	res, err := c.Collect(t2)
	require.NoError(t, err)
	var paths []string
	for _, cg := range res.Cgroups {
		paths = append(paths, cg.Path)
		if cg.Path == "/system.slice/containerd.service" {
			assert.False(t, cg.HasPressure)
		}
	}
	assert.NotContains(t, paths, "/"+trainer)
	assert.NotContains(t, paths, "/system.slice/kubelet.service")
	assert.Contains(t, paths, "/system.slice/containerd.service")

	fsys.fail = map[string]error{"system.slice": &os.PathError{Op: "open", Path: "system.slice", Err: syscall.EACCES}}
	s.moveTo(t, "v2-k8s-containerd", "t1") // counters went back: every path changed
	_, err = c.Collect(t2.Add(time.Minute))
	require.ErrorIs(t, err, syscall.EACCES)
	assert.Contains(t, err.Error(), "cgroup /system.slice")
}

func TestDetect(t *testing.T) {
	for tree, want := range map[string]Hierarchy{
		"v2-k8s-containerd": {Version: V2, Dir: "sys/fs/cgroup", PressureDir: "sys/fs/cgroup"},
		"v1-blkio":          {Version: V1, Dir: "sys/fs/cgroup/blkio", PressureDir: "sys/fs/cgroup/unified"},
	} {
		base := filepath.Join("testdata", tree, "t1")
		h, err := Detect(filepath.Join(base, "sys", "fs", "cgroup"))
		require.NoError(t, err, tree)
		assert.Equal(t, want.Version, h.Version, tree)
		assert.Equal(t, filepath.Join(base, want.Dir), h.Dir, tree)
		assert.Equal(t, filepath.Join(base, want.PressureDir), h.PressureDir, tree)
	}

	// A hybrid host whose unified hierarchy offers io (and no blkio), and one that offers nothing.
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "unified"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "unified", "cgroup.controllers"), []byte("memory pids\n"), 0o644))
	_, err := Detect(root)
	require.ErrorIs(t, err, ErrNoIOAccounting)
	assert.Contains(t, err.Error(), root)
	require.NoError(t, os.WriteFile(filepath.Join(root, "unified", "cgroup.controllers"), []byte("memory io pids\n"), 0o644))
	h, err := Detect(root)
	require.NoError(t, err)
	assert.Equal(t, Hierarchy{Version: V2, Dir: filepath.Join(root, "unified"), PressureDir: filepath.Join(root, "unified")}, h)
}

func TestConfigValidate(t *testing.T) {
	_, err := NewCollector(NewDirFS(t.TempDir()), Config{Version: 3, TopN: 0, MaxDepth: 0})
	require.Error(t, err)
	for _, want := range []string{"version 3", "top_n must be at least 1, got 0", "max_depth must be at least 1, got 0"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Equal(t, "v1 (blkio)", V1.String())
	assert.Equal(t, "v2 (io)", V2.String())
	assert.Equal(t, "Version(7)", Version(7).String())
}

// TestCollectorOneCounterBackStartsANewSeries: a cgroup whose total grew while one of its counters went
// back (discard bytes here) restarts its series: the old check on the total alone kept the start time,
// so disk_health.container.disk.discard.io fell within one series.
func TestCollectorOneCounterBackStartsANewSeries(t *testing.T) {
	root := t.TempDir()
	cg := filepath.Join(root, "cg")
	require.NoError(t, os.MkdirAll(filepath.Join(cg, "a"), 0o755))
	write := func(rb, db uint64) {
		for _, dir := range []string{"", "a"} {
			line := fmt.Sprintf("8:0 rbytes=%d wbytes=0 rios=1 wios=0 dbytes=%d dios=1\n", rb, db)
			require.NoError(t, os.WriteFile(filepath.Join(cg, dir, "io.stat"), []byte(line), 0o644))
		}
	}
	write(1000, 500)
	c, err := NewCollector(NewDirFS(cg), Config{Version: V2, TopN: 10, MaxDepth: 5, Start: boot})
	require.NoError(t, err)
	_, err = c.Collect(t1)
	require.NoError(t, err)
	write(2000, 100) // total 1500 → 2100, discard 500 → 100
	res, err := c.Collect(t2)
	require.NoError(t, err)
	require.Len(t, res.Cgroups, 1)
	assert.Equal(t, t1, res.Cgroups[0].Start, "a new series from the previous collection")
}

// TestCollectorWritten: Written is each device's write bytes since the previous collection, whether the
// cgroup was reported then or not; all of them for a cgroup created since, a device new to the cgroup,
// or counters that went back (the cgroup re-created under its path).
func TestCollectorWritten(t *testing.T) {
	cg := filepath.Join(t.TempDir(), "cg")
	for _, dir := range []string{"a", "b"} {
		require.NoError(t, os.MkdirAll(filepath.Join(cg, dir), 0o755))
	}
	write := func(dir string, stats ...DeviceStat) {
		var s strings.Builder
		for _, st := range stats {
			s.WriteString(formatIOStat(st))
		}
		require.NoError(t, os.WriteFile(filepath.Join(cg, dir, "io.stat"), []byte(s.String()), 0o644))
	}
	dev := func(maj, minor uint32, w uint64) DeviceStat {
		return DeviceStat{Major: maj, Minor: minor, Counters: Counters{WriteBytes: w, WriteOps: w / 4096}}
	}
	written := func(res Result) map[string]map[string]uint64 {
		m := map[string]map[string]uint64{}
		for _, c := range res.Cgroups {
			m[c.Path] = map[string]uint64{}
			for i, d := range c.Devices {
				m[c.Path][fmt.Sprintf("%d:%d", d.Major, d.Minor)] = c.Written(i)
			}
		}
		return m
	}
	write("", dev(8, 0, 1<<30))
	write("a", dev(8, 0, 100<<20))
	write("b", dev(8, 0, 5<<20))
	c, err := NewCollector(NewDirFS(cg), Config{Version: V2, TopN: 10, MaxDepth: 5, Start: boot})
	require.NoError(t, err)
	_, err = c.Collect(t1)
	require.NoError(t, err)

	write("", dev(8, 0, 2<<30))
	write("a", dev(8, 0, 160<<20), dev(259, 0, 7<<20)) // a new device: all of its bytes are new
	require.NoError(t, os.MkdirAll(filepath.Join(cg, "c"), 0o755))
	write("c", dev(8, 0, 3<<20)) // a cgroup created since: all of its bytes are new
	res, err := c.Collect(t2)
	require.NoError(t, err)
	assert.Equal(t, map[string]map[string]uint64{
		"/a": {"8:0": 60 << 20, "259:0": 7 << 20},
		"/c": {"8:0": 3 << 20},
	}, written(res), "b did not write")

	write("", dev(8, 0, 3<<30))
	write("b", dev(8, 0, 6<<20))                     // b, never reported before, from its baseline
	write("a", dev(8, 0, 1<<20), dev(259, 0, 7<<20)) // went back: re-created
	res, err = c.Collect(t2.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, map[string]map[string]uint64{
		"/a": {"8:0": 1 << 20, "259:0": 7 << 20},
		"/b": {"8:0": 1 << 20},
	}, written(res))
}

// TestCollectorV1BusyCgroupKeepsItsSeries: on v1 a cgroup reported at one collection (its operations
// file read) and busy again at the next is no restarted series: its Bytes and Written are the
// interval's and its Start stays. The walk reads only the bytes file, so the operation counts it lacks
// were once taken for counters that went back.
func TestCollectorV1BusyCgroupKeepsItsSeries(t *testing.T) {
	cg := filepath.Join(t.TempDir(), "blkio")
	require.NoError(t, os.MkdirAll(filepath.Join(cg, "job"), 0o755))
	write := func(w uint64) {
		for _, dir := range []string{"", "job"} {
			b, o := formatBlkio([]DeviceStat{{Major: 7, Minor: 0, Counters: Counters{WriteBytes: w, WriteOps: w / 4096}}})
			require.NoError(t, os.WriteFile(filepath.Join(cg, dir, BlkioBytesFile), []byte(b), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(cg, dir, BlkioOpsFile), []byte(o), 0o644))
		}
	}
	write(1 << 20)
	c, err := NewCollector(NewDirFS(cg), Config{Version: V1, TopN: 10, MaxDepth: 5, Start: boot})
	require.NoError(t, err)
	_, err = c.Collect(t1)
	require.NoError(t, err)
	for i, w := range []uint64{3 << 20, 7 << 20, 8 << 20} {
		write(w)
		res, err := c.Collect(t2.Add(time.Duration(i) * time.Minute))
		require.NoError(t, err)
		require.Len(t, res.Cgroups, 1, "collection %d", i)
		got := res.Cgroups[0]
		want := w - []uint64{1 << 20, 3 << 20, 7 << 20}[i]
		assert.Equal(t, want, got.Bytes, "collection %d", i)
		assert.Equal(t, want, got.Written(0), "collection %d", i)
		assert.Equal(t, boot, got.Start, "collection %d: the same series", i)
		assert.Equal(t, w/4096, got.Devices[0].WriteOps, "collection %d: the operations file read", i)
	}
}

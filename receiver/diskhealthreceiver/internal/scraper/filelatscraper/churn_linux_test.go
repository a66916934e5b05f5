//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package filelatscraper

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/filelat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filelatscraper/internal/metadata"
)

// The churn: waves of tmpfs mounts and blkio (io) cgroups, each cgroup reading files on
// churnFilesPerCgroup of its wave's mounts and reading and appending to a file on a mount that lives
// through the run, all of the wave's removed before the next wave. A wave's cgroups take 125 × 6 = 750
// of per_cgroup.max_series' 1 024 entries, the run's 30 000 of them. Forgetting the wave's mounts frees
// its cgroups' entries on them; their two on the lasting mount go only when the scraper forgets the
// removed cgroups, and without that the table is full at the second wave. The mounts' entries (2 000
// mounts × read and write against max_mounts' 256 × 3) cannot fill their table, since the kernel hands
// a wave's mounts the last wave's IDs; there forgetting is what makes a reused ID start from zero,
// which the test checks instead.
const (
	churnWaves          = 40
	churnMountsPerWave  = 50
	churnCgroupsPerWave = 125
	churnFilesPerCgroup = 4
	churnReaders        = 4
	// A wave's tmpfs files hold this line; a reader answers with what it read, so a read that did not
	// happen (the file missing) fails the test rather than passing unseen.
	churnContent = "ok"
)

// TestChurnOfCgroupsAndMountsUnderLoad is issue 35's "5 000 cgroups and 2 000 mounts created and
// removed under load": the source on with per_cgroup, at its defaults, through the production probe,
// mount table and hierarchy readers. Each of 40 waves mounts 50 tmpfs and makes 125 cgroups; four
// shells move from cgroup to cgroup (their pid written to cgroup.procs) and in each read files on four
// of the wave's mounts and read and append to one on the lasting mount, while the test scrapes; then
// the wave's cgroups and mounts are removed and the source scrapes once more. It asserts that (a)
// every scrape's histograms stay within the documented caps, and the caps were reached; (b) every
// cgroup and mount of a wave is in the probe's tables with its calls (none dropped, both drop counters
// 0 throughout), a reused mount ID counts from zero, and nothing of a wave is left in the probe or the
// scraper's state once removed; and (c) the Go heap after GC at the last wave is within a fixed bound
// of the heap at the second.
func TestChurnOfCgroupsAndMountsUnderLoad(t *testing.T) {
	testkit.RequireRoot(t, "mounts tmpfs, makes cgroups and loads BPF")
	h, err := cgroupio.Detect("/sys/fs/cgroup")
	if err != nil {
		testkit.Unavailable(t, "no io/blkio cgroup hierarchy: %v", err)
	}
	started := time.Now()
	base := privateTmpfs(t)
	lasting := filepath.Join(base, "log")
	require.NoError(t, os.WriteFile(lasting, []byte(churnContent+"\n"), 0o644))
	baseID := mountIDAt(t, base)
	parent := testkit.ChildCgroup(t, h.Dir, "churn")
	// Before the parent goes, whatever of its children a failed wave left (one cleanup for all: a
	// cleanup per cgroup would be a record growing with the waves in the heap measured).
	t.Cleanup(func() {
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		for _, e := range entries {
			if e.IsDir() {
				assert.NoError(t, testkit.RemoveCgroup(filepath.Join(parent, e.Name())))
			}
		}
	})
	park := filepath.Join(parent, "park")
	require.NoError(t, os.Mkdir(park, 0o755))
	readers := startReaders(t, park, churnReaders)

	cfg := createDefaultConfig()
	cfg.Enabled, cfg.PerCgroup.Enabled = true, true
	// The probe counts every process's calls: a wave takes 750 of the default 1 024 per-cgroup entries,
	// and on a shared test host (go test runs packages in parallel; containers and pod cgroups of other
	// tests read on their own mounts) the rest of the machine could fill the remainder and fail the
	// zero-drop checks for calls that are not the test's. Room for them; the caps under test are top_n,
	// and a wave that is not forgotten still overflows 4 096 entries by the sixth.
	cfg.MaxMounts, cfg.PerCgroup.MaxSeries = 1024, 4096
	// The production mount reader; the test keeps what it last read, the table the scrape forgot by.
	var scraped []byte
	s := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, openFilelat, func() ([]byte, fsusage.View, error) {
		data, view, err := fsusage.ReadHostMountInfo(cfg.RootPath)
		scraped = data
		return data, view, err
	}, hostCgroups, time.Now)
	require.NoError(t, s.start(t.Context(), nil))
	defer func() { require.NoError(t, s.shutdown(t.Context())) }()
	require.NotNil(t, s.cgFolder, "per_cgroup on")
	p := s.probe.(*filelat.Probe)

	caps := churnCaps{mounts: cfg.TopN, cgroups: cfg.PerCgroup.TopN}
	var most churnCount
	scrape := func() {
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		c := countSeries(md)
		caps.check(t, c)
		most = most.max(c)
	}
	// Every id the test made, sized for the whole run at once, so that the heap measured per wave
	// does not hold a growing record of the test's own.
	ourCgroups := make(map[uint64]bool, churnWaves*churnCgroupsPerWave)
	ourMounts := make(map[uint32]bool, churnWaves*churnMountsPerWave)
	heap := make([]uint64, 0, churnWaves)
	scrapes, made := 0, 0
	for w := range churnWaves {
		dir := filepath.Join(base, fmt.Sprintf("w%02d", w))
		mounts := mountWave(t, dir, churnMountsPerWave)
		mountIDs := mountIDsUnder(t, dir)
		require.Len(t, mountIDs, len(mounts))
		cgroups, cgIDs := makeCgroups(t, parent, w, churnCgroupsPerWave)
		for _, id := range cgIDs {
			ourCgroups[id] = true
		}
		for _, id := range mountIDs {
			ourMounts[id] = true // the kernel reuses mount IDs: fewer than the mounts made
		}
		made += len(mounts)

		// Under load: the readers work through the wave's cgroups while the source scrapes.
		work := make(chan int)
		done := make(chan error, 1)
		go func() {
			done <- readAll(readers, work, func(i int) (string, []string) {
				files := make([]string, churnFilesPerCgroup, churnFilesPerCgroup+1)
				for j := range files {
					files[j] = filepath.Join(mounts[churnMountOf(i, j)], "f")
				}
				return cgroups[i], append(files, lasting)
			})
		}()
		go func() {
			defer close(work)
			for i := range cgroups {
				work <- i
			}
		}()
		for waiting := true; waiting; {
			select {
			case err := <-done:
				require.NoError(t, err)
				waiting = false
			case <-time.After(10 * time.Millisecond):
			}
			scrape()
			scrapes++
		}

		// Every cgroup's reads are in the probe's table, on the mount it read: none was dropped for want
		// of room, since the waves before were forgotten. Every mount's read series holds exactly the
		// reads of the cgroups on it: the kernel gives this wave's mounts the IDs of the last wave's, and
		// only Forget makes a reused ID start from zero (the last wave's cgroups are forgotten, so
		// their reads would be in the mount's count and in no cgroup's).
		snap, err := p.Collect()
		require.NoError(t, err)
		require.Zero(t, snap.Drops, "wave %d", w)
		type cgMountOp struct {
			cg    uint64
			mount uint32
			op    filelat.Op
		}
		seen := map[cgMountOp]bool{}
		cgReads := map[uint32]uint64{}
		for _, x := range snap.Cgroups {
			seen[cgMountOp{x.CgroupID, x.MountID, x.Op}] = x.Histogram.Count > 0
			if x.Op == filelat.Read {
				cgReads[x.MountID] += x.Histogram.Count
			}
		}
		for i, id := range cgIDs {
			for j := range churnFilesPerCgroup {
				mount := mountIDs[mounts[churnMountOf(i, j)]]
				assert.True(t, seen[cgMountOp{id, mount, filelat.Read}], "wave %d: %s's reads on mount %d", w, cgroups[i], mount)
			}
			for _, op := range []filelat.Op{filelat.Read, filelat.Write} {
				assert.True(t, seen[cgMountOp{id, baseID, op}], "wave %d: %s's %s on the lasting mount", w, cgroups[i], op)
			}
		}
		reads := map[uint32]uint64{}
		for _, x := range snap.Series {
			if x.Op == filelat.Read {
				reads[x.MountID] = x.Histogram.Count
			}
		}
		for mp, id := range mountIDs {
			assert.Positive(t, reads[id], "wave %d: reads on %s", w, mp)
			assert.Equal(t, cgReads[id], reads[id], "wave %d: reads on %s (mount %d), by its cgroups and in all", w, mp, id)
		}

		// The wave goes: readers back to the parked cgroup, cgroups removed, mounts unmounted.
		for _, r := range readers {
			require.NoError(t, r.moveTo(park))
		}
		for _, cg := range cgroups {
			require.NoError(t, testkit.RemoveCgroup(cg))
		}
		for _, mp := range mounts {
			require.NoError(t, unix.Unmount(mp, 0))
		}
		require.NoError(t, os.RemoveAll(dir))
		scrape()
		scrapes++

		// One scrape later nothing of the wave is left in the probe or the scraper.
		snap, err = p.Collect()
		require.NoError(t, err)
		require.Zero(t, snap.Drops, "wave %d", w)
		assertNoneLeft(t, s, snap, scraped, ourCgroups, ourMounts, base)

		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = append(heap, ms.HeapAlloc>>10)
		t.Logf("wave %2d: %d mounts, %d cgroups read; probe holds %d mount and %d cgroup series; scraper state %d mount, %d cgroup series; heap %d KiB; %v",
			w, len(mounts), len(cgroups), len(snap.Series), len(snap.Cgroups), len(s.folder.states), len(s.cgFolder.states),
			heap[w], time.Since(started).Round(time.Millisecond))
	}
	t.Logf("%d cgroups and %d mounts made and removed, %d scrapes in %v; at most %d mount and %d cgroup histograms a scrape (caps %d and %d), %d cgroups and %d mounts shown",
		len(ourCgroups), made, scrapes, time.Since(started).Round(time.Millisecond),
		most.mountHists, most.cgroupHists, caps.mountHists(), caps.cgroupHists(), most.cgroups, most.mounts)
	// The caps were in play: more mounts and cgroups were active than have series of their own.
	assert.Equal(t, cfg.TopN, most.mounts, "mounts shown at the busiest scrape")
	assert.Equal(t, cfg.PerCgroup.TopN, most.cgroups, "cgroups shown at the busiest scrape")
	require.Len(t, ourCgroups, churnWaves*churnCgroupsPerWave)
	require.Equal(t, churnWaves*churnMountsPerWave, made)
	// Flat memory: what the scraper keeps is per live series, so after the first waves (whose garbage
	// and first-use allocations settle) the heap after GC does not grow with the waves. A leak of even
	// 100 B per removed cgroup would add 464 KiB over the last 38 waves.
	t.Logf("heap after GC per wave, KiB: %v", heap)
	assert.LessOrEqual(t, heap[len(heap)-1], heap[1]+churnHeapSlack,
		"heap after GC at the last wave against the second, KiB")
}

// churnMountOf is the mount (an index into the wave's) of cgroup i's file j: four mounts a quarter of
// the wave apart, so that every mount is read, by several cgroups.
func churnMountOf(i, j int) int {
	return (i + j*churnMountsPerWave/churnFilesPerCgroup) % churnMountsPerWave
}

// churnHeapSlack is how far the heap after GC may drift between the second wave and the last: the
// noise of the runtime's own structures and the pdata the builder keeps for its next scrape.
const churnHeapSlack = 256 // KiB

// churnCount is one scrape's series: histogram points, and the distinct mounts and cgroups named.
type churnCount struct {
	mountHists, cgroupHists, mounts, cgroups int
}

func (c churnCount) max(o churnCount) churnCount {
	return churnCount{max(c.mountHists, o.mountHists), max(c.cgroupHists, o.cgroupHists), max(c.mounts, o.mounts), max(c.cgroups, o.cgroups)}
}

// countSeries counts md's histogram points and the mounts and cgroups they name ("other" not a name).
func countSeries(md pmetric.Metrics) churnCount {
	var c churnCount
	mounts, cgroups := map[string]bool{}, map[string]bool{}
	pdatawalk.ForEachHistogramPoint(md, func(_ pcommon.Resource, m pmetric.Metric, dp pmetric.ExponentialHistogramDataPoint) {
		mp, _ := dp.Attributes().Get("system.filesystem.mountpoint")
		switch m.Name() {
		case histograms[0].name:
			c.mountHists++
			if mp.Str() != otherMount {
				mounts[mp.Str()] = true
			}
		case histograms[1].name:
			c.cgroupHists++
			if cg, _ := dp.Attributes().Get("cgroup.path"); cg.Str() != otherCgroup {
				cgroups[cg.Str()] = true
			}
		}
	})
	c.mounts, c.cgroups = len(mounts), len(cgroups)
	return c
}

// churnCaps is the documented bound on a scrape (docs/file-latency.md, Caps): top_n mounts × 3
// operations + 3 "other"; per_cgroup.top_n cgroups × (top_n mounts + their "other") × 3 + 3 "other".
type churnCaps struct{ mounts, cgroups int }

func (c churnCaps) mountHists() int  { return c.mounts*3 + 3 }
func (c churnCaps) cgroupHists() int { return c.cgroups*(c.mounts+1)*3 + 3 }

func (c churnCaps) check(t *testing.T, n churnCount) {
	t.Helper()
	require.LessOrEqual(t, n.mounts, c.mounts, "mounts with series of their own")
	require.LessOrEqual(t, n.mountHists, c.mountHists(), "mount histograms")
	require.LessOrEqual(t, n.cgroups, c.cgroups, "cgroups with series of their own")
	require.LessOrEqual(t, n.cgroupHists, c.cgroupHists(), "cgroup histograms")
}

// assertNoneLeft checks that the probe's tables (snap, read after the scrape) and the scraper's state
// hold nothing of the test's removed cgroups and mounts. Cgroup ids are never reused (kernfs ids
// carry a generation). Mount IDs are, across mount namespaces: another process on the host may mount
// under an ID of ours, in the host's namespace or in one of its own, and read there (seen: 25 reads on
// a mount of another namespace, between the scrape and snap). So an ID of ours may be in the probe
// again, but only as a mount elsewhere than under base, that the table the scrape read (scraped) or
// some process's table now lists.
func assertNoneLeft(t *testing.T, s *filelatScraper, snap filelat.Snapshot, scraped []byte, ourCgroups map[uint64]bool, ourMounts map[uint32]bool, base string) {
	t.Helper()
	for _, x := range snap.Cgroups {
		require.False(t, ourCgroups[x.CgroupID], "removed cgroup %d still in the probe (mount %d, %s)", x.CgroupID, x.MountID, x.Op)
	}
	before := mountPoints(t, scraped)
	for _, x := range snap.Series {
		if !ourMounts[x.MountID] {
			continue
		}
		mp, ok := before[x.MountID]
		if !ok {
			mp, ok = mountedAnywhere(x.MountID)
		}
		require.True(t, ok && !strings.HasPrefix(mp, base+"/"),
			"unmounted mount %d still in the probe (%s, %d calls); mounted at %q", x.MountID, x.Op, x.Histogram.Count, mp)
	}
	for k, st := range s.folder.states {
		require.False(t, strings.HasPrefix(st.mount.MountPoint, base+"/"), "scraper keeps unmounted %s (mount %d)", st.mount.MountPoint, k.id)
	}
	require.LessOrEqual(t, s.folder.holders.Live(), len(s.folder.states), "mount slots tracked beyond the live series")
	for k := range s.cgFolder.states {
		require.False(t, ourCgroups[k.cg], "scraper keeps removed cgroup %d", k.cg)
	}
	for id := range ourCgroups {
		require.False(t, s.cgFolder.holders.Held(id), "removed cgroup %d holds a slot", id)
	}
	for k := range s.cgFolder.rests {
		require.False(t, ourCgroups[k.cg], "scraper keeps a rest of removed cgroup %d", k.cg)
	}
	require.LessOrEqual(t, s.cgFolder.holders.Live(), len(s.cgFolder.states), "cgroup slots tracked beyond the live series")
}

// mountPoints maps the mount IDs of a mountinfo table to their mount points.
func mountPoints(t *testing.T, data []byte) map[uint32]string {
	t.Helper()
	mounts, err := fsusage.ParseMountInfo(data)
	require.NoError(t, err)
	mps := make(map[uint32]string, len(mounts))
	for _, m := range mounts {
		mps[uint32(m.ID)] = m.MountPoint
	}
	return mps
}

// mountedAnywhere finds mount ID id in any process's mount table, whatever its namespace.
func mountedAnywhere(id uint32) (string, bool) {
	tables, _ := filepath.Glob("/proc/[0-9]*/mountinfo")
	for _, path := range tables {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // the process is gone
		}
		mounts, _ := fsusage.ParseMountInfo(data)
		for _, m := range mounts {
			if uint32(m.ID) == id {
				return m.MountPoint, true
			}
		}
	}
	return "", false
}

// privateTmpfs mounts a tmpfs for the test's mounts and makes it private, so that none of them
// propagates to another mount namespace; it goes, with whatever is left under it, when the test ends.
func privateTmpfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, unix.Mount("diskhealth-churn", dir, "tmpfs", 0, "size=16m"))
	t.Cleanup(func() { require.NoError(t, unix.Unmount(dir, unix.MNT_DETACH)) })
	require.NoError(t, unix.Mount("", dir, "", unix.MS_PRIVATE, ""))
	return dir
}

// mountWave mounts n tmpfs under dir, each holding the file f the readers read.
func mountWave(t *testing.T, dir string, n int) []string {
	t.Helper()
	require.NoError(t, os.Mkdir(dir, 0o755))
	mounts := make([]string, n)
	for i := range mounts {
		mp := filepath.Join(dir, fmt.Sprintf("m%03d", i))
		require.NoError(t, os.Mkdir(mp, 0o755))
		require.NoError(t, unix.Mount("diskhealth-churn", mp, "tmpfs", 0, "size=64k"))
		require.NoError(t, os.WriteFile(filepath.Join(mp, "f"), []byte(churnContent+"\n"), 0o644))
		mounts[i] = mp
	}
	return mounts
}

// mountIDsUnder is the kernel mount ID of every mount under dir, by mount point, from the host's table
// (the one the source reads).
func mountIDsUnder(t *testing.T, dir string) map[string]uint32 {
	t.Helper()
	ids := map[string]uint32{}
	for id, mp := range hostMountPoints(t) {
		if strings.HasPrefix(mp, dir+"/") {
			ids[mp] = id
		}
	}
	return ids
}

// mountIDAt is the kernel mount ID of the one mount at dir.
func mountIDAt(t *testing.T, dir string) uint32 {
	t.Helper()
	for id, mp := range hostMountPoints(t) {
		if mp == dir {
			return id
		}
	}
	require.Failf(t, "not mounted", "%s", dir)
	return 0
}

// hostMountPoints maps the mount IDs of the host's table to their mount points.
func hostMountPoints(t *testing.T) map[uint32]string {
	t.Helper()
	data, _, err := fsusage.ReadHostMountInfo("/")
	require.NoError(t, err)
	return mountPoints(t, data)
}

// makeCgroups makes n cgroups under parent for wave w and returns their paths and ids (the inode
// numbers cgroupio.IDs names them by).
func makeCgroups(t *testing.T, parent string, w, n int) ([]string, []uint64) {
	t.Helper()
	paths, ids := make([]string, n), make([]uint64, n)
	for i := range paths {
		paths[i] = filepath.Join(parent, fmt.Sprintf("w%02d-c%03d", w, i))
		require.NoError(t, os.Mkdir(paths[i], 0o755))
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(paths[i], &st))
		ids[i] = st.Ino
	}
	return paths, ids
}

// reader is a long-lived shell that reads the first line of each file of a line it is sent with its
// read builtin (read(2) calls of its own, in whatever cgroup it is in), appends a line to the last
// file (a write(2)), and answers with what it read.
type reader struct {
	pid int
	in  io.Writer
	out *bufio.Reader
}

// startReaders starts n readers in cgroup dir; they end with the test.
func startReaders(t *testing.T, dir string, n int) []*reader {
	t.Helper()
	readers := make([]*reader, n)
	for i := range readers {
		cmd := testkit.CgroupCommand(dir, "sh", "-c", `while read -r files; do out=; for f in $files; do x=; read -r x < "$f"; out="$out$x "; done; echo `+churnContent+` >> "$f"; echo "$out"; done`)
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { stopReader(t, cmd, in) })
		readers[i] = &reader{pid: cmd.Process.Pid, in: in, out: bufio.NewReader(out)}
	}
	return readers
}

// stopReader ends a reader by closing its input and waits for it.
func stopReader(t *testing.T, cmd *exec.Cmd, in io.Closer) {
	t.Helper()
	_ = in.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("reader %d: %v", cmd.Process.Pid, err)
	}
}

func (r *reader) moveTo(cgroup string) error {
	return os.WriteFile(filepath.Join(cgroup, "cgroup.procs"), []byte(strconv.Itoa(r.pid)), 0o644)
}

// read moves r into cgroup and has it read files there (paths without blanks) and append to the
// last.
func (r *reader) read(cgroup string, files []string) error {
	if err := r.moveTo(cgroup); err != nil {
		return fmt.Errorf("move reader %d to %s: %w", r.pid, cgroup, err)
	}
	if _, err := io.WriteString(r.in, strings.Join(files, " ")+"\n"); err != nil {
		return err
	}
	line, err := r.out.ReadString('\n')
	if err != nil {
		return fmt.Errorf("reader %d: %w", r.pid, err)
	}
	if want := strings.Repeat(churnContent+" ", len(files)); strings.TrimSuffix(line, "\n") != want {
		return fmt.Errorf("reader %d in %s read %q from %v, want %q", r.pid, cgroup, line, files, want)
	}
	return nil
}

// readAll has the readers take the work's indexes, in parallel, and read what job names for each.
func readAll(readers []*reader, work <-chan int, job func(int) (cgroup string, files []string)) error {
	errs := make([]error, len(readers))
	var wg sync.WaitGroup
	for i, r := range readers {
		wg.Go(func() {
			for w := range work {
				if errs[i] == nil {
					errs[i] = r.read(job(w))
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

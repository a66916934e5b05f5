package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// dfMount is one filesystem the df test creates.
type dfMount struct {
	mp, fsType, source string
	sizes              []int // files written to it
	inodes             int   // inodes those files and their directory take
}

// TestFilesystemUsageAgreesWithDf creates real filesystems (loop-mounted ext4 with its default 5 %
// root reserve, xfs, a sized tmpfs) holding files of known sizes, runs the built collector on them
// alone, and requires used, free (df's Avail), reserved, limit and inodes to equal df's numbers for
// the same mounts exactly, and Use% and IUse% to be df's percentages before df rounds them up.
func TestFilesystemUsageAgreesWithDf(t *testing.T) {
	bin := collectorBinary(t)
	testkit.RequireRoot(t, "comparing filesystem usage with df on real filesystems (mount, losetup, mkfs)")
	tools := testkit.Debian.Tools(t, map[string]string{"df": "coreutils", "mkfs.ext4": "e2fsprogs", "mkfs.xfs": "xfsprogs"})
	df, mkext4, mkxfs := tools["df"], tools["mkfs.ext4"], tools["mkfs.xfs"]

	dir := t.TempDir()
	// Sizes away from block and page multiples, so rounding to the allocation unit shows.
	sizes := []int{1 << 20, 5000, 0, 3<<20 + 1, 123457}
	var mounts []dfMount

	// lazy_*_init=0: mkfs writes the inode tables and journal itself instead of a kernel thread after
	// mounting, so nothing changes the filesystem while the two sides look at it.
	ext4 := filepath.Join(dir, "ext4")
	dev := mountLoop(t, ext4, "ext4", 64<<20, mkext4, "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0")
	mounts = append(mounts, dfMount{mp: ext4, fsType: "ext4", source: dev})

	xfs := filepath.Join(dir, "xfs")
	// 300 MiB is the smallest filesystem current mkfs.xfs accepts; the image is sparse.
	dev = mountLoop(t, xfs, "xfs", 300<<20, mkxfs, "-q", "-f")
	mounts = append(mounts, dfMount{mp: xfs, fsType: "xfs", source: dev})

	mem := filepath.Join(dir, "tmpfs")
	mountTmpfs(t, mem, "e2e-df-tmpfs", "size=16m,nr_inodes=4096")
	mounts = append(mounts, dfMount{mp: mem, fsType: "tmpfs", source: "e2e-df-tmpfs"})

	var mps, include []string
	for i := range mounts {
		m := &mounts[i]
		m.sizes = sizes
		m.inodes = writeFiles(t, m.mp, sizes)
		mps = append(mps, m.mp)
		include = append(include, fmt.Sprintf("%q", regexp.QuoteMeta(m.mp)))
	}
	before := runDf(t, df, mps...)

	out := filepath.Join(t.TempDir(), "metrics.jsonl")
	col := startCollector(t, bin, fileExportConfig(fmt.Sprintf(`receivers:
  disk_health:
    collection_interval: 1s
    initial_delay: 0s
    iostat:
      enabled: false
    filesystem:
      enabled: true
      mount_points:
        include: [%s]
      include_memory_filesystems: true
`, strings.Join(include, ", ")), out))
	tail := &exportTail{path: out}
	i := col.waitExport(t, tail, 0, 20*time.Second, "every test filesystem with status ok", func(md pmetric.Metrics) bool {
		fss := filesystems(md)
		for _, m := range mounts {
			if !hasStatus(fss, m.mp, "ok") {
				return false
			}
		}
		return true
	})
	after := runDf(t, df, mps...)
	col.stop()
	// The filesystems stood still from before the collector started until after this df, so the
	// export and df looked at the same numbers.
	require.Equal(t, before, after, "a filesystem changed while the collector and df read it")

	fss := filesystems(tail.exports[i])
	assert.Len(t, fss, len(mounts), "the export has exactly the included mounts: %v", slices.Sorted(maps.Keys(fss)))
	var table strings.Builder
	fmt.Fprintf(&table, "%-6s %-12s %12s %12s %12s %12s %6s %8s %8s %6s\n",
		"fs", "source", "size", "used", "avail", "reserved", "Use%", "inodes", "iused", "IUse%")
	for _, want := range mounts {
		d := after[want.mp]
		got, ok := fss[want.mp]
		if !assert.True(t, ok, "%s missing from the export", want.mp) {
			continue
		}
		fmt.Fprintf(&table, "%-6s %-12s %12d %12d %12d %12d %5d%% %8d %8d %5d%%\n", want.fsType, filepath.Base(d.source),
			d.size, d.used, d.avail, d.size-d.used-d.avail, d.pcent, d.itotal, d.iused, d.ipcent)
		checkMountAgainstDf(t, want, got, d)
	}
	t.Logf("df on the mounts (the export was compared with every column):\n%s", table.String())
}

// checkMountAgainstDf compares one mount's export with df's line for it, and both with the files
// written to it.
func checkMountAgainstDf(t *testing.T, want dfMount, got *fsMount, d dfRow) {
	t.Helper()
	mp := want.mp
	assert.Equal(t, 1, got.resources, "%s reported once", mp)
	assert.Equal(t, d.source, got.device, "%s system.device is df's source", mp)
	assert.Equal(t, want.source, got.device, "%s system.device", mp)
	assert.Equal(t, d.fstype, got.fsType, "%s system.filesystem.type is df's type", mp)
	assert.Equal(t, want.fsType, got.fsType, "%s system.filesystem.type", mp)
	assert.Equal(t, "rw", got.mode, "%s system.filesystem.mode", mp)
	assert.Equal(t, majorMinor(t, mp), got.majorMinor, "%s disk_health.disk.major_minor is the mount's st_dev", mp)

	num := func(metric, state string) int64 {
		v, ok := got.intValue(metric, state)
		assert.True(t, ok, "%s: no %s %s", mp, metric, state)
		return v
	}
	limit := num("system.filesystem.limit", "")
	used := num("system.filesystem.usage", "used")
	free := num("system.filesystem.usage", "free")
	reserved := num("system.filesystem.usage", "reserved")
	iused := num("disk_health.filesystem.inodes.usage", "used")
	ifree := num("disk_health.filesystem.inodes.usage", "free")

	assert.Equal(t, d.size, limit, "%s limit vs df 1B-blocks", mp)
	assert.Equal(t, d.used, used, "%s used vs df Used", mp)
	assert.Equal(t, d.avail, free, "%s free vs df Avail", mp)
	// df has no reserved column: it is what Size leaves after Used and Avail (f_bfree − f_bavail).
	assert.Equal(t, d.size-d.used-d.avail, reserved, "%s reserved vs df Size − Used − Avail", mp)
	assert.Equal(t, d.iused, iused, "%s inodes used vs df -i IUsed", mp)
	assert.Equal(t, d.iavail, ifree, "%s inodes free vs df -i IFree", mp)
	assert.Equal(t, d.itotal, iused+ifree, "%s inodes used + free vs df -i Inodes", mp)

	util, ok := got.ratio("system.filesystem.utilization")
	if assert.True(t, ok, "%s: no utilization", mp) {
		assert.True(t, pcentAgrees(d.pcent, util), "%s utilization %.9f is not df's Use%% %d%%", mp, util, d.pcent)
		assert.InDelta(t, float64(used)/float64(used+free), util, 1e-12, "%s utilization is used / (used + free)", mp)
	}
	iutil, ok := got.ratio("disk_health.filesystem.inodes.utilization")
	if assert.True(t, ok, "%s: no inodes utilization", mp) {
		assert.True(t, pcentAgrees(d.ipcent, iutil), "%s inodes utilization %.9f is not df's IUse%% %d%%", mp, iutil, d.ipcent)
	}

	// The files are there: their bytes are used, their inodes taken.
	var bytes, pages int64
	for _, s := range want.sizes {
		bytes += int64(s)
		pages += (int64(s) + int64(os.Getpagesize()) - 1) / int64(os.Getpagesize())
	}
	switch want.fsType {
	case "ext4":
		// Free for root only: mkfs.ext4's default 5 % root reserve and the clusters ext4 keeps for
		// itself (min(2 %, 4096 clusters), /sys/fs/ext4/<dev>/reserved_clusters), both outside f_bavail.
		r := ext4Reserve(t, want.source)
		assert.Equal(t, r.rootBlocks, r.blocks*5/100, "%s: mkfs.ext4's default reserve is 5 %% of %d blocks", mp, r.blocks)
		assert.Equal(t, (r.rootBlocks+r.ownClusters)*r.blockSize, reserved, "%s reserved vs (tune2fs reserved blocks "+
			"%d + reserved_clusters %d) × %d", mp, r.rootBlocks, r.ownClusters, r.blockSize)
	case "tmpfs":
		// tmpfs has no metadata blocks and no reserve: used is the files' pages, and every inode is
		// one of the files, their directory or the root.
		assert.Equal(t, pages*int64(os.Getpagesize()), used, "%s used is the files' pages", mp)
		assert.Equal(t, int64(want.inodes+1), iused, "%s inodes used are the files, their directory and the root", mp)
		assert.Zero(t, reserved, "%s reserved", mp)
	}
	assert.GreaterOrEqual(t, used, bytes, "%s used covers the %d bytes written", mp, bytes)
	assert.GreaterOrEqual(t, iused, int64(want.inodes), "%s inodes used cover the %d created", mp, want.inodes)
}

// ext4Counts are an ext4 filesystem's block counts as its superblock and sysfs give them.
type ext4Counts struct {
	blocks, rootBlocks, blockSize, ownClusters int64
}

// ext4Reserve reads the reserve of the ext4 filesystem on dev: `tune2fs -l` for the superblock's
// block count, reserved block count and block size, sysfs for ext4's own reserved clusters.
func ext4Reserve(t *testing.T, dev string) ext4Counts {
	t.Helper()
	out := runCmd(t, testkit.Tool(t, "tune2fs", "e2fsprogs"), "-l", dev)
	fields := map[string]*int64{}
	var c ext4Counts
	fields["Block count"], fields["Reserved block count"], fields["Block size"] = &c.blocks, &c.rootBlocks, &c.blockSize
	for line := range strings.SplitSeq(string(out), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if dst, want := fields[strings.TrimSpace(k)]; ok && want {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			require.NoError(t, err, "tune2fs %s: %q", k, line)
			*dst = n
			delete(fields, strings.TrimSpace(k))
		}
	}
	require.Empty(t, fields, "tune2fs -l %s lacks these lines:\n%s", dev, out)
	sys, err := os.ReadFile(filepath.Join("/sys/fs/ext4", filepath.Base(dev), "reserved_clusters"))
	require.NoError(t, err)
	c.ownClusters, err = strconv.ParseInt(strings.TrimSpace(string(sys)), 10, 64)
	require.NoError(t, err)
	return c
}

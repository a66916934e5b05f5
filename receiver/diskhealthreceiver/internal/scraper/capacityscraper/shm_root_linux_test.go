package capacityscraper

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"golang.org/x/sys/unix"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
)

// readUint reads a cgroup file holding one number.
func readUint(t *testing.T, path string) uint64 {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	require.NoError(t, err)
	return v
}

// TestFSScraperPodSHMRealCgroupV1: a pod's 64 MiB memory emptyDir (a real tmpfs at the kubelet's path)
// and its memory cgroup v1 limited to 96 MiB, written 8 MiB at a time by a process in that cgroup; at
// 40 MiB the limit is lowered to 48 MiB for a scrape, then raised again, and the writes go on until
// ENOSPC. At every scrape the headroom equals min(tmpfs free, memory.limit_in_bytes −
// memory.usage_in_bytes) within one page: the tmpfs bites first, then the cgroup, then the tmpfs; the
// will_fail event comes at the scrape before the write that fails.
func TestFSScraperPodSHMRealCgroupV1(t *testing.T) {
	dhtest.RequireRoot(t, "tmpfs mounts and memory cgroups")
	memRoot := "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(memRoot, "memory.limit_in_bytes")); err != nil {
		dhtest.Unavailable(t, "no cgroup v1 memory hierarchy here: %v", err)
	}
	dd := dhtest.Tool(t, "dd", "coreutils")
	kubelet := t.TempDir()
	const uid = "6f1c0e52-0000-4000-8000-00000000d0d0"
	mnt := filepath.Join(kubelet, "pods", uid, "volumes", "kubernetes.io~empty-dir", "dshm")
	require.NoError(t, os.MkdirAll(mnt, 0o755))
	run(t, "mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mnt)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	cg := filepath.Join(memRoot, "kubepods", "burstable", "pod"+uid)
	require.NoError(t, os.MkdirAll(cg, 0o755))
	t.Cleanup(func() {
		_ = os.Remove(cg) // empty once the writers are gone and the tmpfs unmounted
		_ = os.Remove(filepath.Dir(cg))
		_ = os.Remove(filepath.Dir(filepath.Dir(cg)))
	})
	setLimit := func(n int) {
		require.NoError(t, os.WriteFile(filepath.Join(cg, "memory.limit_in_bytes"), []byte(strconv.Itoa(n)), 0o644))
	}
	setLimit(96 << 20)

	cfg := testConfig()
	cfg.KubeletRootDir = kubelet
	cfg.MountPoints = match.Config{Include: []string{regexp.QuoteMeta(kubelet) + "/.*"}}
	sink := new(consumertest.LogsSink)
	s, err := newScraper(scrapertest.NewNopSettings(metadata.Type), cfg, sink, time.Now)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.shutdown(t.Context())) })

	var bounds []string
	eventAt, written := -1, 0
steps:
	for step := 0; ; step++ {
		switch {
		case step == 6:
			setLimit(48 << 20)
		case step > 0:
			if step == 7 {
				setLimit(96 << 20)
			}
			// The pages are charged to the cgroup of the process that writes them.
			script := fmt.Sprintf("echo $$ > %s/cgroup.procs && exec %s if=/dev/zero of=%s/shm bs=1M count=8 seek=%d conv=notrunc status=none",
				cg, dd, mnt, written)
			out, err := exec.Command("sh", "-c", script).CombinedOutput()
			if err != nil {
				require.Contains(t, string(out), "No space left on device")
				require.Equal(t, step-1, eventAt, "the event came at the scrape before the write that failed")
				break steps
			}
			written += 8
		}
		if step > 12 {
			t.Fatal("the tmpfs never filled")
		}
		md, err := s.scrape(t.Context())
		if err != nil {
			t.Logf("host mounts besides the test's: %v", err)
		}
		var st unix.Statfs_t
		require.NoError(t, unix.Statfs(mnt, &st))
		free := st.Bavail * uint64(st.Bsize)
		limit, usage := readUint(t, filepath.Join(cg, "memory.limit_in_bytes")), readUint(t, filepath.Join(cg, "memory.usage_in_bytes"))
		want, bound := free, "tmpfs"
		if limit-usage < free {
			want, bound = limit-usage, "cgroup_memory"
		}
		got := shmPoints(md, "disk_health.filesystem.shm.headroom")[uid]
		var v int64
		var b string
		_, err = fmt.Sscanf(got, "%d %s", &v, &b)
		require.NoError(t, err, "step %d: %q", step, got)
		assert.InDelta(t, float64(want), float64(v), 4096, "step %d: headroom = min(tmpfs free %d, limit %d − usage %d)", step, free, limit, usage)
		assert.Equal(t, bound, b, "step %d", step)
		bounds = append(bounds, b)
		if sink.LogRecordCount() > 0 && eventAt < 0 {
			eventAt = step
		}
		t.Logf("step %d: headroom %d (%s); tmpfs free %d, cgroup %d − %d; events %d", step, v, b, free, limit, usage, sink.LogRecordCount())
	}
	assert.Equal(t, []string{"tmpfs", "tmpfs", "tmpfs", "tmpfs", "tmpfs", "tmpfs", "cgroup_memory", "tmpfs", "tmpfs", "tmpfs"}, bounds)
	require.Equal(t, 1, sink.LogRecordCount())
	lr := sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	attr := lr.Attributes().AsRaw()
	assert.Equal(t, EventSHMWillFail, lr.EventName())
	assert.Equal(t, uid, attr["k8s.pod.uid"])
	assert.Equal(t, "tmpfs", attr["disk_health.shm.bound"])
	assert.Contains(t, lr.Body().Str(), "ENOSPC")
}

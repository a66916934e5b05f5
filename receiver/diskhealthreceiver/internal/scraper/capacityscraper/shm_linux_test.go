package capacityscraper

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage/fsusagetest"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"golang.org/x/sys/unix"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
)

const (
	podV1   = "6f1c0e52-0000-4000-8000-0000000000a1"
	podV2   = "6f1c0e52-0000-4000-8000-0000000000b2"
	podNone = "6f1c0e52-0000-4000-8000-0000000000c3"
)

func emptyDirPath(uid string) string {
	return "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~empty-dir/dshm"
}

// shmPoints is metric name's values by pod UID, with the bound where the metric has one.
func shmPoints(md pmetric.Metrics, name string) map[string]string {
	out := map[string]string{}
	for uid, dp := range pointsBy(md, name, "k8s.pod.uid") {
		out[uid] = fmt.Sprint(dp.IntValue())
		if b, ok := dp.Attributes().Get("disk_health.filesystem.shm.bound"); ok {
			out[uid] += " " + b.Str()
		}
	}
	return out
}

// TestFSScraperPodSHM: three pods with a 1 GiB memory emptyDir each, 256 MiB written: one under a
// cgroup v1 memory limit of 512 MiB with 400 MiB used (the cgroup bites first), one under cgroup v2
// with 2 GiB and 300 MiB (the tmpfs bites first), one whose cgroup is not found (the tmpfs alone).
func TestFSScraperPodSHM(t *testing.T) {
	root := dhtest.NewRoot(t)
	mountinfo := fsusagetest.HostMountinfo
	for i, uid := range []string{podV1, podV2, podNone} {
		mountinfo += fmt.Sprintf("%d 25 0:%d / %s rw,relatime shared:%d - tmpfs tmpfs rw,size=1048576k\n", 60+i, 60+i, emptyDirPath(uid), 60+i)
	}
	root.Write("sys/fs/cgroup/memory/kubepods/burstable/pod"+podV1+"/memory.limit_in_bytes", "536870912\n")
	root.Write("sys/fs/cgroup/memory/kubepods/burstable/pod"+podV1+"/memory.usage_in_bytes", "419430400\n")
	root.Write("sys/fs/cgroup/kubepods.slice/kubepods-pod6f1c0e52_0000_4000_8000_0000000000b2.slice/memory.max", "2147483648\n")
	root.Write("sys/fs/cgroup/kubepods.slice/kubepods-pod6f1c0e52_0000_4000_8000_0000000000b2.slice/memory.current", "314572800\n")
	f := fsusagetest.HostStatfs(root.Dir)
	tmpfs := unix.Statfs_t{Type: 0x01021994, Bsize: 4096, Frsize: 4096, Blocks: 262_144, Bfree: 196_608, Bavail: 196_608, Files: 1000, Ffree: 990}
	for _, uid := range []string{podV1, podV2, podNone} {
		f.Answers[filepath.Join(root.Dir, emptyDirPath(uid))] = tmpfs
	}
	clock := t0
	s := newTestCapScraper(t, root.Dir, mountinfo, f, &clock)
	md, err := s.scrape(t.Context())
	require.NoError(t, err)
	dhtest.AssertGolden(t, "capacity-pod-shm", md, pmetrictest.IgnoreStartTimestamp())

	assert.Equal(t, map[string]string{
		podV1:   fmt.Sprint(512<<20-400<<20) + " cgroup_memory",
		podV2:   fmt.Sprint(196_608*4096) + " tmpfs",
		podNone: fmt.Sprint(196_608*4096) + " tmpfs",
	}, shmPoints(md, "disk_health.filesystem.shm.headroom"))
	used := fmt.Sprint(65_536 * 4096)
	assert.Equal(t, map[string]string{podV1: used, podV2: used, podNone: used}, shmPoints(md, "disk_health.filesystem.shm.usage"))

	// pod_shm off (what newScraper makes of PodSHM false): none.
	off := newTestCapScraper(t, root.Dir, mountinfo, f, &clock)
	off.shmCfg = nil
	md, err = off.scrape(t.Context())
	require.NoError(t, err)
	assert.Empty(t, shmPoints(md, "disk_health.filesystem.shm.headroom"))
}

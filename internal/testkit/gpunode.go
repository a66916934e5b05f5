package testkit

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// GPU training node, as GPUNode lays it out (the fleet and essentials tests count their series by it).
const (
	GPUNVMe   = 8   // NVMe namespaces (one per controller)
	GPUMounts = 40  // local filesystems
	GPUPods   = 100 // pod cgroups, one container each
	// GPUBusyPods of them do nearly all the I/O: as many as the cgroups source reports by default.
	GPUBusyPods = 10
)

// GPUNode lays out a root_path shaped like a GPU training node: GPUNVMe NVMe namespaces (259:n, each on
// its own controller with its own serial), GPUMounts local filesystems (LVM volumes), and the cgroup v2
// tree of a kubelet with containerd holding GPUPods best-effort pods, each container reading from one
// of the namespaces. busy are the GPUBusyPods pods' cgroup directories (root-relative), the ones a test
// that makes the cgroups do I/O weights most.
func GPUNode(t testing.TB) (r *Root, busy []string) {
	t.Helper()
	r = NewRoot(t)
	var diskstats, mountinfo strings.Builder
	for i := range GPUNVMe {
		name := fmt.Sprintf("nvme%dn1", i)
		ctrl := fmt.Sprintf("sys/devices/pci0000:00/0000:%02x:00.0/nvme/nvme%d", 0x41+i, i)
		r.Disk(Disk{Name: name, Major: 259, Minor: uint32(i), Dir: ctrl + "/" + name, Device: ctrl,
			Files: map[string]string{"size": "7501476528\n", "removable": "0\n", "ro": "0\n", "wwid": fmt.Sprintf("eui.36344630%08x\n", i),
				"queue/rotational": "0\n", "queue/logical_block_size": "512\n"},
			DeviceFiles: map[string]string{"model": "E2E NVMe 3.84TB\n", "serial": fmt.Sprintf("E2EGPU%04d\n", i), "firmware_rev": "1.0\n"}})
		fmt.Fprintf(&diskstats, "259 %7d %s %d 0 %d 900 %d 0 %d 1200 0 4000 2100 0 0 0 0 300 20\n",
			i, name, 50000+i, 4000000+8*i, 20000+i, 1600000+8*i)
	}
	for i := range GPUMounts {
		mp := "/"
		if i > 0 {
			mp = fmt.Sprintf("/mnt/data%02d", i)
			require.NoError(t, os.MkdirAll(r.Path(mp), 0o755))
		}
		fmt.Fprintf(&mountinfo, "%d 1 253:%d / %s rw,relatime shared:%d - xfs /dev/mapper/vg0-lv%02d rw,attr2,inode64\n", 30+i, i, mp, i+1, i)
	}
	r.Write("proc/diskstats", diskstats.String())
	r.Write("proc/1/mountinfo", mountinfo.String())
	r.Write("proc/stat", ProcStat(time.Now().Add(-time.Hour)))
	r.Write("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n")
	// Every level has its io.stat, as the kernel keeps it: the collector walks down only where a
	// parent's counters moved. A parent's numbers are its children's sums.
	const qos = "sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice"
	var rbytes, rios [GPUNVMe]int
	for p := range GPUPods {
		uid := fmt.Sprintf("0e2e%04x_1a2b_4c3d_8e4f_%012x", p, p)
		pod := fmt.Sprintf("%s/kubepods-besteffort-pod%s.slice", qos, uid)
		stat := fmt.Sprintf("259:%d rbytes=%d wbytes=4096 rios=%d wios=1 dbytes=0 dios=0\n", p%GPUNVMe, 1<<20*(GPUPods-p), 256*(GPUPods-p))
		r.Write(fmt.Sprintf("%s/cri-containerd-%064x.scope/io.stat", pod, p+1), stat)
		r.Write(pod+"/io.stat", stat)
		rbytes[p%GPUNVMe] += 1 << 20 * (GPUPods - p)
		rios[p%GPUNVMe] += 256 * (GPUPods - p)
		if p < GPUBusyPods {
			busy = append(busy, pod)
		}
	}
	var sum strings.Builder
	for i := range GPUNVMe {
		fmt.Fprintf(&sum, "259:%d rbytes=%d wbytes=%d rios=%d wios=%d dbytes=0 dios=0\n", i, rbytes[i], 4096*GPUPods/GPUNVMe, rios[i], GPUPods/GPUNVMe)
	}
	for _, dir := range []string{qos, "sys/fs/cgroup/kubepods.slice", "sys/fs/cgroup"} {
		r.Write(dir+"/io.stat", sum.String())
	}
	return r, busy
}

// ProcStat is a minimal /proc/stat: the receiver reads the boot time (btime) from it.
func ProcStat(boot time.Time) string {
	return "cpu  100 0 100 1000 0 0 0 0 0 0\n" +
		"cpu0 100 0 100 1000 0 0 0 0 0 0\n" +
		"ctxt 1000\n" +
		fmt.Sprintf("btime %d\n", boot.Unix()) +
		"processes 100\nprocs_running 1\nprocs_blocked 0\n"
}

package fsusage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// synthK8s is a mountinfo of n lines shaped like a busy Kubernetes node: a
// few host filesystems, then per-pod tmpfs, overlay, nsfs and bind mounts,
// with the long overlay options real nodes have.
func synthK8s(n int) []byte {
	var b bytes.Buffer
	host := []string{
		"22 1 259:2 / / rw,noatime shared:1 - xfs /dev/nvme0n1p1 rw,attr2,inode64,noquota",
		"23 22 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw",
		"24 22 0:20 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw",
		"25 22 0:5 / /dev rw,nosuid shared:8 - devtmpfs devtmpfs rw,size=7970288k,mode=755",
		"26 22 0:24 / /run rw,nosuid,nodev shared:11 - tmpfs tmpfs rw,mode=755",
		"27 22 259:3 / /boot/efi rw,noatime shared:20 - vfat /dev/nvme0n1p128 rw,fmask=0077",
		"28 22 259:16 / /mnt/data rw,noatime shared:21 - ext4 /dev/nvme1n1 rw",
		"29 22 259:16 /kubelet /var/lib/kubelet rw,noatime shared:21 - ext4 /dev/nvme1n1 rw",
	}
	for i := 0; i < n; i++ {
		id := 100 + i
		switch {
		case i < len(host):
			b.WriteString(host[i])
		case i%5 == 0:
			fmt.Fprintf(&b, "%d 26 0:%d / /run/containerd/io.containerd.runtime.v2.task/k8s.io/%064x/rootfs rw,relatime shared:%d - overlay overlay rw,lowerdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/%d/fs:/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/7/fs,upperdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/%d/fs,workdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/%d/work", id, 1000+i, i, id, i, i+1, i+1)
		case i%5 == 1:
			fmt.Fprintf(&b, "%d 29 0:%d / /var/lib/kubelet/pods/%08x-0000-4000-8000-%012x/volumes/kubernetes.io~projected/kube-api-access-x%d rw,relatime shared:%d - tmpfs tmpfs rw,size=15728640k", id, 1000+i, i, i, i, id)
		case i%5 == 2:
			fmt.Fprintf(&b, "%d 26 0:4 net:[%d] /run/netns/cni-%08x-0000-4000-8000-%012x rw shared:%d - nsfs nsfs rw", id, int64(4026532000)+int64(i), i, i, id)
		case i%5 == 3:
			fmt.Fprintf(&b, "%d 29 259:16 /kubelet/pods/%08x/volumes/kubernetes.io~empty-dir/cache /var/lib/kubelet/pods/%08x/volume-subpaths/cache/app/0 rw,noatime shared:21 - ext4 /dev/nvme1n1 rw", id, i, i)
		default:
			fmt.Fprintf(&b, "%d 26 0:%d / /run/containerd/io.containerd.grpc.v1.cri/sandboxes/%064x/shm rw,nosuid,nodev,noexec,relatime shared:%d - tmpfs shm rw,size=65536k", id, 1000+i, i, id)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// synthDistinct is n local filesystems on distinct devices, all selected
// by default: the worst case for statfs.
func synthDistinct(n int) []byte {
	var b bytes.Buffer
	b.WriteString("1 0 8:0 / / rw - ext4 /dev/sda rw\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "%d 1 %d:%d / /m/%d rw,relatime shared:%d - ext4 /dev/disk%d rw\n", i+1, 8+i/256, i%256, i, i, i)
	}
	return b.Bytes()
}

// sizes go to 10× the largest table the tests read (5 000 mounts), where a cost that grows faster than
// the table shows.
var sizes = []int{50, 5000, 50000}

func BenchmarkParseMountInfo(b *testing.B) {
	for _, n := range sizes {
		data := synthK8s(n)
		b.Run(fmt.Sprintf("k8s-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := ParseMountInfo(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSelect is a reload: parse, shadow, translate, filter, dedupe; a Kubernetes node, and every
// mount stacked on one mount point (the shadow rule's worst case).
func BenchmarkSelect(b *testing.B) {
	for _, n := range sizes {
		data := synthK8s(n)
		b.Run(fmt.Sprintf("k8s-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ms, err := Select(data, SelectOptions{RootPath: "/hostfs"})
				if err != nil || len(ms) != 3 {
					b.Fatal(len(ms), err)
				}
			}
		})
		stacked := synthStacked(n)
		b.Run(fmt.Sprintf("stacked-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Select(stacked, SelectOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/mount")
		})
	}
}

// BenchmarkProcfsGetProcMounts is the alternative we did not take, on the
// same files (it parses only; no filter or dedupe).
func BenchmarkProcfsGetProcMounts(b *testing.B) {
	for _, n := range sizes {
		dir := b.TempDir()
		require.NoError(b, os.MkdirAll(filepath.Join(dir, "1"), 0o755))
		require.NoError(b, os.WriteFile(filepath.Join(dir, "1", "mountinfo"), synthK8s(n), 0o644))
		fs, err := procfs.NewFS(dir)
		require.NoError(b, err)
		b.Run(fmt.Sprintf("k8s-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := fs.GetProcMounts(1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMountTableIdle is the per-scrape cost of the table when nothing
// changed: one poll.
func BenchmarkMountTableIdle(b *testing.B) {
	tbl, err := openTable(TableConfig{RereadEvery: -1}, []tableFile{{"/proc/self/mountinfo", ViewInit}})
	require.NoError(b, err)
	defer tbl.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tbl.Mounts(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMountTableReload is a read of the file plus Select, as after a
// mount event.
func BenchmarkMountTableReload(b *testing.B) {
	for _, n := range sizes {
		dir := b.TempDir()
		path := filepath.Join(dir, "mountinfo")
		require.NoError(b, os.WriteFile(path, synthK8s(n), 0o644))
		tbl, err := openTable(TableConfig{RootPath: "/hostfs"}, []tableFile{{path, ViewInit}})
		require.NoError(b, err)
		b.Run(fmt.Sprintf("k8s-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tbl.buf = tbl.buf[:0] // as if the bytes had changed
				if err := tbl.load(); err != nil {
					b.Fatal(err)
				}
			}
		})
		tbl.Close()
	}
}

// BenchmarkScrape is Collector.Collect (one scrape) with an unchanged table: poll, then
// statfs of every selected mount (n of them, all distinct), with a statfs
// double and with the real system call on real directories.
func BenchmarkScrape(b *testing.B) {
	instant := func(_ string, st *unix.Statfs_t) error {
		*st = unix.Statfs_t{Frsize: 4096, Blocks: 1000, Bfree: 500, Bavail: 400, Files: 10, Ffree: 5}
		return nil
	}
	for _, n := range sizes {
		root := b.TempDir()
		require.NoError(b, os.MkdirAll(filepath.Join(root, "proc/1"), 0o755))
		require.NoError(b, os.WriteFile(filepath.Join(root, "proc/1/mountinfo"), synthDistinct(n), 0o644))
		for i := 1; i < n; i++ {
			require.NoError(b, os.MkdirAll(filepath.Join(root, "m", fmt.Sprint(i)), 0o755))
		}
		for _, sf := range []struct {
			name string
			fn   StatfsFunc
		}{{"double", instant}, {"real", unix.Statfs}} {
			b.Run(fmt.Sprintf("mounts-%d/statfs-%s", n, sf.name), func(b *testing.B) {
				c, err := NewCollector(Config{RootPath: root, RereadEvery: -1, Prober: ProberConfig{Statfs: sf.fn}})
				require.NoError(b, err)
				defer c.Close()
				now := time.Now()
				b.ReportAllocs()
				for b.Loop() {
					now = now.Add(10 * time.Second)
					rs, err := c.Collect(context.Background(), now)
					if err != nil || len(rs) != n || rs[n-1].Status != StatusOK {
						b.Fatal(len(rs), err)
					}
				}
			})
		}
	}
}

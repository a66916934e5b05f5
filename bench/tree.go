// Package bench compares the disk_health receiver with hostmetricsreceiver's disk and filesystem scrapers
// on identical synthetic root trees. It is a module of its own so the main module never depends on
// contrib receivers.
package bench

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Tree is a synthetic root_path: N NVMe disks in <root>/proc/diskstats and <root>/sys, M mounts in
// <root>/proc/1/mountinfo. Each mount point is a real directory under <root>, so both receivers statfs
// the same real (and cheap: a directory on the tree's own filesystem) path.
type Tree struct {
	Root    string
	Devices int
	Mounts  int
}

// Generate lays out the tree under root, replacing whatever an earlier Generate put there (the
// hostmetrics receiver insists that every instance in a process uses one root_path).
func Generate(root string, devices, mounts int) (*Tree, error) {
	for _, d := range []string{"proc", "sys", "mnt", "run", "dev"} {
		if err := os.RemoveAll(filepath.Join(root, d)); err != nil {
			return nil, err
		}
	}
	t := &Tree{Root: root, Devices: devices, Mounts: mounts}
	if err := t.disks(); err != nil {
		return nil, err
	}
	if err := t.mounts(); err != nil {
		return nil, err
	}
	return t, nil
}

// DiskName is the kernel name of synthetic disk i.
func DiskName(i int) string { return "nvme" + strconv.Itoa(i) + "n1" }

func (t *Tree) path(rel ...string) string {
	return filepath.Join(append([]string{t.Root}, rel...)...)
}

func writeFile(p, content string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}

// symlink makes from a relative link to to, as sysfs links are.
func symlink(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(from), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(from), to)
	if err != nil {
		return err
	}
	return os.Symlink(rel, from)
}

// disks writes one 20-field diskstats line per disk (discard and flush fields present, as on kernels
// since 5.5) and the sysfs entries a real NVMe namespace has that the identity readers look at.
func (t *Tree) disks() error {
	f, err := create(t.path("proc", "diskstats"))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i := range t.Devices {
		name := DiskName(i)
		ctrl := t.path("sys", "devices", "pci0000:00", fmt.Sprintf("0000:%02x:%02x.0", i/256%256, i%256), "nvme", "nvme"+strconv.Itoa(i))
		dev := filepath.Join(ctrl, name)
		for p, content := range map[string]string{
			filepath.Join(ctrl, "model"):              "Synthetic NVMe\n",
			filepath.Join(ctrl, "serial"):             fmt.Sprintf("SYN%08d\n", i),
			filepath.Join(ctrl, "firmware_rev"):       "1.0\n",
			filepath.Join(dev, "size"):                "7501476528\n",
			filepath.Join(dev, "wwid"):                fmt.Sprintf("eui.%016x\n", i),
			filepath.Join(dev, "dev"):                 fmt.Sprintf("259:%d\n", i),
			filepath.Join(dev, "queue", "rotational"): "0\n",
			// A data-centre drive: it deallocates (discard), and its power-loss protection means no
			// volatile write cache, so the kernel sends it no flush.
			filepath.Join(dev, "queue", "discard_max_bytes"): "2199023255040\n",
			filepath.Join(dev, "queue", "write_cache"):       "write through\n",
		} {
			if err := writeFile(p, content); err != nil {
				return err
			}
		}
		for from, to := range map[string]string{
			t.path("sys", "class", "block", name):                   dev,
			t.path("sys", "block", name):                            dev,
			t.path("sys", "dev", "block", fmt.Sprintf("259:%d", i)): dev,
			filepath.Join(dev, "device"):                            ctrl,
		} {
			if err := symlink(from, to); err != nil {
				return err
			}
		}
		// Non-zero counters: gopsutil drops devices whose classic counters are all zero.
		fmt.Fprintf(w, "259 %7d %s %d 120 %d 3100 %d 340 %d 9800 2 41000 52000 77 0 8800 12 310 95\n",
			i, name, 100000+i, 8000000+i, 200000+i, 16000000+i)
	}
	return closeAll(w, f)
}

// mounts writes a mountinfo of M local ext4 mounts, each its own filesystem (distinct major:minor, root
// "/"), so neither receiver drops one as a duplicate, a bind mount or a virtual filesystem: both measure
// all M. Line 0 is the root filesystem.
func (t *Tree) mounts() error {
	f, err := create(t.path("proc", "1", "mountinfo"))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i := range t.Mounts {
		mp := "/"
		if i > 0 {
			mp = "/mnt/vol" + strconv.Itoa(i)
			if err := os.MkdirAll(t.path(mp), 0o755); err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "%d 1 259:%d / %s rw,relatime shared:%d - ext4 /dev/vd%d rw\n", 100+i, 1<<16+i, mp, i+1, i)
	}
	if err := closeAll(w, f); err != nil {
		return err
	}
	// gopsutil keeps only filesystems that are not "nodev" in /proc/filesystems.
	files := map[string]string{
		t.path("proc", "filesystems"): "nodev\tsysfs\nnodev\ttmpfs\nnodev\tproc\nnodev\toverlay\n\text4\n\txfs\n",
		t.path("proc", "stat"):        "cpu  1 0 1 1 0 0 0 0 0 0\nbtime 1764000000\n",
		t.path("proc", "uptime"):      "12345.67 23456.78\n",
	}
	for p, c := range files {
		if err := writeFile(p, c); err != nil {
			return err
		}
	}
	return nil
}

func create(p string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	return os.Create(p)
}

func closeAll(w *bufio.Writer, f *os.File) error {
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

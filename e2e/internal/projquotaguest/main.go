//go:build linux

// Command projquotaguest runs inside the QEMU guest of e2e's TestProjectQuotasQEMU, whose Debian kernel has
// the XFS and ext4 project quotas the CI host's kernel lacks: on a loop-mounted XFS (-o prjquota) and a
// loop-mounted ext4 (-O quota,project, -o prjquota) it makes 1 000 project directories each, fills them
// with different sizes, sets limits on some, runs the receiver with project_quotas on and prints each
// directory's reported usage and limits next to GNU du -sB1's answer (vmproto.MarkerProjQuota).
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
	"github.com/diskhealth/diskhealth/internal/testkit/quotakit"
)

const (
	dirs      = 1000
	firstID   = 1000
	imageSize = 400 << 20 // above mkfs.xfs's 300 MiB floor; sparse on tmpfs
)

func main() {
	b := vmproto.ProjQuotaBundle{Guest: vmproto.Guest{Kernel: guestrx.Kernel()}}
	if err := run(&b); err != nil {
		b.Errors = append(b.Errors, err.Error())
	}
	vmproto.Print(os.Stdout, vmproto.MarkerProjQuota, &b)
}

func run(b *vmproto.ProjQuotaBundle) error {
	if err := guestrx.LoadExtraModules("null_blk.ko"); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", 0, "size=900m"); err != nil {
		return fmt.Errorf("mount tmpfs: %w", err)
	}
	// Each filesystem its own project IDs (firstID, then firstID+dirs), as /etc/projects maps an ID to one
	// directory; names "<type>-run-<i>".
	var projects, projid strings.Builder
	// Debian's tools by path: busybox's applets of the same names come first on the guest's PATH.
	filesystems := []struct{ typ, mkfs string }{{"xfs", "/usr/sbin/mkfs.xfs -q -f"}, {"ext4", "/usr/sbin/mke2fs -q -F -t ext4 -O quota,project -I 256 -m 0"}}
	for k, fs := range filesystems {
		mnt := "/mnt/pq-" + fs.typ
		if err := makeFS(fs.typ, fs.mkfs, mnt); err != nil {
			return err
		}
		for i := range dirs {
			fmt.Fprintf(&projects, "%d:%s/runs/run-%d\n", firstID+k*dirs+i, mnt, i)
			fmt.Fprintf(&projid, "%s-run-%d:%d\n", fs.typ, i, firstID+k*dirs+i)
		}
	}
	if err := os.MkdirAll("/etc", 0o755); err != nil {
		return err
	}
	if err := os.WriteFile("/etc/projid", []byte(projid.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile("/etc/projects", []byte(projects.String()), 0o644); err != nil {
		return err
	}
	fsb := make(map[string]*vmproto.ProjQuotaFS, len(filesystems))
	for k, fs := range filesystems {
		f := &vmproto.ProjQuotaFS{Type: fs.typ, Dirs: map[string]*vmproto.ProjQuotaDir{}}
		fsb["/mnt/pq-"+fs.typ] = f
		b.Filesystems = append(b.Filesystems, f)
		if err := fill(f, "/mnt/pq-"+fs.typ, uint32(firstID+k*dirs)); err != nil {
			return err
		}
	}
	unix.Sync()

	logger, logs := guestrx.Observe(zapcore.WarnLevel)
	stop, ms, _, err := guestrx.Start(logger, map[string]any{
		"collection_interval": "1s",
		"filesystem":          map[string]any{"mount_points": map[string]any{"include": []string{"/mnt/pq-.*"}}},
		"capacity":            map[string]any{"project_quotas": map[string]any{"enabled": true, "max_per_filesystem": dirs}},
	})
	if err != nil {
		return err
	}
	md, _, err := guestrx.WaitExport(ms, 0, 60*time.Second, "every project directory", func(md pmetric.Metrics) bool {
		return countPoints(md, "disk_health.filesystem.project.usage") >= 2*dirs
	})
	start := time.Now()
	stop()
	b.Logs = append(b.Logs, guestrx.Lines(logs)...)
	if err != nil {
		return err
	}
	b.Logs = append(b.Logs, fmt.Sprintf("receiver stopped in %v", time.Since(start).Round(time.Millisecond)))
	guestrx.EachMetric(md, func(_ pmetric.ResourceMetrics, m pmetric.Metric) {
		if !strings.HasPrefix(m.Name(), "disk_health.filesystem.project") {
			return
		}
		var dps pmetric.NumberDataPointSlice
		if m.Type() == pmetric.MetricTypeSum {
			dps = m.Sum().DataPoints()
		} else {
			dps = m.Gauge().DataPoints()
		}
		for i := range dps.Len() {
			record(b, fsb, m.Name(), dps.At(i))
		}
	})
	// GNU du (the harness puts it in /usr/sbin; busybox's du in /bin has no -B), once per filesystem.
	for mnt, f := range fsb {
		args := []string{"-sB1"}
		for d := range f.Dirs {
			args = append(args, filepath.Join(mnt, "runs", d))
		}
		out, err := exec.Command("/usr/sbin/du", args...).Output()
		if err != nil {
			return fmt.Errorf("du: %w", err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			size, path, ok := strings.Cut(line, "\t")
			if !ok {
				return fmt.Errorf("du printed %q", line)
			}
			n, err := strconv.ParseInt(size, 10, 64)
			if err != nil {
				return fmt.Errorf("du printed %q", line)
			}
			f.Dirs[filepath.Base(path)].Du = n
		}
		var st unix.Statfs_t
		if err := unix.Statfs(mnt, &st); err != nil {
			return err
		}
		f.Block = st.Bsize
	}
	return nil
}

func countPoints(md pmetric.Metrics, name string) int {
	n := 0
	guestrx.EachMetric(md, func(_ pmetric.ResourceMetrics, m pmetric.Metric) {
		if m.Name() == name {
			n += m.Sum().DataPoints().Len()
		}
	})
	return n
}

// record files one point under its filesystem (by the directory the projects file gave) and directory.
func record(b *vmproto.ProjQuotaBundle, fsb map[string]*vmproto.ProjQuotaFS, name string, dp pmetric.NumberDataPoint) {
	dir, _ := dp.Attributes().Get("disk_health.filesystem.project.directory")
	pname, _ := dp.Attributes().Get("disk_health.filesystem.project.name")
	f := fsb[strings.TrimSuffix(filepath.Dir(dir.Str()), "/runs")]
	if name == "disk_health.filesystem.projects" {
		b.Logs = append(b.Logs, fmt.Sprintf("disk_health.filesystem.projects = %d", dp.IntValue()))
		return
	}
	if f == nil {
		b.Errors = append(b.Errors, fmt.Sprintf("%s: a point for directory %q", name, dir.Str()))
		return
	}
	d := f.Dirs[filepath.Base(dir.Str())]
	if d == nil {
		b.Errors = append(b.Errors, fmt.Sprintf("%s: a point for directory %q not made", name, dir.Str()))
		return
	}
	d.Name = pname.Str()
	lt, _ := dp.Attributes().Get("disk_health.filesystem.project.limit.type")
	switch name + " " + lt.Str() {
	case "disk_health.filesystem.project.usage ":
		d.Usage = dp.IntValue()
	case "disk_health.filesystem.project.headroom ":
		d.Headroom = dp.IntValue()
	case "disk_health.filesystem.project.limit hard":
		d.GotHard = dp.IntValue()
	case "disk_health.filesystem.project.limit soft":
		d.GotSoft = dp.IntValue()
	}
}

// makeFS makes a filesystem of type typ on a loop device over a sparse image and mounts it at mnt with
// project quotas on.
func makeFS(typ, mkfs, mnt string) error {
	img := "/tmp/" + typ + ".img"
	f, err := os.Create(img)
	if err != nil {
		return err
	}
	err = f.Truncate(imageSize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	loop, _, err := quotakit.AttachLoop(img) // attached until the guest powers off
	if err != nil {
		return err
	}
	cmd := append(strings.Fields(mkfs), loop)
	if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", mkfs, loop, err, out)
	}
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(loop, mnt, typ, 0, "prjquota"); err != nil {
		return fmt.Errorf("mount -t %s -o prjquota %s %s: %w", typ, loop, mnt, err)
	}
	return nil
}

// fill makes the 1 000 project directories under mnt/runs (project IDs from first on), each with its own amount of data: a file of
// (i mod 32) blocks plus a tail, a subdirectory with a second file in every fifth, limits on every
// hundredth.
func fill(f *vmproto.ProjQuotaFS, mnt string, first uint32) error {
	chunk := bytes.Repeat([]byte("diskhealth"), 1<<14)
	write := func(path string, n int) error {
		w, err := os.Create(path)
		if err != nil {
			return err
		}
		for n > 0 {
			k, err := w.Write(chunk[:min(n, len(chunk))])
			if err != nil {
				_ = w.Close() // the write failed first: that is the error
				return err
			}
			n -= k
		}
		return w.Close()
	}
	for i := range dirs {
		name := fmt.Sprintf("run-%d", i)
		dir := filepath.Join(mnt, "runs", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		id := first + uint32(i)
		if err := quotakit.SetProject(dir, id); err != nil {
			return err
		}
		d := &vmproto.ProjQuotaDir{ID: int64(id)}
		f.Dirs[name] = d
		if err := write(filepath.Join(dir, "ckpt.pt"), (i%32)*4096+(i*131)%4096); err != nil {
			return err
		}
		if i%5 == 0 {
			if err := os.Mkdir(filepath.Join(dir, "shard"), 0o755); err != nil {
				return err
			}
			if err := write(filepath.Join(dir, "shard", "optim.pt"), 8192+i); err != nil {
				return err
			}
		}
		if i%100 == 0 {
			d.SetHard, d.SetSoft = int64(i/100+1)<<20, int64(i/100+1)<<19
			if err := quotakit.SetProjectLimits(mnt, id, uint64(d.SetHard), uint64(d.SetSoft), 100); err != nil {
				return err
			}
		}
	}
	return nil
}

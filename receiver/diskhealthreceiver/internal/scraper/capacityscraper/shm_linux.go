package capacityscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/podshm"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
)

// podSHM watches the pods' memory emptyDirs: its own selection of the mount table (tmpfs under the
// kubelet's pod volumes, which the source's filters leave out) and its own statfs prober, with the
// same deadlines.
type podSHM struct {
	logger      *zap.Logger
	root        string
	kubeletRoot string
	table       *fsusage.MountTable
	prober      *fsusage.Prober
	// cgroups caches each pod's memory cgroup directory, found again when it cannot be read.
	cgroups map[string]memCgroup
	lastErr map[string]string
	// steps keeps each emptyDir's last usage and whether it was already short of the next step.
	steps map[string]shmStep
}

// shmStep is an emptyDir's usage at the last scrape and whether its headroom was then below the
// step it had just grown by.
type shmStep struct {
	used  uint64
	short bool
}

// memCgroup is a pod's memory cgroup directory and its hierarchy.
type memCgroup struct {
	dir string
	v2  bool
}

// openPodSHM opens the selection; the filter is the kubelet's memory emptyDir paths.
func openPodSHM(logger *zap.Logger, cfg *Config, prober fsusage.ProberConfig) (*podSHM, error) {
	pattern := regexp.QuoteMeta(filepath.Clean(cfg.KubeletRootDir)) + `/pods/[^/]+/volumes/kubernetes\.io~empty-dir/[^/]+`
	filter, err := fsusage.NewFilter(section+".pod_shm", fsusage.FilterConfig{
		MountPoints: match.Config{Include: []string{pattern}}, FSTypes: match.Config{Include: []string{"tmpfs"}}, IncludeMemory: true,
	})
	if err != nil {
		return nil, err
	}
	p, err := fsusage.NewProber(prober)
	if err != nil {
		return nil, err
	}
	table, err := fsusage.OpenMountTable(fsusage.TableConfig{RootPath: cfg.RootPath, Filter: filter, Dedupe: fsusage.DedupeKeep})
	if err != nil {
		p.Close()
		return nil, err
	}
	return &podSHM{logger: logger, root: cfg.RootPath, kubeletRoot: cfg.KubeletRootDir, table: table, prober: p,
		cgroups: map[string]memCgroup{}, lastErr: map[string]string{}, steps: map[string]shmStep{}}, nil
}

func (p *podSHM) close() error {
	p.prober.Close()
	return p.table.Close()
}

// memory reads pod uid's memory cgroup; ok is false when none is found or it cannot be read (logged
// once per change of the problem).
func (p *podSHM) memory(uid string) (podshm.Memory, bool) {
	cg, cached := p.cgroups[uid]
	if !cached {
		cg = p.findCgroup(uid)
	}
	m, err := p.readMemory(cg)
	if err != nil && cached {
		// The pod may have moved (a restart under another QoS class): look again once.
		cg = p.findCgroup(uid)
		m, err = p.readMemory(cg)
	}
	p.report(uid, err)
	if err != nil {
		delete(p.cgroups, uid)
		return podshm.Memory{}, false
	}
	p.cgroups[uid] = cg
	return m, true
}

var errNoCgroup = errors.New("no memory cgroup found for the pod (cgroupfs or systemd driver, any QoS class)")

// findCgroup looks for the pod's directory in the v1 memory hierarchy, then in the v2 one.
func (p *podSHM) findCgroup(uid string) memCgroup {
	base := filepath.Join(p.root, "sys/fs/cgroup")
	for _, d := range podshm.CgroupDirs(uid) {
		if dir := filepath.Join(base, "memory", d); exists(filepath.Join(dir, "memory.limit_in_bytes")) {
			return memCgroup{dir: dir}
		}
		if dir := filepath.Join(base, d); exists(filepath.Join(dir, "memory.max")) {
			return memCgroup{dir: dir, v2: true}
		}
	}
	return memCgroup{}
}

func (p *podSHM) readMemory(cg memCgroup) (podshm.Memory, error) {
	if cg.dir == "" {
		return podshm.Memory{}, errNoCgroup
	}
	limitFile, usageFile, parse := "memory.limit_in_bytes", "memory.usage_in_bytes", podshm.ParseV1
	if cg.v2 {
		limitFile, usageFile, parse = "memory.max", "memory.current", podshm.ParseV2
	}
	limit, err := bounded.ReadFile(filepath.Join(cg.dir, limitFile), bounded.Attr, nil)
	if err != nil {
		return podshm.Memory{}, err
	}
	usage, err := bounded.ReadFile(filepath.Join(cg.dir, usageFile), bounded.Attr, nil)
	if err != nil {
		return podshm.Memory{}, err
	}
	return parse(limit, usage)
}

func (p *podSHM) report(uid string, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if p.lastErr[uid] == msg {
		return
	}
	if err != nil {
		p.logger.Warn("pod shared memory: the pod's memory limit cannot be read; the tmpfs alone bounds its headroom",
			zap.String("k8s.pod.uid", uid), zap.Error(err))
		p.lastErr[uid] = msg
		return
	}
	delete(p.lastErr, uid)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// scrapePodSHM records every memory emptyDir's usage and headroom, each in its domain's resource, and
// buffers the event of one turning short of its next step.
func (s *capScraper) scrapePodSHM(ctx context.Context, ts pcommon.Timestamp, now time.Time) error {
	mounts, err := s.shm.table.Mounts()
	results := s.shm.prober.Probe(ctx, mounts)
	seen := make(map[string]bool, len(results))
	mps := make(map[string]bool, len(results))
	for i := range results {
		r := &results[i]
		uid, _, ok := podshm.EmptyDir(r.Mount.MountPoint, s.shm.kubeletRoot)
		if !ok || r.Status != fsusage.StatusOK {
			continue
		}
		uid = sanitize.String(sanitize.Device, uid)
		seen[uid] = true
		m, haveCgroup := s.shm.memory(uid)
		headroom, bound := podshm.Headroom(r.Usage.Free, m, haveCgroup)
		c := s.mount(r.Mount)
		s.e.Resource(c.Res)
		s.e.AppendDiskHealthFilesystemShmHeadroomDataPoint(ts, emit.Int(headroom), uid, c.Domain, c.MP, shmBounds[bound])
		s.e.AppendDiskHealthFilesystemShmUsageDataPoint(ts, emit.Int(r.Usage.Used), uid, c.Domain, c.MP)

		mps[c.MP] = true
		prev, known := s.shm.steps[c.MP]
		step := shmStep{used: r.Usage.Used}
		if known && r.Usage.Used > prev.used {
			step.short = headroom < r.Usage.Used-prev.used
		}
		if step.short && !prev.short {
			s.shmEvent(c.Res, now, uid, c.MP, headroom, r.Usage.Used-prev.used, bound)
		}
		s.shm.steps[c.MP] = step
	}
	for mp := range s.shm.steps {
		if !mps[mp] {
			delete(s.shm.steps, mp)
		}
	}
	for uid := range s.shm.cgroups {
		if !seen[uid] {
			delete(s.shm.cgroups, uid)
			delete(s.shm.lastErr, uid)
		}
	}
	return err
}

var shmBounds = map[podshm.Bound]metadata.AttributeDiskHealthFilesystemShmBound{
	podshm.BoundTmpfs:  metadata.AttributeDiskHealthFilesystemShmBoundTmpfs,
	podshm.BoundCgroup: metadata.AttributeDiskHealthFilesystemShmBoundCgroupMemory,
}

// shmEvent buffers the record of a pod's shared memory turning short of its next step.
func (s *capScraper) shmEvent(res pcommon.Resource, at time.Time, uid, mp string, headroom, step uint64, bound podshm.Bound) {
	why := "ENOSPC from the tmpfs"
	if bound == podshm.BoundCgroup {
		why = "the OOM killer (tmpfs pages count against the pod's memory limit)"
	}
	body := fmt.Sprintf("pod %s: shared memory %s has %s left and grew by %s since the last scrape: at that rate the next write meets %s",
		uid, mp, bytesText(headroom), bytesText(step), why)
	lr := s.events.Record(res, at, s.now(), EventSHMWillFail, plog.SeverityNumberWarn, body)
	a := lr.Attributes()
	a.PutStr("k8s.pod.uid", uid)
	a.PutStr("system.filesystem.mountpoint", mp)
	a.PutInt("disk_health.shm.headroom", emit.Int(headroom))
	a.PutInt("disk_health.shm.step", emit.Int(step))
	a.PutStr("disk_health.shm.bound", bound.String())
}

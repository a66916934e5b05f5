package capacityscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper"

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/checkpoint"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/projquota"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
)

// ProjectQuotasConfig turns on per-directory usage read from filesystem project quotas.
type ProjectQuotasConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// MountPoints names the filesystems to read (full-match regular expressions on any of a filesystem's
	// reported mount points); with no include, every filesystem whose mount shows project quotas on.
	MountPoints match.Config `mapstructure:"mount_points"`
	// MaxPerFilesystem caps the projects reported per filesystem: the ones using the most bytes.
	MaxPerFilesystem int `mapstructure:"max_per_filesystem"`
	// ProjectsFile (id:directory) and ProjIDFile (name:id) name the projects; host paths, read under
	// root_path when they change; a missing file names nothing.
	ProjectsFile string `mapstructure:"projects_file"`
	ProjIDFile   string `mapstructure:"projid_file"`
}

// projectNamesCap bounds the read of a projects or projid file.
const projectNamesCap = 1 << 20

// projectQuotas reads the project quotas of the selected domains and the names of their projects.
type projectQuotas struct {
	cfg    ProjectQuotasConfig
	logger *zap.Logger
	root   string
	sel    *match.Matcher
	read   func(dir, device string, dst []projquota.Project) ([]projquota.Project, error)

	dirs, names namesFile
	// lastErr is each domain's last read problem ("" for none), so that it is logged once per change;
	// seen marks the domains of this scrape.
	lastErr map[fsusage.Domain]string
	seen    map[fsusage.Domain]bool
	buf     []projquota.Project
	// timeout bounds one domain's quotactl scan (statfs_timeout: the disk under a local filesystem can
	// hang); stuck holds the domains whose scan passed it and has not returned, each asked again only
	// once its call is back.
	timeout time.Duration
	stuck   map[fsusage.Domain]chan quotaScan
	// learners learn the checkpoint saves of each reported project directory with a hard block limit.
	learners *learners[projectKey]
}

// quotaScan is what one quotactl scan returned.
type quotaScan struct {
	ps  []projquota.Project
	err error
}

// projectKey is a project directory: its filesystem and project ID.
type projectKey struct {
	d  fsusage.Domain
	id uint32
}

// name is the project directory's key in the checkpoint storage.
func (k projectKey) name() string { return fmt.Sprintf("%s/project/%d", domainKey(k.d), k.id) }

// projectOwner is what a project directory's checkpoint record belongs to: its filesystem and project
// ID ("" when the filesystem has no identity beyond major:minor).
func projectOwner(r *fsusage.Result, id uint32) string {
	d := domainOwner(r)
	if d == "" {
		return ""
	}
	return fmt.Sprintf("%s\x00project %d", d, id)
}

// projectRef is what an event says of a project directory.
type projectRef struct {
	id        int64
	name, dir string
}

// namesFile is one names file, read again when its modification time changes.
type namesFile struct {
	path, key string
	parse     func([]byte) (map[uint32]string, error)
	mtime     time.Time
	byID      map[uint32]string
	lastErr   string
}

func newProjectQuotas(logger *zap.Logger, cfg *Config) (*projectQuotas, error) {
	pc := cfg.ProjectQuotas
	if !pc.Enabled {
		return nil, nil
	}
	sel, err := pc.MountPoints.Compile(section + ".project_quotas.mount_points")
	if err != nil {
		return nil, err
	}
	p := &projectQuotas{cfg: pc, logger: logger, root: cfg.RootPath, sel: sel, read: projquota.Read,
		lastErr: map[fsusage.Domain]string{}, seen: map[fsusage.Domain]bool{}, learners: newLearners(logger, projectKey.name),
		timeout: cfg.StatfsTimeout, stuck: map[fsusage.Domain]chan quotaScan{}}
	p.dirs = namesFile{path: pc.ProjectsFile, key: "projects_file", parse: projquota.ParseProjects}
	p.names = namesFile{path: pc.ProjIDFile, key: "projid_file", parse: projquota.ParseProjID}
	return p, nil
}

// selected reports whether the domain's projects are read: one of its mounts is named by mount_points
// (and not excluded), or, with no include list, shows project quotas on (and is not excluded).
func (p *projectQuotas) selected(group []fsusage.Result) bool {
	for i := range group {
		m := group[i].Mount
		if p.sel.Match(m.MountPoint) && (p.sel.HasInclude() || m.ProjectQuota) {
			return true
		}
	}
	return false
}

// refresh re-reads the names files that changed.
func (p *projectQuotas) refresh() {
	for _, f := range []*namesFile{&p.dirs, &p.names} {
		f.refresh(p.logger, p.root)
	}
}

func (f *namesFile) refresh(logger *zap.Logger, root string) {
	if f.path == "" {
		return
	}
	path := filepath.Join(root, f.path)
	st, err := os.Stat(path)
	if err == nil && st.ModTime().Equal(f.mtime) && f.byID != nil {
		return
	}
	var byID map[uint32]string
	if err == nil {
		var data []byte
		if data, err = bounded.ReadFile(path, projectNamesCap, nil); err == nil {
			f.mtime = st.ModTime()
			byID, err = f.parse(data)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	f.byID = byID
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != f.lastErr {
		f.lastErr = msg
		if err != nil {
			logger.Warn("project quota names: file read with problems (the lines that parse are used)",
				zap.String("key", section+".project_quotas."+f.key), zap.String("file", f.path), zap.Error(err))
		}
	}
}

// projects reads the domain's project quota records (at most max_per_filesystem, the largest) and
// returns them with the count of all; a problem is logged once per change and yields none.
func (p *projectQuotas) projects(r *fsusage.Result) ([]projquota.Project, int) {
	d := r.Domain
	p.seen[d] = true
	dev := ""
	if strings.HasPrefix(r.Mount.Source, "/dev/") {
		dev = filepath.Join(p.root, r.Mount.Source)
	}
	ps, err := p.scan(d, r.Mount.Path, dev)
	if errors.Is(err, projquota.ErrTruncated) {
		err = nil // the first MaxScan are still right; ErrTruncated is said by the count staying at MaxScan
	}
	p.buf = ps
	p.report(r, err)
	if err != nil {
		return nil, 0
	}
	return projquota.Top(ps, p.cfg.MaxPerFilesystem), len(ps)
}

// scan reads the domain's records within the timeout. A scan past it is left to return in its own
// goroutine (a system call cannot be cancelled), keeps its buffer, and is the domain's only one until it
// has.
func (p *projectQuotas) scan(d fsusage.Domain, dir, dev string) ([]projquota.Project, error) {
	if ch, ok := p.stuck[d]; ok {
		select {
		case <-ch:
			delete(p.stuck, d)
		default:
			return nil, p.errStuck()
		}
	}
	ch := make(chan quotaScan, 1)
	buf := p.buf[:0]
	go func() {
		ps, err := p.read(dir, dev, buf)
		ch <- quotaScan{ps, err}
	}()
	t := time.NewTimer(p.timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.ps, r.err
	case <-t.C:
		p.buf, p.stuck[d] = nil, ch
		return nil, p.errStuck()
	}
}

func (p *projectQuotas) errStuck() error {
	return fmt.Errorf("quotactl did not return within statfs_timeout (%v): the filesystem may hang; not asked again until the call returns", p.timeout)
}

func (p *projectQuotas) report(r *fsusage.Result, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	last, known := p.lastErr[r.Domain]
	p.lastErr[r.Domain] = msg
	if msg == last && known || msg == "" && !known {
		return
	}
	fields := []zap.Field{zap.String("domain", r.Domain.ID()), zap.String("mountpoint", sanitize.String(sanitize.MountPoint, r.Mount.MountPoint)),
		zap.String("device", r.Mount.Source)}
	if err != nil {
		p.logger.Warn("project quotas cannot be read; no per-directory usage for this filesystem", append(fields, zap.Error(err))...)
		return
	}
	p.logger.Info("project quotas read again", fields...)
}

// sweep forgets the domains no longer mounted or selected.
func (p *projectQuotas) sweep() {
	for d := range p.lastErr {
		if !p.seen[d] {
			delete(p.lastErr, d)
		}
	}
	// A stuck scan of a domain gone is forgotten once it has returned; until then it still guards the
	// domain, should it come back.
	for d, ch := range p.stuck {
		if !p.seen[d] && len(ch) > 0 {
			delete(p.stuck, d)
		}
	}
	clear(p.seen)
}

var projectLimitTypes = [...]metadata.AttributeDiskHealthFilesystemProjectLimitType{
	metadata.AttributeDiskHealthFilesystemProjectLimitTypeHard, metadata.AttributeDiskHealthFilesystemProjectLimitTypeSoft,
}

// recordProjects appends the domain's project points, when its projects are read; bind is the domain's
// binding limit. A directory with a hard block limit also gets its own checkpoint learner, which measures
// free space as the directory's headroom, so the save that will hit EDQUOT is foreseen as the one that
// will hit ENOSPC is.
func (s *capScraper) recordProjects(ctx context.Context, ts pcommon.Timestamp, now time.Time, group []fsusage.Result, r *fsusage.Result, c emit.MountResource, bind limit) {
	p := s.projects
	if p == nil || !p.selected(group) {
		return
	}
	ps, all := p.projects(r)
	if p.lastErr[r.Domain] != "" {
		return
	}
	e, uuid, dom := s.e, r.Domain.UUID, c.Domain
	e.AppendDiskHealthFilesystemProjectsDataPoint(ts, int64(all), r.Mount.Source, dom, uuid, r.Mount.FSType)
	for i := range ps {
		q := &ps[i]
		id := int64(q.ID)
		name := sanitize.String(sanitize.ProjectName, p.names.byID[q.ID])
		dir := sanitize.String(sanitize.MountPoint, p.dirs.byID[q.ID])
		headroom, binds := bind.headroom, bind.name.String()
		if q.BlockHard > 0 {
			if quota := emit.Int(q.BlockHard) - emit.Int(q.Used); quota <= headroom {
				headroom, binds = quota, "project_quota"
			}
		}
		e.AppendDiskHealthFilesystemProjectHeadroomDataPoint(ts, headroom, dom, uuid, id, name, dir)
		for k, v := range [2]uint64{q.InodeHard, q.InodeSoft} {
			if v > 0 {
				e.AppendDiskHealthFilesystemProjectInodesLimitDataPoint(ts, emit.Int(v), dom, uuid, id, name, dir, projectLimitTypes[k])
			}
		}
		e.AppendDiskHealthFilesystemProjectInodesUsageDataPoint(ts, emit.Int(q.Inodes), dom, uuid, id, name, dir)
		for k, v := range [2]uint64{q.BlockHard, q.BlockSoft} {
			if v > 0 {
				e.AppendDiskHealthFilesystemProjectLimitDataPoint(ts, emit.Int(v), dom, uuid, id, name, dir, projectLimitTypes[k])
			}
		}
		e.AppendDiskHealthFilesystemProjectUsageDataPoint(ts, emit.Int(q.Used), dom, uuid, id, name, dir)
		if q.BlockHard == 0 {
			continue
		}
		pr := p.learners.observe(ctx, projectKey{r.Domain, q.ID}, projectOwner(r, q.ID), checkpoint.Sample{Time: now, Used: q.Used, Free: uint64(max(0, headroom))})
		ref := &projectRef{id, name, dir}
		if pr.Lost {
			s.relearningEvent(c.Res, now, &pr, c.MP, dom, r, ref)
		}
		if !stateSeries(&pr) {
			continue
		}
		states := func(v int64, st metadata.AttributeDiskHealthFilesystemCheckpointState) {
			e.AppendDiskHealthFilesystemProjectCheckpointStateDataPoint(ts, v, dom, uuid, id, name, dir, st)
		}
		if statesOnly(&pr) {
			appendStates(pr.State, states)
			if pr.Alert {
				s.willFailEvent(c.Res, now, &pr, c.MP, dom, r, binds, ref, nil)
			}
			continue
		}
		if pr.Keep > 0 {
			e.AppendDiskHealthFilesystemProjectCheckpointCopiesDataPoint(ts, int64(pr.Keep), dom, uuid, id, name, dir, rotations[pr.Rotation])
		}
		e.AppendDiskHealthFilesystemProjectCheckpointHeadroomDataPoint(ts, pr.Headroom, dom, uuid, id, name, dir)
		e.AppendDiskHealthFilesystemProjectCheckpointSizeDataPoint(ts, emit.Int(pr.SizeP50), dom, uuid, id, name, dir, metadata.AttributeDiskHealthFilesystemCheckpointPercentileP50)
		e.AppendDiskHealthFilesystemProjectCheckpointSizeDataPoint(ts, emit.Int(pr.SizeP90), dom, uuid, id, name, dir, metadata.AttributeDiskHealthFilesystemCheckpointPercentileP90)
		appendStates(pr.State, states)
		if pr.Alert {
			s.willFailEvent(c.Res, now, &pr, c.MP, dom, r, binds, ref, nil)
		}
	}
}

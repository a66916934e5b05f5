package netfsscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/clientstate"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fuseconn"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/mountstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/nfslog"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/netfsscraper/internal/metadata"
)

// netfsScraper lists the NFS and FUSE mounts (the filesystem source's mount table and filter),
// statfs's them with deadlines (its prober), reads mountstats and the FUSE connections, judges each
// mount's client state and records it.
type netfsScraper struct {
	cfg    *Config
	logger *zap.Logger
	mb     *metadata.MetricsBuilder
	filter *fsusage.Filter
	judge  clientstate.Config
	events *emit.Events
	sink   consumer.Logs // nil: events are logged only

	table  *fsusage.MountTable // opened at the first scrape that can
	prober *fsusage.Prober
	// mounts is each mount instance's state between scrapes; an instance not listed in a scrape is
	// forgotten, so one listed again is a new series.
	mounts map[instance]*mountState
	// states emits disk_health.filesystem.client.state by mount instance.
	states *emit.States[instance, clientstate.State]
	buf    []byte // the mountstats read, reused
	attr   []byte // a waiting file's read, reused
	// klog is the kernel log, for its NFS server lines; nil when it cannot be read (said once).
	klog *kernelLog

	now func() time.Time
}

// instance is one mount of one filesystem: a remount gets a new mount ID (and a new anonymous
// device for NFS), so a new instance and new series.
type instance struct {
	key fsusage.MountKey
	id  int
}

type mountState struct {
	start   pcommon.Timestamp
	tracker *clientstate.Tracker
	prev    *mountstats.Mount // the previous mountstats reading of this instance
	prevAt  time.Time
	// aged: the start was set from the mount's age, at the instance's first mountstats reading.
	aged bool
}

// kind is what the source knows how to read of a mount.
type kind uint8

const (
	kindNone kind = iota
	kindNFS
	kindFUSE
)

func kindOf(fsType string) kind {
	switch {
	case fsType == "nfs" || fsType == "nfs4":
		return kindNFS
	case fsType == "fuse" || fsType == "fuseblk" || strings.HasPrefix(fsType, "fuse."):
		return kindFUSE
	}
	return kindNone
}

func newScraper(set scraper.Settings, cfg *Config, sink consumer.Logs, now func() time.Time) (scraper.Metrics, error) {
	if err := cfg.Validate(section); err != nil {
		return nil, err
	}
	filter, err := cfg.filter(section)
	if err != nil {
		return nil, err
	}
	s := &netfsScraper{
		cfg: cfg, logger: set.Logger, filter: filter,
		mb:     metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set),
		judge:  clientstate.Config{SlowRTT: cfg.SlowRoundTrip, StallAfter: cfg.StallAfter},
		events: emit.NewEvents(metadata.ScopeName, set.BuildInfo.Version), sink: sink,
		mounts: map[instance]*mountState{},
		states: emit.NewStates[instance, clientstate.State](),
		now:    now,
	}
	return scraper.NewMetrics(s.scrape, scraper.WithShutdown(s.shutdown))
}

// ready opens the mount table and starts the prober on the first scrape that can, so that a
// root_path without /proc is reported every scrape (naming the file) instead of failing the start.
func (s *netfsScraper) ready() error {
	if s.table != nil {
		return nil
	}
	prober, err := fsusage.NewProber(fsusage.ProberConfig{Timeout: s.cfg.StatfsTimeout, RemoteTimeout: s.cfg.StatfsTimeout})
	if err != nil {
		return err
	}
	table, err := fsusage.OpenMountTable(fsusage.TableConfig{RootPath: s.cfg.RootPath, Filter: s.filter, Dedupe: fsusage.DedupeDrop})
	if err != nil {
		prober.Close()
		return err
	}
	s.table, s.prober = table, prober
	if s.cfg.KernelLog != "" {
		klog, err := openKernelLog(s.cfg.KernelLog)
		if err != nil {
			s.logger.Info("netfs: the kernel log is not readable: the NFS client states are judged without the kernel's \"server … not responding\" and \"OK\" lines (reading it needs CAP_SYSLOG or kernel.dmesg_restrict=0)", zap.Error(err))
			s.cfg.Status.Set(kernelLogPart, emit.StateDegraded, emit.Classify(err, emit.HasCapability(emit.CapSyslog)))
		}
		s.klog = klog
	}
	return nil
}

// kernelLogPart is the part of the source's status (disk_health.source.status) the kernel log sets.
const kernelLogPart = "kernel_log"

// readKernelLog returns the kernel's NFS server lines since the previous scrape, by server; a read
// error is said once and ends the reading.
func (s *netfsScraper) readKernelLog() map[string][]clientstate.KernelLine {
	if s.klog == nil {
		return nil
	}
	lines, err := s.klog.read()
	if err != nil {
		s.logger.Warn("netfs: reading the kernel log failed: the NFS client states are judged without the kernel's lines from now on", zap.String("path", s.cfg.KernelLog), zap.Error(err))
		_ = s.klog.close() // read-only
		s.klog = nil
		s.cfg.Status.Set(kernelLogPart, emit.StateDegraded, emit.ReasonError)
	}
	return lines
}

func (s *netfsScraper) shutdown(context.Context) error {
	if s.table == nil {
		return nil
	}
	s.prober.Close()
	if s.klog != nil {
		_ = s.klog.close() // read-only
	}
	return s.table.Close()
}

// scrape is one tick. A mount whose statistics cannot be read still reports its state from statfs;
// an unreadable file is a partial error, never the end of the scrape.
func (s *netfsScraper) scrape(ctx context.Context) (pmetric.Metrics, error) {
	var errs scrapererror.ScrapeErrors
	if err := s.ready(); err != nil {
		return pmetric.NewMetrics(), err
	}
	all, err := s.table.Mounts()
	if err != nil {
		errs.AddPartial(1, err)
	}
	var mounts []fsusage.Mount
	nfs, fuse := false, false
	for i := range all {
		switch kindOf(all[i].FSType) {
		case kindNFS:
			nfs = true
		case kindFUSE:
			fuse = true
		default:
			continue
		}
		mounts = append(mounts, all[i])
	}
	// The counters are stamped with the time they are read, before the statfs calls, which may take
	// up to statfs_timeout.
	now := s.now()
	var stats map[string]*mountstats.Mount
	if nfs {
		stats = s.readMountstats(&errs)
	}
	var conns map[string]bool
	if fuse {
		conns = s.readConnections(&errs)
	}
	results := s.prober.Probe(ctx, mounts)
	// After the statfs calls: a line the kernel logged while one waited belongs to this scrape. Read
	// without NFS mounts too, so that no old line waits for the next one.
	kernel := s.readKernelLog()
	ts := pcommon.NewTimestampFromTime(now)
	seen := make(map[instance]bool, len(results))
	_, view := s.table.File()
	for i := range results {
		r := &results[i]
		m := r.Mount
		in := instance{m.Key(), m.ID}
		seen[in] = true
		st := s.mounts[in]
		if st == nil {
			st = &mountState{start: ts, tracker: clientstate.NewTracker(s.judge)}
			s.mounts[in] = st
		}
		rec := recorder{s: s, ts: ts, dev: m.Source, mp: sanitize.String(sanitize.MountPoint, m.MountPoint), typ: m.FSType}
		obs := clientstate.Observation{At: now, Statfs: statfsOutcome(r), StatfsErr: r.Err}
		switch kindOf(m.FSType) {
		case kindNFS:
			obs.Kernel = kernel[nfslog.Server(m.Source)]
			key := m.MountPoint
			if view == fsusage.ViewSelf {
				key = m.Path
			}
			if cur := stats[key]; cur != nil {
				last := st.prev
				if obs.RPC = st.observeNFS(cur, now); obs.RPC == nil {
					last = nil // first reading, or the counters went back
				}
				rec.nfs(cur, last)
			} else {
				st.prev = nil
			}
		case kindFUSE:
			if conns != nil {
				f, err := s.readFUSE(m, conns, obs.Statfs)
				if err != nil {
					errs.AddPartial(1, err)
				} else {
					obs.FUSE = f
					rec.fuse(f)
				}
			}
		}
		state, change := st.tracker.Observe(obs)
		s.states.Emit(in, rec.state, state)
		if change != nil {
			s.event(now, m, rec.mp, change)
		}
		s.mb.EmitForResource(metadata.WithStartTimeOverride(st.start))
	}
	for in := range s.mounts {
		if !seen[in] {
			delete(s.mounts, in)
		}
	}
	s.states.EndScrape()
	md := s.mb.Emit()
	if err := s.events.Send(ctx, s.logger, s.sink); err != nil {
		errs.AddPartial(1, err)
	}
	return md, errs.Combine()
}

// statfsOutcome maps the prober's result to what the state engine weighs.
func statfsOutcome(r *fsusage.Result) clientstate.Statfs {
	switch r.Status {
	case fsusage.StatusOK:
		return clientstate.StatfsOK
	case fsusage.StatusTimeout:
		if errors.Is(r.Err, context.Canceled) || errors.Is(r.Err, context.DeadlineExceeded) {
			// The scrape ended (the collector's timeout), not the mount's deadline.
			return clientstate.StatfsNone
		}
		return clientstate.StatfsTimeout
	case fsusage.StatusIOError:
		if errors.Is(r.Err, unix.ESTALE) || errors.Is(r.Err, unix.ENOTCONN) {
			return clientstate.StatfsStale
		}
		return clientstate.StatfsFailed
	}
	// Permission, gone between listing and statfs, another error: says nothing of the server.
	return clientstate.StatfsNone
}

// readMountstats reads the mountstats file of the mount table's view (the same process's), keyed
// by mount point as that view lists it; the last block of a mount point is the mount on top.
func (s *netfsScraper) readMountstats(errs *scrapererror.ScrapeErrors) map[string]*mountstats.Mount {
	file, _ := s.table.File()
	path := filepath.Join(filepath.Dir(file), "mountstats")
	// One seq_file record per mount: a plain read would stop at the first page, losing the NFSv4
	// mounts (about 4 KiB each) past it.
	data, err := bounded.ReadRecords(path, bounded.Mountinfo, s.buf)
	s.buf = data[:0]
	if err != nil {
		errs.AddPartial(1, err)
		return nil
	}
	parsed, err := mountstats.Parse(data)
	if err != nil {
		errs.AddPartial(emit.CountErrors(err), err)
	}
	stats := make(map[string]*mountstats.Mount, len(parsed))
	for i := range parsed {
		stats[parsed[i].MountPoint] = &parsed[i]
	}
	return stats
}

// readConnections lists the FUSE connections; nil when fusectl is not mounted under root_path, so
// that no mount is called gone for want of it. A mount whose connection is not listed was unmounted
// between the mount table's read and this one.
func (s *netfsScraper) readConnections(errs *scrapererror.ScrapeErrors) map[string]bool {
	dir := filepath.Join(s.cfg.RootPath, fuseconn.Dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		errs.AddPartial(1, err)
		return nil
	}
	if len(entries) == 0 {
		// Every FUSE mount has its directory while fusectl is mounted (an aborted connection keeps
		// it until the unmount): none at all means fusectl is not mounted there.
		errs.AddPartial(1, fmt.Errorf("%s is empty: fusectl is not mounted there (mount -t fusectl none %s), so FUSE requests waiting cannot be read", dir, dir))
		return nil
	}
	conns := make(map[string]bool, len(entries))
	for _, e := range entries {
		conns[e.Name()] = true
	}
	return conns
}

// readFUSE reads a FUSE mount's connection: gone when its directory is, aborted (the daemon died)
// when statfs says the transport is not connected.
func (s *netfsScraper) readFUSE(m *fsusage.Mount, conns map[string]bool, statfs clientstate.Statfs) (*clientstate.FUSE, error) {
	name := fuseconn.Name(m.Major, m.Minor)
	if !conns[name] {
		return &clientstate.FUSE{}, nil
	}
	path := filepath.Join(s.cfg.RootPath, fuseconn.Dir, name, "waiting")
	data, err := bounded.ReadFile(path, bounded.Attr, s.attr)
	s.attr = data[:0]
	if err != nil {
		return nil, err
	}
	n, err := fuseconn.ParseWaiting(data)
	if err != nil {
		return nil, &os.PathError{Op: "parse", Path: path, Err: err}
	}
	return &clientstate.FUSE{Connected: statfs != clientstate.StatfsStale, Waiting: n}, nil
}

// observeNFS keeps cur as the instance's reading and returns the RPC activity since the previous
// one (nil on the first reading, or when the counters went back: a new instance, whose series start
// again at its mount time).
func (st *mountState) observeNFS(cur *mountstats.Mount, now time.Time) *clientstate.RPC {
	prev, prevAt := st.prev, st.prevAt
	st.prev, st.prevAt = cur, now
	mounted := pcommon.NewTimestampFromTime(now.Add(-time.Duration(min(cur.Age, uint64(now.Unix()))) * time.Second))
	if !st.aged {
		// The counters count from the mount: the series starts then, not when the collector came.
		st.aged, st.start = true, mounted
	}
	if prev == nil {
		return nil
	}
	if mountstats.Reset(prev, cur) {
		// The new series starts at the new mount's time, and never where the old one did: after
		// the previous reading at the earliest, which the old counters still belong to.
		st.start = max(mounted, pcommon.NewTimestampFromTime(prevAt), st.start+1)
		return nil
	}
	pt, ct := prev.Total(), cur.Total()
	rpc := &clientstate.RPC{
		Interval:        now.Sub(prevAt),
		Completed:       ct.Ops - pt.Ops,
		Sent:            sub(cur.Transport.Sends, prev.Transport.Sends),
		Received:        sub(cur.Transport.Receives, prev.Transport.Receives),
		Retransmissions: sub(ct.Retransmissions(), pt.Retransmissions()),
		MajorTimeouts:   ct.MajorTimeouts - pt.MajorTimeouts,
	}
	if m := mountstats.Interval(pt, ct); m.OK {
		rpc.RTT = time.Duration(m.RTT * float64(time.Second))
	}
	return rpc
}

// sub is a - b, 0 when b is larger (a transport torn down lowers the sum of the nconnect ones).
func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// event buffers one state change with its evidence.
func (s *netfsScraper) event(now time.Time, m *fsusage.Mount, mp string, c *clientstate.Change) {
	sev := plogSeverity(c.To)
	// The evidence quotes errors, whose paths are the host's bytes: valid UTF-8 and bounded first.
	evidence := sanitize.String(sanitize.MountPoint, c.Evidence)
	body := mp + " (" + m.Source + "): " + c.To.String() + ", was " + c.From.String() + ": " + evidence
	lr := s.events.Record(pcommon.NewResource(), now, s.now(), emit.EventStateChange, sev, body)
	a := lr.Attributes()
	a.PutStr("system.filesystem.mountpoint", mp)
	a.PutStr("system.device", m.Source)
	a.PutStr("system.filesystem.type", m.FSType)
	a.PutStr("disk_health.client.state", c.To.String())
	a.PutStr("disk_health.previous_state", c.From.String())
	a.PutStr("disk_health.evidence", evidence)
}

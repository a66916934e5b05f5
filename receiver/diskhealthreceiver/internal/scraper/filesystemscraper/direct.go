package filesystemscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper/internal/metadata"
)

// direct writes a scrape's pdata without the generated MetricsBuilder (see emit's package comment),
// producing what record writes through it. It is used only where that holds for every input: every
// enabled metric keeps all its attributes and no resource attribute filters (newDirect returns nil
// otherwise). TestDirectMatchesBuilder compares the two byte for byte.
type direct struct {
	hdr emit.Header
	// The builder's start time (it is never reset), read from its output.
	start pcommon.Timestamp
	// One shape per metric, nil when disabled; in the builder's emit order.
	inodesUsage, inodesUtil, limit, status, timeToFull, usage, util *emit.Shape

	devKey, modeKey, mpKey, typeKey, stateKey, statusKey string
	statuses                                             [len(fsStatuses)]string
	rw, ro, used, free, reserved                         string

	mounts map[*fsusage.Mount]*mountCache
	gen    uint64
}

// mountCache is what is built once per mount: its valid-UTF-8 mount point and its resource.
type mountCache struct {
	src          string // MountPoint as read
	major, minor uint32
	mp           string
	res          pcommon.Resource
	gen          uint64
}

// newDirect returns the direct emitter for s's configuration, or nil where only the builder writes the
// right output. It records one mount through s's builder to read the shapes and the start time.
func newDirect(s *fsScraper, mbc metadata.MetricsBuilderConfig) *direct {
	if !emit.FullAttributes(mbc.Metrics, metadata.DefaultMetricsConfig()) || emit.ResourceFilters(mbc.ResourceAttributes) {
		return nil
	}
	m := &fsusage.Mount{MountPoint: "/"}
	s.record(0, &fsusage.Result{Mount: m, Status: fsusage.StatusOK,
		Usage: fsusage.Usage{Limit: 2, Used: 1, Free: 1, Inodes: 2, InodesUsed: 1, InodesFree: 1}, Forecast: fsusage.Forecast{OK: true}})
	md := s.mb.Emit()
	hdr, shapes := emit.Shapes(md)
	d := &direct{
		hdr:         hdr,
		inodesUsage: shapes[metadata.MetricsInfo.SystemFilesystemInodesUsage.Name],
		inodesUtil:  shapes[metadata.MetricsInfo.SystemFilesystemInodesUtilization.Name],
		limit:       shapes[metadata.MetricsInfo.SystemFilesystemLimit.Name],
		status:      shapes[metadata.MetricsInfo.SystemFilesystemStatus.Name],
		timeToFull:  shapes[metadata.MetricsInfo.SystemFilesystemTimeToFull.Name],
		usage:       shapes[metadata.MetricsInfo.SystemFilesystemUsage.Name],
		util:        shapes[metadata.MetricsInfo.SystemFilesystemUtilization.Name],
		devKey:      string(metadata.SystemFilesystemUsageMetricAttributeKeySystemDevice),
		modeKey:     string(metadata.SystemFilesystemUsageMetricAttributeKeySystemFilesystemMode),
		mpKey:       string(metadata.SystemFilesystemUsageMetricAttributeKeySystemFilesystemMountpoint),
		typeKey:     string(metadata.SystemFilesystemUsageMetricAttributeKeySystemFilesystemType),
		stateKey:    string(metadata.SystemFilesystemUsageMetricAttributeKeySystemFilesystemState),
		statusKey:   string(metadata.SystemFilesystemStatusMetricAttributeKeySystemFilesystemStatus),
		rw:          metadata.AttributeSystemFilesystemModeRw.String(),
		ro:          metadata.AttributeSystemFilesystemModeRo.String(),
		used:        metadata.AttributeSystemFilesystemStateUsed.String(),
		free:        metadata.AttributeSystemFilesystemStateFree.String(),
		reserved:    metadata.AttributeSystemFilesystemStateReserved.String(),
		mounts:      map[*fsusage.Mount]*mountCache{},
	}
	for i, st := range fsStatuses {
		d.statuses[i] = st.attr.String()
	}
	if rms := md.ResourceMetrics(); rms.Len() > 0 {
		ms := rms.At(0).ScopeMetrics().At(0).Metrics()
		if ms.Len() > 0 {
			m := ms.At(0)
			var dps pmetric.NumberDataPointSlice
			if m.Type() == pmetric.MetricTypeGauge {
				dps = m.Gauge().DataPoints()
			} else {
				dps = m.Sum().DataPoints()
			}
			d.start = dps.At(0).StartTimestamp()
		}
	}
	return d
}

// mount returns m's cached mount point and resource, built by build when m is new or changed.
func (d *direct) mount(m *fsusage.Mount, build func(mp string) pcommon.Resource) *mountCache {
	c := d.mounts[m]
	if c == nil || c.src != m.MountPoint || c.major != m.Major || c.minor != m.Minor {
		mp := sanitize.String(sanitize.MountPoint, m.MountPoint)
		c = &mountCache{src: m.MountPoint, major: m.Major, minor: m.Minor, mp: mp, res: build(mp)}
		d.mounts[m] = c
	}
	c.gen = d.gen
	return c
}

func (d *direct) endScrape() {
	for m, c := range d.mounts {
		if c.gen != d.gen {
			delete(d.mounts, m)
		}
	}
	d.gen++
}

// result appends one mount's resource and metrics to rms, as record does through the builder.
func (d *direct) result(rms pmetric.ResourceMetricsSlice, ts pcommon.Timestamp, r *fsusage.Result, c *mountCache) {
	m := r.Mount
	dev, typ, mp := m.Source, m.FSType, c.mp
	u := &r.Usage
	ok := r.Status == fsusage.StatusOK && u.Limit > 0
	ratio, hasRatio := u.Utilization()
	hasInodes := ok && u.Inodes > 0
	n := 0
	for _, s := range []*emit.Shape{d.inodesUsage, d.inodesUtil} {
		if s != nil && hasInodes {
			n++
		}
	}
	for _, s := range []*emit.Shape{d.limit, d.usage} {
		if s != nil && ok {
			n++
		}
	}
	if d.status != nil {
		n++
	}
	if d.timeToFull != nil && ok && r.Forecast.OK {
		n++
	}
	if d.util != nil && ok && hasRatio {
		n++
	}
	if n == 0 {
		return // the builder drops a resource without metrics
	}
	ms := d.hdr.Resource(rms, c.res, n)
	start := d.start
	mode := d.rw
	if r.ReadOnly {
		mode = d.ro
	}
	if hasInodes {
		if s := d.inodesUsage; s != nil {
			dps := s.Begin(ms, 2)
			emit.Point(dps, start, ts, d.devKey, dev, d.modeKey, mode, d.mpKey, mp, d.typeKey, typ, d.stateKey, d.used).SetIntValue(emit.Int(u.InodesUsed))
			emit.Point(dps, start, ts, d.devKey, dev, d.modeKey, mode, d.mpKey, mp, d.typeKey, typ, d.stateKey, d.free).SetIntValue(emit.Int(u.InodesFree))
		}
		if s := d.inodesUtil; s != nil {
			emit.Point(s.Begin(ms, 1), start, ts, d.devKey, dev, d.modeKey, mode, d.mpKey, mp, d.typeKey, typ).
				SetDoubleValue(float64(u.InodesUsed) / float64(u.Inodes))
		}
	}
	if s := d.limit; s != nil && ok {
		emit.Point(s.Begin(ms, 1), start, ts, d.devKey, dev, d.modeKey, mode, d.mpKey, mp, d.typeKey, typ).SetIntValue(emit.Int(u.Limit))
	}
	if s := d.status; s != nil {
		dps := s.Begin(ms, len(fsStatuses))
		for i, st := range fsStatuses {
			v := int64(0)
			if st.status == r.Status {
				v = 1
			}
			emit.Point(dps, start, ts, d.devKey, dev, d.mpKey, mp, d.typeKey, typ, d.statusKey, d.statuses[i]).SetIntValue(v)
		}
	}
	if s := d.timeToFull; s != nil && ok && r.Forecast.OK {
		emit.Point(s.Begin(ms, 1), start, ts, d.devKey, dev, d.mpKey, mp, d.typeKey, typ).SetDoubleValue(r.Forecast.Seconds)
	}
	if s := d.usage; s != nil && ok {
		dps := s.Begin(ms, 3)
		emit.Point(dps, start, ts, d.devKey, dev, d.modeKey, mode, d.mpKey, mp, d.typeKey, typ, d.stateKey, d.used).SetIntValue(emit.Int(u.Used))
		emit.Point(dps, start, ts, d.devKey, dev, d.modeKey, mode, d.mpKey, mp, d.typeKey, typ, d.stateKey, d.free).SetIntValue(emit.Int(u.Free))
		emit.Point(dps, start, ts, d.devKey, dev, d.modeKey, mode, d.mpKey, mp, d.typeKey, typ, d.stateKey, d.reserved).SetIntValue(emit.Int(u.Reserved))
	}
	if s := d.util; s != nil && ok && hasRatio {
		emit.Point(s.Begin(ms, 1), start, ts, d.devKey, dev, d.modeKey, mode, d.mpKey, mp, d.typeKey, typ).SetDoubleValue(ratio)
	}
}

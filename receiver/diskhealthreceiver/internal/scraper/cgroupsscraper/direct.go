package cgroupsscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/pressure"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
)

// direct writes a cgroup's pdata without the generated MetricsBuilder (see emit's package comment). The
// builder compares every new point with the metric's earlier ones, so one cgroup with n devices cost
// O(n²): 7.5 CPU-s at 8 000 devices. It is used only where it writes what the builder writes for every
// input: every enabled metric keeps all its attributes and no resource attribute filters (newDirect
// returns nil otherwise). The golden tests run both paths.
type direct struct {
	hdr emit.Header
	// One shape per metric, nil when disabled; in the builder's emit order.
	discardIO, discardOps, io, ops, p10s, p1m, p5m, pTotal *emit.Shape

	pathKey, devKey, dirKey, stallKey string
	read, write, some, full           string
}

// newDirect returns the direct emitter for s's configuration, or nil where only the builder writes the
// right output. It records one cgroup through s's builder to read the shapes.
func newDirect(s *cgroupScraper, mbc metadata.MetricsBuilderConfig) *direct {
	if !emit.FullAttributes(mbc.Metrics, metadata.DefaultMetricsConfig()) || emit.ResourceFilters(mbc.ResourceAttributes) {
		return nil
	}
	cg := &cgroupio.Cgroup{Path: "/", Devices: []cgroupio.DeviceStat{{HasDiscard: true}}, HasPressure: true,
		Pressure: pressure.Pressure{HasFull: true}}
	s.recordBuilder(0, cg, []string{"sda"})
	hdr, shapes := emit.Shapes(s.mb.Emit())
	mi := &metadata.MetricsInfo
	return &direct{
		hdr:        hdr,
		discardIO:  shapes[mi.ContainerDiskDiscardIo.Name],
		discardOps: shapes[mi.ContainerDiskDiscardOperations.Name],
		io:         shapes[mi.ContainerDiskIo.Name],
		ops:        shapes[mi.ContainerDiskOperations.Name],
		p10s:       shapes[mi.ContainerIoLinuxPressure10s.Name],
		p1m:        shapes[mi.ContainerIoLinuxPressure1m.Name],
		p5m:        shapes[mi.ContainerIoLinuxPressure5m.Name],
		pTotal:     shapes[mi.ContainerIoLinuxPressureTotal.Name],
		pathKey:    string(metadata.ContainerDiskIoMetricAttributeKeyCgroupPath),
		devKey:     string(metadata.ContainerDiskIoMetricAttributeKeySystemDevice),
		dirKey:     string(metadata.ContainerDiskIoMetricAttributeKeyDiskIoDirection),
		stallKey:   string(metadata.ContainerIoLinuxPressureTotalMetricAttributeKeySystemLinuxPressureStallType),
		read:       metadata.AttributeDiskIoDirectionRead.String(),
		write:      metadata.AttributeDiskIoDirectionWrite.String(),
		some:       metadata.AttributeSystemLinuxPressureStallTypeSome.String(),
		full:       metadata.AttributeSystemLinuxPressureStallTypeFull.String(),
	}
}

// record appends cg's resource and metrics to rms; devs are the names of cg.Devices, "" for a device
// the filter dropped.
func (d *direct) record(rms pmetric.ResourceMetricsSlice, res pcommon.Resource, ts pcommon.Timestamp, cg *cgroupio.Cgroup, devs []string) {
	start := pcommon.NewTimestampFromTime(cg.Start)
	kept, discards := 0, 0
	for i := range cg.Devices {
		if devs[i] != "" {
			kept++
			if cg.Devices[i].HasDiscard {
				discards++
			}
		}
	}
	ms := d.hdr.Resource(rms, res, 8)
	perDevice := func(s *emit.Shape, n, per int, add func(dps pmetric.NumberDataPointSlice, st *cgroupio.DeviceStat, dev string)) {
		if s == nil || n == 0 {
			return
		}
		dps := s.Begin(ms, n*per)
		for i := range cg.Devices {
			if devs[i] != "" {
				add(dps, &cg.Devices[i], devs[i])
			}
		}
	}
	perDevice(d.discardIO, discards, 1, func(dps pmetric.NumberDataPointSlice, st *cgroupio.DeviceStat, dev string) {
		if st.HasDiscard {
			emit.Point(dps, start, ts, d.pathKey, cg.Path, d.devKey, dev).SetIntValue(emit.Int(st.DiscardBytes))
		}
	})
	perDevice(d.discardOps, discards, 1, func(dps pmetric.NumberDataPointSlice, st *cgroupio.DeviceStat, dev string) {
		if st.HasDiscard {
			emit.Point(dps, start, ts, d.pathKey, cg.Path, d.devKey, dev).SetIntValue(emit.Int(st.DiscardOps))
		}
	})
	perDevice(d.io, kept, 2, func(dps pmetric.NumberDataPointSlice, st *cgroupio.DeviceStat, dev string) {
		emit.Point(dps, start, ts, d.pathKey, cg.Path, d.devKey, dev, d.dirKey, d.read).SetIntValue(emit.Int(st.ReadBytes))
		emit.Point(dps, start, ts, d.pathKey, cg.Path, d.devKey, dev, d.dirKey, d.write).SetIntValue(emit.Int(st.WriteBytes))
	})
	perDevice(d.ops, kept, 2, func(dps pmetric.NumberDataPointSlice, st *cgroupio.DeviceStat, dev string) {
		emit.Point(dps, start, ts, d.pathKey, cg.Path, d.devKey, dev, d.dirKey, d.read).SetIntValue(emit.Int(st.ReadOps))
		emit.Point(dps, start, ts, d.pathKey, cg.Path, d.devKey, dev, d.dirKey, d.write).SetIntValue(emit.Int(st.WriteOps))
	})
	if !cg.HasPressure {
		return
	}
	stall := func(s *emit.Shape, value func(st *pressure.Stall) float64) {
		if s == nil {
			return
		}
		n := 1
		if cg.Pressure.HasFull {
			n = 2
		}
		dps := s.Begin(ms, n)
		emit.Point(dps, start, ts, d.pathKey, cg.Path, d.stallKey, d.some).SetDoubleValue(value(&cg.Pressure.Some))
		if cg.Pressure.HasFull {
			emit.Point(dps, start, ts, d.pathKey, cg.Path, d.stallKey, d.full).SetDoubleValue(value(&cg.Pressure.Full))
		}
	}
	stall(d.p10s, func(st *pressure.Stall) float64 { return st.Avg10 })
	stall(d.p1m, func(st *pressure.Stall) float64 { return st.Avg60 })
	stall(d.p5m, func(st *pressure.Stall) float64 { return st.Avg300 })
	stall(d.pTotal, func(st *pressure.Stall) float64 { return st.TotalSeconds() })
}

package stackscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"

import (
	"context"
	"fmt"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/dm"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
)

// dmID is a dm device's hw.id: its uuid (LVM-<vg><lv>[-layer], mpath-<wwid>), stable across reboots
// and renames, else its name.
func dmID(d *dm.Device) string {
	if d.UUID != "" {
		return d.UUID
	}
	return "dm:" + d.Name
}

// scrapeDM records every thin pool, thin volume and multipath map. Devices of other targets (linear,
// crypt, ...) are left to the I/O source. A target whose lines do not parse is a partial error.
func (s *stackScraper) scrapeDM(ctx context.Context, sc *scrape) error {
	devices, err := s.r.dm.Read(ctx)
	for i := range devices {
		d := &devices[i]
		for j := range d.Targets {
			t := &d.Targets[j]
			var terr error
			switch t.Type {
			case "thin-pool":
				terr = s.recordThinPool(sc, d, t)
			case "thin":
				terr = s.recordThin(sc, d, t)
			case "multipath":
				terr = s.recordMultipath(sc, d, t)
			default:
				continue
			}
			if terr != nil {
				sc.partial(fmt.Errorf("dm device %s (%s): %w", d.Name, t.Type, terr))
			}
			break // one logical disk per device: its first target of a kind we read
		}
	}
	return err
}

var poolModes = map[string]metadata.AttributeThinPoolMode{
	dm.PoolRW: metadata.AttributeThinPoolModeRw, dm.PoolRO: metadata.AttributeThinPoolModeRo,
	dm.PoolOutOfDataSpace: metadata.AttributeThinPoolModeOutOfDataSpace,
}

func (s *stackScraper) recordThinPool(sc *scrape, d *dm.Device, t *dm.Target) error {
	st, err := dm.ParseThinPoolStatus(t.Status)
	if err != nil {
		return err
	}
	id, name, lt, ts := dmID(d), d.Name, metadata.AttributeHwTypeLogicalDisk, sc.ts
	mode, known := poolModes[st.Mode]
	switch {
	case st.Fail:
		mode, known = metadata.AttributeThinPoolModeFail, true
	case st.Error:
		mode, known = metadata.AttributeThinPoolModeError, true
	}
	for _, v := range metadata.MapAttributeThinPoolMode {
		s.mb.RecordDiskHealthLogicalDiskThinPoolModeDataPoint(ts, boolInt(known && v == mode), id, name, lt, v)
	}
	ld := health.LogicalDisk{Kind: health.KindThinPool, Name: name, Threshold: s.threshold, Mode: st.Mode, NeedsCheck: st.NeedsCheck, Fail: st.Fail, Error: st.Error}
	if !st.Fail && !st.Error {
		tb, err := dm.ParseThinPoolTable(t.Table)
		if err != nil {
			return err
		}
		level := "thin-pool"
		block := tb.DataBlockBytes()
		total, used := st.TotalDataBlocks*block, st.UsedDataBlocks*block
		s.mb.RecordHwLogicalDiskLimitDataPoint(ts, clampInt(total), id, name, level)
		s.recordUsage(sc, id, name, level, used, total)
		mtotal, mused := st.TotalMetadataBlocks*dm.MetadataBlockBytes, st.UsedMetadataBlocks*dm.MetadataBlockBytes
		s.mb.RecordDiskHealthLogicalDiskMetadataLimitDataPoint(ts, clampInt(mtotal), id, name, lt)
		s.mb.RecordDiskHealthLogicalDiskMetadataUsageDataPoint(ts, clampInt(mused), id, name, lt, metadata.AttributeHwLogicalDiskStateUsed)
		s.mb.RecordDiskHealthLogicalDiskMetadataUsageDataPoint(ts, clampInt(mtotal-min(mused, mtotal)), id, name, lt, metadata.AttributeHwLogicalDiskStateFree)
		if mtotal > 0 {
			r := st.MetadataRatio()
			s.mb.RecordDiskHealthLogicalDiskMetadataUtilizationDataPoint(ts, r, id, name, lt, metadata.AttributeHwLogicalDiskStateUsed)
			s.mb.RecordDiskHealthLogicalDiskMetadataUtilizationDataPoint(ts, 1-r, id, name, lt, metadata.AttributeHwLogicalDiskStateFree)
		}
		s.mb.RecordDiskHealthLogicalDiskThinPoolNeedsCheckDataPoint(ts, boolInt(st.NeedsCheck), id, name, lt)
		ld.DataRatio, ld.MetadataRatio = st.DataRatio(), st.MetadataRatio()
	}
	s.judge(sc, id, "thin-pool", "thin pool "+name, ld)
	return nil
}

// recordUsage records used and free bytes and shares of a logical disk of total bytes.
func (s *stackScraper) recordUsage(sc *scrape, id, name, level string, used, total uint64) {
	used = min(used, total)
	s.mb.RecordHwLogicalDiskUsageDataPoint(sc.ts, clampInt(used), id, name, level, metadata.AttributeHwLogicalDiskStateUsed)
	s.mb.RecordHwLogicalDiskUsageDataPoint(sc.ts, clampInt(total-used), id, name, level, metadata.AttributeHwLogicalDiskStateFree)
	if total > 0 {
		r := float64(used) / float64(total)
		s.mb.RecordHwLogicalDiskUtilizationDataPoint(sc.ts, r, id, name, level, metadata.AttributeHwLogicalDiskStateUsed)
		s.mb.RecordHwLogicalDiskUtilizationDataPoint(sc.ts, 1-r, id, name, level, metadata.AttributeHwLogicalDiskStateFree)
	}
}

func (s *stackScraper) recordThin(sc *scrape, d *dm.Device, t *dm.Target) error {
	st, err := dm.ParseThinStatus(t.Status)
	if err != nil {
		return err
	}
	id, name, level := dmID(d), d.Name, "thin"
	size := t.Length * dm.SectorBytes
	s.mb.RecordHwLogicalDiskLimitDataPoint(sc.ts, clampInt(size), id, name, level)
	if !st.Fail && !st.Inactive && !st.Error {
		s.recordUsage(sc, id, name, level, st.MappedBytes(), size)
	}
	return nil
}

func (s *stackScraper) recordMultipath(sc *scrape, d *dm.Device, t *dm.Target) error {
	st, err := dm.ParseMultipathStatus(t.Status)
	if err != nil {
		return err
	}
	id, name, lt, level := dmID(d), d.Name, metadata.AttributeHwTypeLogicalDisk, "multipath"
	total, active, failed := st.Counts()
	s.mb.RecordHwLogicalDiskLimitDataPoint(sc.ts, clampInt(t.Length*dm.SectorBytes), id, name, level)
	s.mb.RecordDiskHealthLogicalDiskMultipathPathsDataPoint(sc.ts, int64(active), id, name, lt, metadata.AttributeMultipathPathStateActive)
	s.mb.RecordDiskHealthLogicalDiskMultipathPathsDataPoint(sc.ts, int64(failed), id, name, lt, metadata.AttributeMultipathPathStateFailed)
	s.judge(sc, id, level, "multipath map "+name, health.LogicalDisk{Kind: health.KindMultipath, Name: name, PathsTotal: total, PathsActive: active})
	return nil
}

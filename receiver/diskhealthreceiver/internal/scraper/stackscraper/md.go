package stackscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/mdraid"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
)

// mdID is an array's hw.id: its UUID where the kernel shows one (5.10+), which follows the array
// through reboots and renames; else its name, unique on the host while it runs.
func mdID(a *mdraid.Array) string {
	if a.UUID != "" {
		return "md:" + a.UUID
	}
	return "md:" + a.Name
}

var memberStates = []struct {
	flag mdraid.MemberFlags
	attr metadata.AttributeDiskHealthMdMemberState
}{
	{mdraid.InSync, metadata.AttributeDiskHealthMdMemberStateInSync}, {mdraid.Faulty, metadata.AttributeDiskHealthMdMemberStateFaulty},
	{mdraid.Spare, metadata.AttributeDiskHealthMdMemberStateSpare}, {mdraid.WriteMostly, metadata.AttributeDiskHealthMdMemberStateWriteMostly},
	{mdraid.Blocked, metadata.AttributeDiskHealthMdMemberStateBlocked}, {mdraid.WriteError, metadata.AttributeDiskHealthMdMemberStateWriteError},
	{mdraid.WantReplacement, metadata.AttributeDiskHealthMdMemberStateWantReplacement}, {mdraid.Replacement, metadata.AttributeDiskHealthMdMemberStateReplacement},
	{mdraid.Journal, metadata.AttributeDiskHealthMdMemberStateJournal}, {mdraid.FailFast, metadata.AttributeDiskHealthMdMemberStateFailfast},
}

// scrapeMD records every md array. The error is the part's: the listing's, or every array's own (an
// array that timed out makes the part's read status timeout, not ok); the other arrays are still recorded.
func (s *stackScraper) scrapeMD(ctx context.Context, sc *scrape) error {
	results, err := s.r.md.Read(ctx)
	if err != nil && !isNotExist(err) {
		return err
	}
	if len(results) == 0 && !s.mdDriver() {
		return fmt.Errorf("md: no arrays and no md driver in sysfs (module/md_mod): %w", errAbsent)
	}
	var errs []error
	for i := range results {
		r := &results[i]
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
		if r.Array.Level == "" && r.Array.State == "" {
			continue // timed out or unreadable: no values, and no verdict from none
		}
		s.recordArray(sc, &r.Array)
	}
	return errors.Join(errs...)
}

// mdDriver says whether the kernel has md: sysfs shows module/md_mod whether md is a module or built in
// (it has parameters). Without it, a host without arrays does not have the part at all.
func (s *stackScraper) mdDriver() bool {
	fi, err := fs.Stat(s.r.sys, "module/md_mod")
	return err == nil && fi.IsDir()
}

// memberID is the hw.id and hw.type of an md member as a component. A member on a physical disk (the
// disk, or a partition of it) is that disk: diskID, its hw.id, as the I/O and SMART sources give it. A
// member the kernel builds on other devices (device-mapper, md, loop: virtual) is a logical disk; one
// whose disk sysfs does not show (no identity to read) is still a physical disk. Both get hw.id
// "<array hw.id>/<member>". Two partitions of one disk in one array share the disk's hw.id and stay apart
// by their hw.name, the member's block device.
func memberID(array, member, diskID string, virtual bool) (string, metadata.AttributeHwType) {
	switch {
	case diskID != "":
		return diskID, metadata.AttributeHwTypePhysicalDisk
	case virtual:
		return array + "/" + member, metadata.AttributeHwTypeLogicalDisk
	}
	return array + "/" + member, metadata.AttributeHwTypePhysicalDisk
}

func (s *stackScraper) recordArray(sc *scrape, a *mdraid.Array) {
	id, name, lt := mdID(a), a.Name, metadata.AttributeHwTypeLogicalDisk
	ts := sc.ts
	s.mb.RecordHwLogicalDiskLimitDataPoint(ts, clampInt(a.SizeBytes), id, name, a.Level)
	st, known := metadata.MapAttributeMdArrayState[a.State]
	for _, v := range metadata.MapAttributeMdArrayState {
		s.mb.RecordDiskHealthLogicalDiskMdArrayStateDataPoint(ts, boolInt(known && v == st), id, name, lt, v)
	}
	if act, ok := metadata.MapAttributeMdSyncAction[a.SyncAction]; ok {
		for _, v := range metadata.MapAttributeMdSyncAction {
			s.mb.RecordDiskHealthLogicalDiskMdSyncActionDataPoint(ts, boolInt(v == act), id, name, lt, v)
		}
		if a.Sync.Running && !a.Sync.Delayed && a.SyncAction != mdraid.ActionIdle {
			s.mb.RecordDiskHealthLogicalDiskMdSyncProgressDataPoint(ts, a.Sync.Ratio, id, name, lt, act)
			s.mb.RecordDiskHealthLogicalDiskMdSyncSpeedDataPoint(ts, clampInt(a.Sync.SpeedBytes), id, name, lt, act)
			if a.Sync.ETA > 0 {
				s.mb.RecordDiskHealthLogicalDiskMdSyncRemainingTimeDataPoint(ts, a.Sync.ETA.Seconds(), id, name, lt, act)
			}
		}
		s.mb.RecordDiskHealthLogicalDiskMdMismatchesDataPoint(ts, clampInt(a.MismatchSectors), id, name, lt)
	}
	if a.Degraded >= 0 {
		s.mb.RecordDiskHealthLogicalDiskMdDegradedDataPoint(ts, int64(a.Degraded), id, name, lt)
	}
	s.mb.RecordDiskHealthLogicalDiskMdRaidDisksDataPoint(ts, int64(a.RaidDisks), id, name, lt)

	var faulty []string
	for _, m := range a.Members {
		parent, disk := s.ids.of(m.Name)
		var opts []metadata.MetricAttributeOption
		if parent != "" {
			opts = append(opts, metadata.WithHwParentMetricAttribute(parent))
		}
		var set []metadata.AttributeDiskHealthMdMemberState
		for _, ms := range memberStates {
			if m.Flags&ms.flag != 0 {
				set = append(set, ms.attr)
			}
		}
		s.memberStates.Emit([2]string{id, m.Name}, func(v metadata.AttributeDiskHealthMdMemberState, n int64) {
			s.mb.RecordDiskHealthLogicalDiskMdMemberStateDataPoint(ts, n, id, name, lt, m.Name, v, opts...)
		}, set...)
		// A member's errors are the member's, as the semantic conventions' hardware model has it: the member
		// is the component (its physical disk's hw.id, its block device's name), the array its parent.
		mid, mtype := memberID(id, m.Name, parent, parent == "" && s.ids.virtual(m.Name))
		v, start := s.series.u64("md/"+id+"/"+name+"/"+m.Name, m.CorrectedReadErrors, sc.at)
		s.withStart(start, func() {
			s.mb.RecordHwErrorsDataPoint(ts, clampInt(v), mid, m.Name, mtype, "corrected_read", metadata.WithHwParentMetricAttribute(id))
		})
		if disk != "" {
			sc.post(parent, signs.Counter{Kind: signs.KernelIOErrors, Subject: fmt.Sprintf("md corrected read errors of %s in %s", m.Name, a.Name), Value: m.CorrectedReadErrors})
		}
		if m.Flags&mdraid.Faulty != 0 {
			who := m.Name
			if parent != "" {
				who += " (hw.id " + parent + ")"
			}
			faulty = append(faulty, who)
		}
	}
	s.judge(sc, id, a.Level, name+" ("+a.Level+")", health.LogicalDisk{
		Kind: health.KindArray, Name: name, Level: a.Level, State: a.State,
		Degraded: a.Degraded, Redundancy: a.Redundancy(), FaultyMembers: faulty,
	})
}

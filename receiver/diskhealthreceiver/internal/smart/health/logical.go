package health

import (
	"fmt"
	"strings"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// LogicalKind is the kind of logical disk a LogicalDisk describes.
type LogicalKind uint8

// Logical disk kinds.
const (
	KindArray     LogicalKind = iota + 1 // an md RAID array
	KindThinPool                         // a device-mapper (LVM) thin pool
	KindMultipath                        // a device-mapper multipath map
)

// LogicalDisk is what the logical-disk rules read about one md array, thin
// pool or multipath map: values only, so the readers (mdraid, dm) and the
// rules never import each other.
type LogicalDisk struct {
	Kind LogicalKind
	Name string // md0, vg-pool-tpool, mpatha: the rules' texts name it

	// md array. Degraded is md/degraded (-1 for levels without
	// redundancy); Redundancy how many members the level can lose;
	// State md/array_state. FaultyMembers names each member the kernel
	// marked faulty, with its physical disk ("sdb1 (hw.id 0x5000c500a1b2c3d4)").
	Level         string
	State         string
	Degraded      int
	Redundancy    int
	FaultyMembers []string

	// Thin pool: used shares of data and metadata (0-1) against Threshold;
	// Mode rw, ro or out_of_data_space; NeedsCheck; Fail (the kernel
	// reports the pool failed) or Error (its status could not be produced).
	DataRatio, MetadataRatio float64
	Threshold                float64
	Mode                     string
	NeedsCheck, Fail, Error  bool

	// Multipath: paths in the map and those not failed.
	PathsTotal, PathsActive int
}

// Logical-disk rule IDs.
const (
	RuleArrayFailed          RuleID = "md_array_failed"
	RuleArrayDegraded        RuleID = "md_array_degraded"
	RuleThinPoolFailed       RuleID = "thin_pool_failed"
	RuleThinPoolNeedsCheck   RuleID = "thin_pool_needs_check"
	RuleThinPoolOutOfSpace   RuleID = "thin_pool_out_of_data_space"
	RuleThinPoolReadOnly     RuleID = "thin_pool_read_only"
	RuleThinPoolDataFull     RuleID = "thin_pool_data_above_threshold"
	RuleThinPoolMetadataFull RuleID = "thin_pool_metadata_above_threshold"
	RuleMultipathNoPath      RuleID = "multipath_no_active_path"
	RuleMultipathPathFailed  RuleID = "multipath_path_failed"
)

type logicalRule struct {
	RuleInfo
	eval func(*evaluator, *LogicalDisk)
}

// LogicalRules returns the logical-disk rule table, worst state first, for
// documentation.
func LogicalRules() []RuleInfo {
	out := make([]RuleInfo, len(logicalRules))
	for i, r := range logicalRules {
		out[i] = r.RuleInfo
	}
	return out
}

// EvaluateLogical applies the logical-disk rules to d and compares the
// outcome with prev, exactly as Evaluate does for a physical disk (same
// states, reasons and events). It never modifies prev.
func EvaluateLogical(prev History, d LogicalDisk) (Verdict, History) {
	e := newEvaluator(prev)
	for i := range logicalRules {
		e.rule = &logicalRules[i].RuleInfo
		logicalRules[i].eval(e, &d)
	}
	return e.verdict()
}

func faulty(d *LogicalDisk) string {
	if len(d.FaultyMembers) == 0 {
		return ""
	}
	return "; faulty: " + strings.Join(d.FaultyMembers, ", ")
}

var logicalRules = []logicalRule{
	{RuleInfo{RuleArrayFailed, Failed, "md",
		"The array cannot serve all its data: more members missing (md/degraded) than its level can lose (raid1 n-1, raid4/5 1, raid6 2, raid10 copies-1), array_state broken or inactive, or a member of a level without redundancy (raid0, linear) is faulty."},
		func(e *evaluator, d *LogicalDisk) {
			if d.Kind != KindArray {
				return
			}
			switch {
			case d.State == "broken" || d.State == "inactive":
				e.fire(Reason{Subject: "array state", Text: fmt.Sprintf("%s (%s) is %s%s", d.Name, d.Level, d.State, faulty(d))})
			case d.Degraded > d.Redundancy && d.Redundancy > 0:
				e.fireLevel(Reason{Subject: "members", Text: fmt.Sprintf("%s (%s) has lost %d members, more than the %d it can lose%s", d.Name, d.Level, d.Degraded, d.Redundancy, faulty(d))}, uintLevel(d.Degraded))
			case d.Degraded < 0 && len(d.FaultyMembers) > 0:
				e.fire(Reason{Subject: "members", Text: fmt.Sprintf("%s (%s) has no redundancy and a faulty member%s", d.Name, d.Level, faulty(d))})
			}
		}},
	{RuleInfo{RuleArrayDegraded, Degraded, "md",
		"The array serves all its data with fewer members than it has slots (md/degraded > 0, up to what its level can lose): one more failure may lose data. The reason names each faulty member and its physical disk's hw.id."},
		func(e *evaluator, d *LogicalDisk) {
			if d.Kind == KindArray && d.Degraded > 0 && d.Degraded <= d.Redundancy && d.State != "broken" && d.State != "inactive" {
				e.fireLevel(Reason{Subject: "members", Text: fmt.Sprintf("%s (%s) is degraded: %d member(s) missing%s", d.Name, d.Level, d.Degraded, faulty(d))}, uintLevel(d.Degraded))
			}
		}},
	{RuleInfo{RuleThinPoolFailed, Failed, "thin-pool",
		"The kernel reports the pool as Fail (or its status as Error): no I/O is served."},
		func(e *evaluator, d *LogicalDisk) {
			if d.Kind == KindThinPool && (d.Fail || d.Error) {
				what := "failed (status Fail)"
				if !d.Fail {
					what = "in error (status Error)"
				}
				e.fire(Reason{Subject: "pool", Text: fmt.Sprintf("thin pool %s is %s", d.Name, what)})
			}
		}},
	{RuleInfo{RuleThinPoolOutOfSpace, Failed, "thin-pool",
		"The pool is out of data space (mode out_of_data_space): writes to unprovisioned blocks are queued or fail."},
		func(e *evaluator, d *LogicalDisk) {
			if d.Kind == KindThinPool && d.Mode == "out_of_data_space" {
				e.fire(Reason{Subject: "data space", Text: fmt.Sprintf("thin pool %s is out of data space (%.1f%% used)", d.Name, d.DataRatio*100)})
			}
		}},
	{RuleInfo{RuleThinPoolNeedsCheck, Failed, "thin-pool",
		"The pool's metadata is flagged needs_check: it stays read-only until thin_check/thin_repair runs."},
		func(e *evaluator, d *LogicalDisk) {
			if d.Kind == KindThinPool && d.NeedsCheck {
				e.fire(Reason{Subject: "metadata", Text: fmt.Sprintf("thin pool %s needs a metadata check (needs_check): read-only until repaired", d.Name)})
			}
		}},
	{RuleInfo{RuleThinPoolReadOnly, Failed, "thin-pool",
		"The pool switched to read-only (mode ro: metadata space exhausted or a metadata error); no write is served."},
		func(e *evaluator, d *LogicalDisk) {
			if d.Kind == KindThinPool && d.Mode == "ro" && !d.NeedsCheck {
				e.fire(Reason{Subject: "mode", Text: fmt.Sprintf("thin pool %s is read-only (metadata %.1f%% used)", d.Name, d.MetadataRatio*100)})
			}
		}},
	{RuleInfo{RuleThinPoolDataFull, Degraded, "thin-pool",
		"Used data space is at or above the threshold (stack.thin_pool_threshold, 0.9 by default) of the pool's size."},
		func(e *evaluator, d *LogicalDisk) {
			if d.Kind == KindThinPool && d.Threshold > 0 && d.DataRatio >= d.Threshold && d.Mode != "out_of_data_space" {
				e.fire(Reason{Subject: "data space", Text: fmt.Sprintf("thin pool %s data is %.1f%% used, at or above %.0f%%", d.Name, d.DataRatio*100, d.Threshold*100)})
			}
		}},
	{RuleInfo{RuleThinPoolMetadataFull, Degraded, "thin-pool",
		"Used metadata space is at or above the threshold: when it fills, the pool turns read-only."},
		func(e *evaluator, d *LogicalDisk) {
			if d.Kind == KindThinPool && d.Threshold > 0 && d.MetadataRatio >= d.Threshold {
				e.fire(Reason{Subject: "metadata space", Text: fmt.Sprintf("thin pool %s metadata is %.1f%% used, at or above %.0f%%", d.Name, d.MetadataRatio*100, d.Threshold*100)})
			}
		}},
	{RuleInfo{RuleMultipathNoPath, Failed, "multipath",
		"No path of the map is active: all I/O fails or is queued."},
		func(e *evaluator, d *LogicalDisk) {
			if d.Kind == KindMultipath && d.PathsActive == 0 {
				e.fire(Reason{Subject: "paths", Text: fmt.Sprintf("multipath map %s has no active path (%d failed)", d.Name, d.PathsTotal)})
			}
		}},
	{RuleInfo{RuleMultipathPathFailed, Degraded, "multipath",
		"A path of the map failed while another still serves I/O, or only one path is left: the map has lost its redundancy."},
		func(e *evaluator, d *LogicalDisk) {
			if d.Kind == KindMultipath && d.PathsActive > 0 && (d.PathsActive < d.PathsTotal || d.PathsActive == 1) {
				e.fireLevel(Reason{Subject: "paths", Text: fmt.Sprintf("multipath map %s has %d of %d paths active", d.Name, d.PathsActive, d.PathsTotal)}, uintLevel(d.PathsTotal-d.PathsActive))
			}
		}},
}

func uintLevel(n int) nvme.Uint128 { return nvme.Uint128{Lo: uint64(max(n, 0))} }

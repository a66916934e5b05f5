package health

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every logical-disk rule fires in this table, with its state and a text naming what it fired on.
func TestLogicalRules(t *testing.T) {
	raid1 := func(degraded int, state string, faulty ...string) LogicalDisk {
		return LogicalDisk{Kind: KindArray, Name: "md0", Level: "raid1", State: state, Degraded: degraded, Redundancy: 1, FaultyMembers: faulty}
	}
	pool := func(data, meta float64, mode string) LogicalDisk {
		return LogicalDisk{Kind: KindThinPool, Name: "vg-pool-tpool", DataRatio: data, MetadataRatio: meta, Threshold: 0.9, Mode: mode}
	}
	mpath := func(total, active int) LogicalDisk {
		return LogicalDisk{Kind: KindMultipath, Name: "mpatha", PathsTotal: total, PathsActive: active}
	}
	cases := []struct {
		name  string
		d     LogicalDisk
		want  []RuleID
		state State
		text  string
	}{
		{"clean raid1", raid1(0, "clean"), nil, OK, ""},
		{"degraded raid1", raid1(1, "clean", "sdb1 (hw.id wwn-b)"), []RuleID{RuleArrayDegraded}, Degraded, "md0 (raid1) is degraded: 1 member(s) missing; faulty: sdb1 (hw.id wwn-b)"},
		{"raid5 beyond redundancy", LogicalDisk{Kind: KindArray, Name: "md1", Level: "raid5", State: "clean", Degraded: 2, Redundancy: 1}, []RuleID{RuleArrayFailed}, Failed, "md1 (raid5) has lost 2 members, more than the 1 it can lose"},
		{"broken raid0", LogicalDisk{Kind: KindArray, Name: "md2", Level: "raid0", State: "broken", Degraded: -1}, []RuleID{RuleArrayFailed}, Failed, "md2 (raid0) is broken"},
		{"raid0 faulty member", LogicalDisk{Kind: KindArray, Name: "md2", Level: "raid0", State: "clean", Degraded: -1, FaultyMembers: []string{"sdc"}}, []RuleID{RuleArrayFailed}, Failed, "no redundancy and a faulty member; faulty: sdc"},
		{"raid1 two of two missing", LogicalDisk{Kind: KindArray, Name: "md0", Level: "raid1", State: "clean", Degraded: 2, Redundancy: 1}, []RuleID{RuleArrayFailed}, Failed, "lost 2 members"},
		{"pool ok", pool(0.5, 0.1, "rw"), nil, OK, ""},
		{"pool data at threshold", pool(0.9, 0.1, "rw"), []RuleID{RuleThinPoolDataFull}, Degraded, "data is 90.0% used, at or above 90%"},
		{"pool metadata above threshold", pool(0.2, 0.95, "rw"), []RuleID{RuleThinPoolMetadataFull}, Degraded, "metadata is 95.0% used"},
		{"pool out of data space", pool(1, 0.1, "out_of_data_space"), []RuleID{RuleThinPoolOutOfSpace}, Failed, "out of data space (100.0% used)"},
		{"pool read-only", pool(0.5, 1, "ro"), []RuleID{RuleThinPoolReadOnly, RuleThinPoolMetadataFull}, Failed, "is read-only (metadata 100.0% used)"},
		{"pool needs check", LogicalDisk{Kind: KindThinPool, Name: "p", Threshold: 0.9, Mode: "ro", NeedsCheck: true}, []RuleID{RuleThinPoolNeedsCheck}, Failed, "needs a metadata check"},
		{"pool fail", LogicalDisk{Kind: KindThinPool, Name: "p", Threshold: 0.9, Fail: true}, []RuleID{RuleThinPoolFailed}, Failed, "thin pool p is failed (status Fail)"},
		{"pool error", LogicalDisk{Kind: KindThinPool, Name: "p", Threshold: 0.9, Error: true}, []RuleID{RuleThinPoolFailed}, Failed, "in error"},
		{"two paths", mpath(2, 2), nil, OK, ""},
		{"one of two paths", mpath(2, 1), []RuleID{RuleMultipathPathFailed}, Degraded, "multipath map mpatha has 1 of 2 paths active"},
		{"two of four paths", mpath(4, 2), []RuleID{RuleMultipathPathFailed}, Degraded, "2 of 4 paths"},
		{"no path", mpath(2, 0), []RuleID{RuleMultipathNoPath}, Failed, "has no active path (2 failed)"},
	}
	fired := map[RuleID]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, _ := EvaluateLogical(History{}, tc.d)
			assert.Equal(t, tc.want, ruleIDs(v.Reasons))
			assert.Equal(t, tc.state, v.State)
			var texts []string
			for _, r := range v.Reasons {
				texts = append(texts, r.Text)
				fired[r.Rule] = true
			}
			assert.Contains(t, strings.Join(texts, "\n"), tc.text)
		})
	}
	for _, r := range LogicalRules() {
		assert.True(t, fired[r.ID], "rule %s never fired in this table", r.ID)
	}
}

// A member failing turns the array degraded with one state change naming the member; a rebuild back to
// clean is one improving state change; nothing is said while nothing changes.
func TestLogicalEvents(t *testing.T) {
	clean := LogicalDisk{Kind: KindArray, Name: "md0", Level: "raid1", State: "clean", Redundancy: 1}
	v, h := EvaluateLogical(History{}, clean)
	assert.Empty(t, v.Events, "a healthy first sight is not news")

	failed := clean
	failed.Degraded, failed.FaultyMembers = 1, []string{"sdb (hw.id wwn-b)"}
	v, h = EvaluateLogical(h, failed)
	require.Len(t, v.Events, 2)
	assert.Equal(t, StateChanged, v.Events[0].Kind)
	assert.Equal(t, OK, v.Events[0].Old)
	assert.Equal(t, Degraded, v.Events[0].New)
	assert.Contains(t, v.Events[0].Text, "health changed from ok to degraded: md0 (raid1) is degraded: 1 member(s) missing; faulty: sdb (hw.id wwn-b)")
	assert.Equal(t, NewSign, v.Events[1].Kind)
	assert.Equal(t, RuleArrayDegraded, v.Events[1].Rule)

	v, h = EvaluateLogical(h, failed)
	assert.Empty(t, v.Events)

	v, _ = EvaluateLogical(h, clean)
	require.Len(t, v.Events, 1)
	assert.Equal(t, Event{Kind: StateChanged, Old: Degraded, New: OK, Text: "health changed from degraded to ok: no health rule fires any more"}, v.Events[0])
}

package diskhealthreceiver

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docNames is what a documentation.md promises users: for each metric its unit, type and attributes
// (name and values), and each resource attribute with its values.
func docNames(t *testing.T, data []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	var metric, section string
	var attrs []string
	flush := func() {
		if metric != "" {
			sort.Strings(attrs)
			out["metric "+metric] += " attributes=" + strings.Join(attrs, ",")
		}
		metric, attrs = "", nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "### "):
			flush()
			metric, section = strings.TrimPrefix(line, "### "), "metric"
		case strings.HasPrefix(line, "## "):
			flush()
			section = strings.TrimPrefix(line, "## ")
		case strings.HasPrefix(line, "#### Attributes"):
			section = "attributes"
		case strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| Name") && !strings.HasPrefix(line, "| Unit") && !strings.HasPrefix(line, "| ---"):
			cells := strings.Split(line, " | ")
			switch {
			case section == "metric" && metric != "":
				out["metric "+metric] = "unit=" + strings.TrimPrefix(cells[0], "| ") + " type=" + strings.Join(cells[1:len(cells)-1], "/")
			case section == "attributes" && metric != "":
				attrs = append(attrs, strings.TrimPrefix(cells[0], "| ")+"="+cells[2])
			case section == "Resource Attributes":
				out["resource "+strings.TrimPrefix(cells[0], "| ")] = cells[2]
			}
		}
	}
	require.NoError(t, sc.Err())
	flush()
	return out
}

// TestNamesUnchangedBySplit: the union of the sources' documentation.md files promises every metric name,
// unit, type, attribute and resource attribute the single documentation.md of the receiver promised
// before the sources got their own folders (testdata/documentation-before-split.md), unchanged; what was
// added since is listed here, so that nothing appears or changes unnoticed. A metric two sources emit
// (hw.status and hw.errors: SMART for physical disks, stack for logical disks and kernel counters) is
// listed once per source, the later under "<name> (<source>)".
func TestNamesUnchangedBySplit(t *testing.T) {
	before, err := os.ReadFile(filepath.Join("testdata", "documentation-before-split.md"))
	require.NoError(t, err)
	want := docNames(t, before)
	require.Len(t, want, 60+21, "60 metrics and 21 resource attributes before the split")

	docs, err := filepath.Glob(filepath.Join("internal", "scraper", "*", "documentation.md"))
	require.NoError(t, err)
	require.Len(t, docs, 7)
	shared := map[string]bool{"metric hw.status": true, "metric hw.errors": true}
	got := map[string]string{}
	for _, d := range docs {
		data, err := os.ReadFile(d)
		require.NoError(t, err)
		src := strings.TrimSuffix(filepath.Base(filepath.Dir(d)), "scraper")
		for k, v := range docNames(t, data) {
			if prev, ok := got[k]; ok && strings.HasPrefix(k, "metric ") {
				if !shared[k] {
					t.Errorf("%s documented twice (%s, %s)", k, prev, v)
				}
				k += " (" + src + ")"
			}
			got[k] = v
		}
	}
	// Added after the split on purpose (issue 11): the identity of each series on its data points, so a
	// backend that drops resource attributes keeps disks and cgroups apart. Everything else is as before.
	identity := map[string][]string{
		"metric hw.":        {"hw.id=Any Str", "hw.name=Any Str", "hw.type=Str: ``physical_disk``"},
		"metric container.": {"cgroup.path=Any Str"},
	}
	for k, v := range want {
		g := got[k]
		for prefix, attrs := range identity {
			if strings.HasPrefix(k, prefix) {
				var ok bool
				g, ok = withoutAttributes(g, attrs)
				assert.True(t, ok, "%s lacks its identity attributes %v: %s", k, attrs, got[k])
			}
		}
		assert.Equal(t, v, g, k)
	}

	for k, v := range got {
		if _, old := want[k]; old {
			continue
		}
		a, ok := addedSinceSplit[k]
		if assert.True(t, ok, "%s is new since the split: list it in addedSinceSplit (%s)", k, v) {
			assert.Equal(t, a, v, k)
		}
	}
	for k := range addedSinceSplit {
		assert.Contains(t, got, k)
	}
}

// addedSinceSplit is every name added after the split, with what its documentation.md promises.
var addedSinceSplit = func() map[string]string {
	upDown := "type=Sum/Int/Cumulative/false attributes="
	histogram := "unit=s type=ExponentialHistogram/Double/Cumulative/-"
	return map[string]string{
		// The latency source (issue 12).
		"metric system.disk.kernel.errors": "unit={request} type=Sum/Int/Cumulative/true attributes=" +
			"disk.io.direction=Str: ``read``, ``write``, ``discard``, ``flush``,error.type=Any Str,hw.id=Any Str,system.device=Any Str",
		"metric system.disk.operation.duration":         histogram + " attributes=disk.io.direction=Str: ``read``, ``write``,hw.id=Any Str,system.device=Any Str",
		"metric system.disk.discard.operation.duration": histogram + " attributes=hw.id=Any Str,system.device=Any Str",
		"metric system.disk.flush.operation.duration":   histogram + " attributes=hw.id=Any Str,system.device=Any Str",
		"metric system.disk.operation.device.duration":  histogram + " attributes=disk.io.direction=Str: ``read``, ``write``,hw.id=Any Str,system.device=Any Str",
		"metric disk_health.latency.dropped": "unit={request} type=Sum/Int/Cumulative/true attributes=" +
			"latency.drop.reason=Str: ``no_start_time``, ``histograms_full``, ``errors_full``, ``no_issue_time``, ``not_run``",
		// The stack source (issue 13).
		"metric hw.status (stack)":                        "unit=1 " + upDown + "hw.id=Any Str,hw.name=Any Str,hw.state=Str: ``ok``, ``degraded``, ``predicted_failure``, ``failed``,hw.type=Str: ``logical_disk``, ``physical_disk``",
		"metric disk_health.stack.read.status":            "unit=1 type=Sum/Int/Cumulative/false attributes=stack.part=Str: ``md``, ``device_mapper``, ``errors``,stack.read.status=Str: ``ok``, ``permission_denied``, ``unsupported``, ``timeout``, ``error``",
		"metric hw.errors (stack)":                        "unit={error} type=Sum/Int/Cumulative/true attributes=error.type=Any Str,hw.id=Any Str,hw.name=Any Str,hw.parent=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``,md.member=Any Str",
		"metric hw.logical_disk.limit":                    "unit=By type=Sum/Int/Cumulative/false attributes=hw.id=Any Str,hw.logical_disk.raid_level=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``",
		"metric hw.logical_disk.md.array_state":           "unit=1 type=Sum/Int/Cumulative/false attributes=hw.id=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``,md.array_state=Str: ``clear``, ``inactive``, ``suspended``, ``readonly``, ``read-auto``, ``clean``, ``active``, ``write-pending``, ``active-idle``, ``broken``",
		"metric hw.logical_disk.md.degraded":              "unit={disk} type=Sum/Int/Cumulative/false attributes=hw.id=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``",
		"metric hw.logical_disk.md.member.state":          "unit=1 type=Sum/Int/Cumulative/false attributes=hw.id=Any Str,hw.name=Any Str,hw.parent=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``,md.member.state=Str: ``in_sync``, ``faulty``, ``spare``, ``write_mostly``, ``blocked``, ``write_error``, ``want_replacement``, ``replacement``, ``journal``, ``failfast``,md.member=Any Str",
		"metric hw.logical_disk.md.mismatches":            "unit={sector} type=Sum/Int/Cumulative/false attributes=hw.id=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``",
		"metric hw.logical_disk.md.raid_disks":            "unit={disk} type=Sum/Int/Cumulative/false attributes=hw.id=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``",
		"metric hw.logical_disk.md.sync.progress":         "unit=1 type=Gauge/Double attributes=hw.id=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``,md.sync_action=Str: ``idle``, ``resync``, ``recover``, ``check``, ``repair``, ``reshape``, ``frozen``",
		"metric hw.logical_disk.md.sync.remaining_time":   "unit=s type=Gauge/Double attributes=hw.id=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``,md.sync_action=Str: ``idle``, ``resync``, ``recover``, ``check``, ``repair``, ``reshape``, ``frozen``",
		"metric hw.logical_disk.md.sync.speed":            "unit=By/s type=Gauge/Int attributes=hw.id=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``,md.sync_action=Str: ``idle``, ``resync``, ``recover``, ``check``, ``repair``, ``reshape``, ``frozen``",
		"metric hw.logical_disk.md.sync_action":           "unit=1 type=Sum/Int/Cumulative/false attributes=hw.id=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``,md.sync_action=Str: ``idle``, ``resync``, ``recover``, ``check``, ``repair``, ``reshape``, ``frozen``",
		"metric hw.logical_disk.metadata.limit":           "unit=By type=Sum/Int/Cumulative/false attributes=hw.id=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``",
		"metric hw.logical_disk.metadata.usage":           "unit=By type=Sum/Int/Cumulative/false attributes=hw.id=Any Str,hw.logical_disk.state=Str: ``used``, ``free``,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``",
		"metric hw.logical_disk.metadata.utilization":     "unit=1 type=Gauge/Double attributes=hw.id=Any Str,hw.logical_disk.state=Str: ``used``, ``free``,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``",
		"metric hw.logical_disk.multipath.paths":          "unit={path} type=Sum/Int/Cumulative/false attributes=hw.id=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``,multipath.path.state=Str: ``active``, ``failed``",
		"metric hw.logical_disk.thin_pool.mode":           "unit=1 type=Sum/Int/Cumulative/false attributes=hw.id=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``,thin_pool.mode=Str: ``rw``, ``ro``, ``out_of_data_space``, ``fail``, ``error``",
		"metric hw.logical_disk.thin_pool.needs_check":    "unit=1 type=Gauge/Int attributes=hw.id=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``",
		"metric hw.logical_disk.usage":                    "unit=By type=Sum/Int/Cumulative/false attributes=hw.id=Any Str,hw.logical_disk.raid_level=Any Str,hw.logical_disk.state=Str: ``used``, ``free``,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``",
		"metric hw.logical_disk.utilization":              "unit=1 type=Gauge/Double attributes=hw.id=Any Str,hw.logical_disk.raid_level=Any Str,hw.logical_disk.state=Str: ``used``, ``free``,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``",
		"metric hw.physical_disk.scsi.commands":           "unit={command} type=Sum/Int/Cumulative/true attributes=hw.id=Any Str,hw.name=Any Str,hw.type=Str: ``logical_disk``, ``physical_disk``,scsi.command.outcome=Str: ``requested``, ``done``",
		"metric system.filesystem.device.errors":          "unit={error} type=Sum/Int/Cumulative/true attributes=error.type=Any Str,system.device=Any Str,system.filesystem.mountpoint=Any Str,system.filesystem.type=Str: ``ext4``, ``btrfs``",
		"metric system.filesystem.errors":                 "unit={error} type=Sum/Int/Cumulative/true attributes=system.device=Any Str,system.filesystem.mountpoint=Any Str,system.filesystem.type=Str: ``ext4``, ``btrfs``",
		"metric system.filesystem.errors.time":            "unit=s type=Gauge/Int attributes=system.device=Any Str,system.filesystem.mountpoint=Any Str,system.filesystem.type=Str: ``ext4``, ``btrfs``",
		"metric system.filesystem.read_only_after_errors": "unit=1 type=Gauge/Int attributes=system.device=Any Str,system.filesystem.mountpoint=Any Str,system.filesystem.type=Str: ``ext4``, ``btrfs``",
		// Issue 11: every NVMe namespace names its controller's hw.id, so each joins its health.
		"resource hw.parent": "Any Str",
	}
}()

// withoutAttributes removes attrs from a docNames value's attribute list and reports whether all were
// there.
func withoutAttributes(v string, attrs []string) (string, bool) {
	head, list, found := strings.Cut(v, " attributes=")
	if !found {
		return v, false
	}
	var kept []string
	have := map[string]bool{}
	// Values hold commas (enum lists), so split on the attribute boundaries docNames wrote: ",name=".
	for _, a := range splitAttributes(list) {
		have[a] = true
		drop := false
		for _, x := range attrs {
			drop = drop || a == x
		}
		if !drop {
			kept = append(kept, a)
		}
	}
	for _, x := range attrs {
		if !have[x] {
			return v, false
		}
	}
	return head + " attributes=" + strings.Join(kept, ","), true
}

// splitAttributes splits "a=Any Str,b=Str: “x“, “y“" into its attributes.
func splitAttributes(list string) []string {
	if list == "" {
		return nil
	}
	var out []string
	for _, part := range strings.Split(list, ",") {
		if strings.HasPrefix(part, " ") && len(out) > 0 { // the next value of an enum list
			out[len(out)-1] += "," + part
			continue
		}
		out = append(out, part)
	}
	return out
}

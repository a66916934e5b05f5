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
// added since is listed here, so that nothing appears or changes unnoticed.
func TestNamesUnchangedBySplit(t *testing.T) {
	before, err := os.ReadFile(filepath.Join("testdata", "documentation-before-split.md"))
	require.NoError(t, err)
	want := docNames(t, before)
	require.Len(t, want, 60+21, "60 metrics and 21 resource attributes before the split")

	docs, err := filepath.Glob(filepath.Join("internal", "scraper", "*", "documentation.md"))
	require.NoError(t, err)
	require.Len(t, docs, 6)
	got := map[string]string{}
	for _, d := range docs {
		data, err := os.ReadFile(d)
		require.NoError(t, err)
		for k, v := range docNames(t, data) {
			if prev, ok := got[k]; ok && strings.HasPrefix(k, "metric ") {
				t.Errorf("%s documented twice (%s, %s)", k, prev, v)
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

	// Added after the split: the latency source (issue 12).
	histogram := "unit=s type=ExponentialHistogram/Double/Cumulative/-"
	added := map[string]string{
		"metric system.disk.kernel.errors": "unit={request} type=Sum/Int/Cumulative/true attributes=" +
			"disk.io.direction=Str: ``read``, ``write``, ``discard``, ``flush``,error.type=Any Str,hw.id=Any Str,system.device=Any Str",
		"metric system.disk.operation.duration":         histogram + " attributes=disk.io.direction=Str: ``read``, ``write``,hw.id=Any Str,system.device=Any Str",
		"metric system.disk.discard.operation.duration": histogram + " attributes=hw.id=Any Str,system.device=Any Str",
		"metric system.disk.flush.operation.duration":   histogram + " attributes=hw.id=Any Str,system.device=Any Str",
		"metric system.disk.operation.device.duration":  histogram + " attributes=disk.io.direction=Str: ``read``, ``write``,hw.id=Any Str,system.device=Any Str",
		// Issue 11: every NVMe namespace names its controller's hw.id, so each joins its health.
		"resource hw.parent": "Any Str",
	}
	for k, v := range got {
		if _, old := want[k]; old {
			continue
		}
		assert.Equal(t, added[k], v, "%s is new since the split: list it in added", k)
	}
	for k := range added {
		assert.Contains(t, got, k)
	}
}

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

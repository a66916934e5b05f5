package diskhealthreceiver

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
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
// before the sources got their own folders (testdata/documentation-before-split.md, its names renamed as
// issue 32 renamed them), unchanged. Every
// name added since is one a source's metadata.yaml declares (the single truth; the drift test keeps
// each documentation.md in step with it) or, for what mdatagen cannot render, its
// documentation-extra.md; and every name declared there is documented. A
// metric two sources emit (hw.status and hw.errors: SMART for physical disks, stack for logical disks
// and kernel counters) is listed once per source, the later under "<name> (<source>)".
func TestNamesUnchangedBySplit(t *testing.T) {
	before, err := os.ReadFile(filepath.Join("testdata", "documentation-before-split.md"))
	require.NoError(t, err)
	want := docNames(t, before)
	require.Len(t, want, 60+21, "60 metrics and 21 resource attributes before the split")

	shared := map[string]bool{"metric hw.status": true, "metric hw.errors": true}
	got := map[string]string{}
	declared := map[string]bool{}
	for _, src := range Sources() {
		dir := filepath.Join("internal", "scraper", src+"scraper")
		data, err := os.ReadFile(filepath.Join(dir, "documentation.md"))
		require.NoError(t, err)
		for k, v := range docNames(t, data) {
			if prev, ok := got[k]; ok && strings.HasPrefix(k, "metric ") {
				if !shared[k] {
					t.Errorf("%s documented twice (%s, %s)", k, prev, v)
				}
				k += " (" + src + ")"
			}
			got[k] = v
		}
		names := metadataNames(t, filepath.Join(dir, "metadata.yaml"))
		// What mdatagen cannot render (histograms) is declared by hand next to it.
		if extra, err := os.ReadFile(filepath.Join(dir, "documentation-extra.md")); err == nil {
			names = append(names, slices.Collect(maps.Keys(docNames(t, extra)))...)
		}
		for _, k := range names {
			if declared[k] && strings.HasPrefix(k, "metric ") {
				k += " (" + src + ")"
			}
			declared[k] = true
		}
	}
	// Added after the split on purpose (issue 11): the identity of each series on its data points, so a
	// backend that drops resource attributes keeps disks and cgroups apart; and (issue 21) the capacity
	// domain a filesystem point lands on, so binds of one filesystem are counted once. Everything else is
	// as before.
	// The prefixes cover the names issue 32 moved into disk_health.* too (the fixture carries today's
	// names: see the migration table in CHANGELOG.md).
	fsIdentity := []string{"disk_health.filesystem.domain=Any Str", "disk_health.filesystem.uuid=Any Str"}
	hwIdentity := []string{"hw.id=Any Str", "hw.name=Any Str", "hw.type=Str: ``physical_disk``"}
	identity := map[string][]string{
		"metric hw.":                        hwIdentity,
		"metric disk_health.physical_disk.": hwIdentity,
		"metric disk_health.logical_disk.":  hwIdentity,
		"metric container.":                 {"cgroup.path=Any Str"},
		"metric disk_health.container.":     {"cgroup.path=Any Str"},
		"metric system.filesystem.":         fsIdentity,
		"metric disk_health.filesystem.":    fsIdentity,
	}
	// Issue 32 item 1: the metrics semantic conventions v1.44.0 define without hw.type carry the identity
	// without it, and a temperature is its sensor's (a component of its own, its hw.parent the disk).
	hwNoType := []string{"hw.id=Any Str", "hw.name=Any Str"}
	sensor := []string{"hw.id=Any Str", "hw.name=Any Str", "hw.parent=Any Str", "hw.sensor_location=Str: ``composite``"}
	exact := map[string][]string{
		"metric hw.physical_disk.endurance_utilization": hwNoType,
		"metric hw.physical_disk.size":                  hwNoType,
		"metric hw.physical_disk.smart":                 hwNoType,
		"metric hw.temperature":                         sensor,
		"metric hw.temperature.limit":                   sensor,
	}
	for k, v := range want {
		g := got[k]
		if attrs, ok := exact[k]; ok {
			g, ok = withoutAttributes(g, attrs)
			assert.True(t, ok, "%s lacks its identity attributes %v: %s", k, attrs, got[k])
			assert.Equal(t, v, g, k)
			continue
		}
		for prefix, attrs := range identity {
			if strings.HasPrefix(k, prefix) {
				var ok bool
				g, ok = withoutAttributes(g, attrs)
				assert.True(t, ok, "%s lacks its identity attributes %v: %s", k, attrs, got[k])
			}
		}
		assert.Equal(t, v, g, k)
	}

	var added int
	for k := range got {
		if _, old := want[k]; !old {
			added++
			assert.True(t, declared[k], "%s is documented but no metadata.yaml declares it", k)
		}
	}
	for k := range declared {
		assert.Contains(t, got, k, "declared in a metadata.yaml but not documented")
	}
	t.Logf("%d names before the split, %d added since", len(want), added)
}

// metadataNames are the metrics and resource attributes a metadata.yaml declares, as docNames keys them.
func metadataNames(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var md struct {
		Metrics            map[string]any `yaml:"metrics"`
		ResourceAttributes map[string]any `yaml:"resource_attributes"`
	}
	require.NoError(t, yaml.Unmarshal(data, &md))
	var names []string
	for n := range md.Metrics {
		names = append(names, "metric "+n)
	}
	for n := range md.ResourceAttributes {
		names = append(names, "resource "+n)
	}
	sort.Strings(names)
	return names
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

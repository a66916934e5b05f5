package dm

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

type recorded struct{ name, target, kind, params string }

func readLines(t *testing.T) []recorded {
	t.Helper()
	f, err := os.Open("testdata/lines.txt")
	require.NoError(t, err)
	defer f.Close()
	var out []recorded
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		require.GreaterOrEqual(t, len(fs), 4, line)
		out = append(out, recorded{fs[0], fs[1], fs[2], strings.Join(fs[3:], " ")})
	}
	return out
}

func decode(r recorded) (any, error) {
	switch r.target + " " + r.kind {
	case "thin-pool status":
		return ParseThinPoolStatus(r.params)
	case "thin-pool table":
		return ParseThinPoolTable(r.params)
	case "thin status":
		return ParseThinStatus(r.params)
	case "thin table":
		return ParseThinTable(r.params)
	case "multipath status":
		return ParseMultipathStatus(r.params)
	}
	return nil, nil
}

// TestGoldenLines decodes every recorded line and compares with
// testdata/lines.golden.json.
func TestGoldenLines(t *testing.T) {
	got := map[string]any{}
	for _, r := range readLines(t) {
		v, err := decode(r)
		require.NoError(t, err, r.name)
		require.NotNil(t, v, r.name)
		got[r.name] = v
	}
	testkit.GoldenJSON(t, "testdata/lines.golden.json", got)
}

func lineOf(t *testing.T, name string) string {
	for _, r := range readLines(t) {
		if r.name == name {
			return r.params
		}
	}
	t.Fatalf("no recorded line %s", name)
	return ""
}

func TestThinPoolStates(t *testing.T) {
	ok, err := ParseThinPoolStatus(lineOf(t, "pool-ok"))
	require.NoError(t, err)
	tbl, err := ParseThinPoolTable(lineOf(t, "pool-ok-table"))
	require.NoError(t, err)
	assert.Equal(t, uint64(64<<10), tbl.DataBlockBytes())
	assert.Equal(t, uint64(1024*64<<10), ok.UsedDataBlocks*tbl.DataBlockBytes())
	assert.Equal(t, uint64(4096*MetadataBlockBytes), ok.TotalMetadataBlocks*MetadataBlockBytes)
	assert.InDelta(t, 196.0/4096, ok.MetadataRatio(), 1e-9)
	assert.False(t, ok.ReadOnly())
	assert.Equal(t, []string{"skip_block_zeroing"}, tbl.Features)

	ro, _ := ParseThinPoolStatus(lineOf(t, "pool-ro-metadata-full"))
	assert.True(t, ro.ReadOnly())
	assert.Equal(t, 1.0, ro.MetadataRatio())

	oods, _ := ParseThinPoolStatus(lineOf(t, "pool-out-of-data-space"))
	assert.Equal(t, PoolOutOfDataSpace, oods.Mode)
	assert.Equal(t, 1.0, oods.DataRatio())

	nc, _ := ParseThinPoolStatus(lineOf(t, "pool-needs-check"))
	assert.True(t, nc.NeedsCheck)

	old, _ := ParseThinPoolStatus(lineOf(t, "pool-old-kernel"))
	assert.False(t, old.HasLowWatermark)

	fail, _ := ParseThinPoolStatus("Fail")
	assert.Equal(t, ThinPoolStatus{Fail: true}, fail)

	for _, bad := range []string{"", "1 2/1 3/4 - rw discard_passdown queue_if_no_space", "1 1/2 3/4 - rw weird queue_if_no_space", "x 1/2 3/4 - rw discard_passdown queue_if_no_space"} {
		_, err := ParseThinPoolStatus(bad)
		assert.Error(t, err, bad)
	}
}

func TestThinAndMultipath(t *testing.T) {
	th, err := ParseThinStatus(lineOf(t, "thin-ok"))
	require.NoError(t, err)
	assert.Equal(t, uint64(2097152*512), th.MappedBytes())
	assert.Equal(t, uint64(4194303), th.HighestMappedSector)

	for name, want := range map[string][3]int{
		"mpath-ok": {2, 2, 0}, "mpath-one-failed": {2, 1, 1}, "mpath-all-failed": {2, 0, 2},
		"mpath-two-groups-st": {2, 2, 0}, "mpath-ql-second-failed": {2, 1, 1},
	} {
		s, err := ParseMultipathStatus(lineOf(t, name))
		require.NoError(t, err, name)
		total, active, failed := s.Counts()
		assert.Equal(t, want, [3]int{total, active, failed}, name)
	}
	all, _ := ParseMultipathStatus(lineOf(t, "mpath-all-failed"))
	assert.True(t, all.QueueIO)
	one, _ := ParseMultipathStatus(lineOf(t, "mpath-one-failed"))
	assert.Equal(t, Path{Dev: "8:32", FailCount: 1}, one.Groups[0].Paths[1])

	for _, bad := range []string{"", "2 0 0 0 1 1 A 0 2 0 8:16 A 0", "2 0 0 0 1 1 X 0 1 0 8:16 A 0", "2 0 0 0 1 1 A 0 1 0 8:16 Q 0", "2 0 0 0 1 1 A 0 1 0 8:16 A 0 extra"} {
		_, err := ParseMultipathStatus(bad)
		assert.Error(t, err, bad)
	}
}

func TestNames(t *testing.T) {
	for in, want := range map[string][2]string{
		"vg0-root": {"vg0", "root"}, "my--vg-thin--pool-tpool": {"my-vg", "thin-pool-tpool"}, "a-b": {"a", "b"},
	} {
		vg, lv, ok := SplitLVMName(in)
		require.True(t, ok, in)
		assert.Equal(t, want, [2]string{vg, lv}, in)
	}
	for _, in := range []string{"mpatha", "-x", "x-", "a--b"} {
		_, _, ok := SplitLVMName(in)
		assert.False(t, ok, in)
	}
	u := ParseUUID("LVM-" + strings.Repeat("V", 32) + strings.Repeat("L", 32) + "-tpool")
	assert.Equal(t, UUIDInfo{Owner: "LVM", VGUUID: strings.Repeat("V", 32), LVUUID: strings.Repeat("L", 32), Layer: "tpool"}, u)
	assert.Equal(t, "mpath", ParseUUID("mpath-3600508b400105e210000900000490000").Owner)
	assert.Equal(t, UUIDInfo{}, ParseUUID(""))
}

package e2e

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Unit tests of the harness helpers; they need neither root nor the collector.

func TestParseFixtureDiskstats(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []dsLine
		wantErr string
	}{
		{
			name: "all three layouts, comments and blank lines",
			in: "# comment\n\n" +
				"   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n" +
				" 252      16 vdb 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n" +
				"  # indented comment\n" +
				" 259       0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 18446744073709551615 17\n",
			want: []dsLine{
				{Major: 8, Minor: 0, Name: "sda", C: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
				{Major: 252, Minor: 16, Name: "vdb", C: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
				// Field 16 (flushes completed) is 64-bit.
				{Major: 259, Minor: 0, Name: "nvme0n1", C: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, math.MaxUint64, 17}},
			},
		},
		{
			name:    "flush ticks past 32 bits",
			in:      " 259       0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 4294967296\n",
			wantErr: "line 1 (nvme0n1): field 17 = 4294967296 does not fit",
		},
		{
			name: "20 fields",
			in:   " 259       1 nvme1n1 1 2 3 4294967295 5 6 7 8 9 10 11 12 13 14 15 16 17\n",
			want: []dsLine{{Major: 259, Minor: 1, Name: "nvme1n1", C: []uint64{1, 2, 3, 4294967295, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}}},
		},
		{name: "empty", in: "# nothing\n"},
		{name: "too few fields", in: "8 0 sda 1 2 3 4 5 6 7 8 9 10\n", wantErr: "line 1: 13 fields"},
		{name: "19 fields", in: "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", wantErr: "line 1: 19 fields"},
		{name: "bad major", in: "x 0 sda 1 2 3 4 5 6 7 8 9 10 11\n", wantErr: "line 1: major"},
		{name: "bad minor", in: "8 4294967296 sda 1 2 3 4 5 6 7 8 9 10 11\n", wantErr: "line 1: minor"},
		{name: "bad counter", in: "8 0 sda 1 2 -3 4 5 6 7 8 9 10 11\n", wantErr: "line 1 (sda): field 3"},
		{name: "tick past 32 bits", in: "8 0 sda 1 2 3 4294967296 5 6 7 8 9 10 11\n", wantErr: "line 1 (sda): field 4 = 4294967296"},
		{name: "sectors may pass 32 bits", in: "8 0 sda 1 2 4294967296 4 5 6 7 8 9 10 11\n",
			want: []dsLine{{Major: 8, Name: "sda", C: []uint64{1, 2, 4294967296, 4, 5, 6, 7, 8, 9, 10, 11}}}},
		{name: "duplicate", in: "8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n8 1 sda 1 2 3 4 5 6 7 8 9 10 11\n", wantErr: "line 2: device sda listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFixtureDiskstats([]byte(tt.in))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFormatDiskstats(t *testing.T) {
	lines := []dsLine{
		{Major: 8, Minor: 0, Name: "sda", C: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
		{Major: 259, Minor: 12, Name: "nvme0n1", C: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}},
	}
	assert.Equal(t, "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n"+
		" 259      12 nvme0n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n", string(formatDiskstats(lines)))

	// The fixtures survive a round trip, and what the peers are served has no comments left.
	for _, name := range []string{"snapshot-1.diskstats", "snapshot-2.diskstats"} {
		parsed := loadFixture(t, name)
		out := formatDiskstats(parsed)
		assert.NotContains(t, string(out), "#")
		again, err := parseFixtureDiskstats(out)
		require.NoError(t, err)
		assert.Equal(t, parsed, again, name)
	}
}

func TestFixtureCases(t *testing.T) {
	// checkFixtures is the test's own guard; here it runs without root so a fixture edit that breaks
	// a case fails early everywhere.
	byName := checkFixtures(t, loadFixture(t, "snapshot-1.diskstats"), loadFixture(t, "snapshot-2.diskstats"))
	assert.Len(t, byName, 6)
}

func TestFormatUptime(t *testing.T) {
	assert.Equal(t, "1234567.89 1234567.89\n", formatUptime(123456789))
	assert.Equal(t, "0.05 0.05\n", formatUptime(5))
	assert.Equal(t, "10.00 10.00\n", formatUptime(1000))
}

func TestMod32(t *testing.T) {
	assert.Equal(t, uint64(10), mod32(5, 15))
	assert.Equal(t, uint64(0), mod32(7, 7))
	assert.Equal(t, uint64(1296+3000), mod32(4294966000, 3000))
	assert.Equal(t, uint64(1), mod32(math.MaxUint32, 0))
}

func TestAgree(t *testing.T) {
	tests := []struct {
		sys, rec float64
		want     bool
	}{
		{0, 0, true},
		{0.40, 0.41, true},      // printed precision
		{0.40, 0.4151, false},   // beyond 0.01 and 0.5 %
		{1000, 1004.9, true},    // 0.49 %
		{1000, 1005.1, false},   // 0.51 %
		{1000, 995.1, true},     // either side
		{0, 0.011, false},       // sysstat 0, receiver not
		{85.92, 85.92005, true}, // rounding to two decimals
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, agree(tt.sys, tt.rec), "agree(%v, %v)", tt.sys, tt.rec)
	}
}

func TestParseIostatJSON(t *testing.T) {
	// Captured from sysstat 12.6.1 run over the fixtures with a 5.00 s interval.
	data, err := os.ReadFile(filepath.Join("..", "testdata", "iostat", "sysstat-12.6.1.json"))
	require.NoError(t, err)
	reports, err := parseIostatJSON(data)
	require.NoError(t, err)
	require.Len(t, reports, 2)

	// Every column the test compares is a key sysstat prints, and nothing it prints is left out.
	var keys []string
	for _, c := range iostatColumns {
		keys = append(keys, c.key)
	}
	slices.Sort(keys)
	devs := []string{busyDev, oldKernelDev, discardDev, idleDev, wrapDev, recreatedDev}
	for i, rep := range reports {
		require.Len(t, rep, len(devs), "report %d", i+1)
		for _, d := range devs {
			var got []string
			for k := range rep[d] {
				got = append(got, k)
			}
			slices.Sort(got)
			assert.Equal(t, keys, got, "report %d %s", i+1, d)
		}
	}
	second := reports[1]
	assert.Equal(t, 24691.40, second[busyDev]["r/s"])
	assert.Equal(t, 99.74, second[busyDev]["util"])
	assert.Equal(t, 3.38, second[busyDev]["rrqm"])
	assert.Equal(t, 85.92, second[wrapDev]["util"]) // modular: (2^32 − 4294966000 + 3000) / 5000 ms
	assert.Equal(t, 1753.00, second[recreatedDev]["r/s"])
	for k, v := range second[idleDev] {
		assert.Zero(t, v, "idle %s", k)
	}
	assert.Equal(t, 39.05, reports[0][busyDev]["r/s"]) // since "boot": 48213377 / 1234567.89 s

	for name, bad := range map[string]string{
		"not JSON":        `{"sysstat": `,
		"no host":         `{"sysstat": {"hosts": []}}`,
		"no device name":  `{"sysstat": {"hosts": [{"statistics": [{"disk": [{"r/s": 1}]}]}]}}`,
		"device twice":    `{"sysstat": {"hosts": [{"statistics": [{"disk": [{"disk_device": "a"}, {"disk_device": "a"}]}]}]}}`,
		"text as a value": `{"sysstat": {"hosts": [{"statistics": [{"disk": [{"disk_device": "a", "r/s": "x"}]}]}]}}`,
	} {
		_, err := parseIostatJSON([]byte(bad))
		assert.Error(t, err, name)
	}
}

func TestDevicePointsAndCountersMatch(t *testing.T) {
	snap := []dsLine{{Major: 8, Name: "sda", C: []uint64{10, 1, 100, 4, 20, 2, 200, 8, 0, 9, 11}}}
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	sum := func(name, dir string, v int64) {
		m := ms.AppendEmpty()
		m.SetName(name)
		dp := m.SetEmptySum().DataPoints().AppendEmpty()
		dp.SetIntValue(v)
		dp.Attributes().PutStr("system.device", "sda")
		dp.Attributes().PutStr("disk.io.direction", dir)
	}
	sum("system.disk.operations", "read", 10)
	sum("system.disk.operations", "write", 20)
	sum("system.disk.io", "read", 100*512)
	sum("system.disk.io", "write", 200*512)
	sum("system.disk.merged", "read", 1)
	g := ms.AppendEmpty()
	g.SetName("disk_health.disk.utilization")
	dp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetDoubleValue(0.25)
	dp.SetStartTimestamp(pcommon.Timestamp(1e9))
	dp.SetTimestamp(pcommon.Timestamp(6e9))
	dp.Attributes().PutStr("system.device", "sda")

	assert.False(t, countersMatch(md, snap), "write merges missing")
	sum("system.disk.merged", "write", 2)
	assert.True(t, countersMatch(md, snap))
	snap[0].C[fWrIOs]++
	assert.False(t, countersMatch(md, snap))

	p, ok := find(devicePoints(md)["sda"], "disk_health.disk.utilization", "")
	require.True(t, ok)
	assert.Equal(t, point{metric: "disk_health.disk.utilization", value: 0.25, start: 1e9, ts: 6e9, gauge: true}, p)
	_, ok = find(devicePoints(md)["sda"], "system.disk.operations", "discard")
	assert.False(t, ok)
}

func TestExportTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	tail := &exportTail{path: path}
	require.NoError(t, tail.poll(), "no file yet is no export yet")
	assert.Empty(t, tail.exports)

	md := pmetric.NewMetrics()
	md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetName("m")
	var m pmetric.JSONMarshaler
	line, err := m.MarshalMetrics(md)
	require.NoError(t, err)

	// A line written in two pieces is one export, read once it is complete.
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Write(line[:10])
	require.NoError(t, err)
	require.NoError(t, tail.poll())
	assert.Empty(t, tail.exports)
	_, err = f.Write(append(append(line[10:], '\n'), line...))
	require.NoError(t, err)
	require.NoError(t, tail.poll())
	assert.Len(t, tail.exports, 1)
	_, err = f.Write([]byte("\n\nnot json\n"))
	require.NoError(t, err)
	require.ErrorContains(t, tail.poll(), "export 3")
	assert.Len(t, tail.exports, 2)
	assert.Equal(t, "m", tail.exports[1].ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Name())
}

func FuzzParseFixtureDiskstats(f *testing.F) {
	for _, name := range []string{"snapshot-1.diskstats", "snapshot-2.diskstats"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "iostat", name))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte("8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n"))
	f.Add([]byte("8 0 sda 1 2 3 4 5 6 7 8 9 10\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, err := parseFixtureDiskstats(data)
		if err != nil {
			return
		}
		// Whatever parses prints in the kernel's layout and parses back to the same lines.
		out := formatDiskstats(lines)
		again, err := parseFixtureDiskstats(out)
		require.NoError(t, err, "%q", out)
		require.Len(t, again, len(lines))
		for i := range lines {
			require.Equal(t, lines[i].Name, again[i].Name)
			require.Equal(t, lines[i].C, again[i].C)
			require.Contains(t, []int{11, 15, 17}, len(lines[i].C))
		}
		require.Equal(t, len(lines), strings.Count(string(out), "\n"))
	})
}

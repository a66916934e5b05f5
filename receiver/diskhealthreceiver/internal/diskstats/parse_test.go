package diskstats

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/prometheus/procfs/blockdevice"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

func TestParseFieldCounts(t *testing.T) {
	counters := func(n int) string {
		f := make([]string, n)
		for i := range f {
			f[i] = strconv.Itoa(i + 1)
		}
		return strings.Join(f, " ")
	}
	base := blockdevice.IOStats{
		ReadIOs: 1, ReadMerges: 2, ReadSectors: 3, ReadTicks: 4,
		WriteIOs: 5, WriteMerges: 6, WriteSectors: 7, WriteTicks: 8,
		IOsInProgress: 9, IOsTotalTicks: 10, WeightedIOTicks: 11,
	}
	discard := base
	discard.DiscardIOs, discard.DiscardMerges, discard.DiscardSectors, discard.DiscardTicks = 12, 13, 14, 15
	flush := discard
	flush.FlushRequestsCompleted, flush.TimeSpentFlushing = 16, 17

	tests := []struct {
		name       string
		counters   int // fields after major, minor, name
		wantFields int
		want       blockdevice.IOStats
	}{
		{"14 fields, kernel < 4.18", 11, 14, base},
		{"15 fields: partial discard group ignored", 12, 14, base},
		{"17 fields: partial discard group ignored", 14, 14, base},
		{"18 fields, kernel 4.18+", 15, 18, discard},
		{"19 fields: partial flush group ignored", 16, 18, discard},
		{"20 fields, kernel 5.5+", 17, 20, flush},
		{"more than 20 fields: first 20 taken", 19, 20, flush},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Parser
			got, err := p.Parse([]byte(" 259  3 nvme0n1p1 "+counters(tt.counters)+"\n"), nil)
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, Stat{
				Info:    blockdevice.Info{MajorNumber: 259, MinorNumber: 3, DeviceName: "nvme0n1p1"},
				IOStats: tt.want,
				Fields:  tt.wantFields,
			}, got[0])
		})
	}
}

func TestParseLayout(t *testing.T) {
	tests := []struct {
		name  string
		data  string
		names []string
	}{
		{"empty input", "", nil},
		{"only blank lines", "\n  \n\t\n\r\n", nil},
		{"no trailing newline", "8 0 sda 1 2 3 4 5 6 7 8 9 10 11", []string{"sda"}},
		{"tabs and runs of spaces", "\t8\t\t0   sda\t1 2 3 4 5 6 7 8 9 10 11  \n", []string{"sda"}},
		{"CRLF line ends", "8 0 sda 1 2 3 4 5 6 7 8 9 10 11\r\n8 1 sda1 1 2 3 4 5 6 7 8 9 10 11\r\n", []string{"sda", "sda1"}},
		{"blank lines between devices", "\n8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n\n\n8 16 sdb 1 2 3 4 5 6 7 8 9 10 11\n\n", []string{"sda", "sdb"}},
		{"slash in name is kept as printed", "104 0 cciss/c0d0 1 2 3 4 5 6 7 8 9 10 11\n", []string{"cciss/c0d0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Parser
			got, err := p.Parse([]byte(tt.data), nil)
			require.NoError(t, err)
			var names []string
			for _, s := range got {
				names = append(names, s.DeviceName)
			}
			assert.Equal(t, tt.names, names)
		})
	}
}

func TestParseMaxValues(t *testing.T) {
	var p Parser
	line := "4294967295 4294967295 big 18446744073709551615 0 0 4294967295 0 0 0 4294967295 4294967295 4294967295 4294967295 18446744073709551615 0 0 4294967295 18446744073709551615 4294967295\n"
	got, err := p.Parse([]byte(line), nil)
	require.NoError(t, err)
	require.Len(t, got, 1)
	s := got[0]
	assert.Equal(t, uint32(1<<32-1), s.MajorNumber)
	assert.Equal(t, uint32(1<<32-1), s.MinorNumber)
	assert.Equal(t, uint64(1<<64-1), s.ReadIOs)
	assert.Equal(t, uint64(1<<32-1), s.ReadTicks)
	assert.Equal(t, uint64(1<<64-1), s.DiscardIOs)
	assert.Equal(t, uint64(1<<64-1), s.FlushRequestsCompleted)
	assert.Equal(t, uint64(1<<32-1), s.TimeSpentFlushing)
}

func TestParseMalformedLinesAreSkippedAndNamed(t *testing.T) {
	good := "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n"
	tests := []struct {
		name    string
		line    string
		wantErr string
		target  error // errors.Is target, nil for a short line
	}{
		{"non-numeric counter", "8 16 sdb 1 2 3 x1 5 6 7 8 9 10 11", `diskstats line 2 (sdb): field 7 "x1": invalid syntax`, strconv.ErrSyntax},
		{"negative counter", "8 16 sdb -1 2 3 4 5 6 7 8 9 10 11", `diskstats line 2 (sdb): field 4 "-1": invalid syntax`, strconv.ErrSyntax},
		{"plus sign", "8 16 sdb +1 2 3 4 5 6 7 8 9 10 11", `diskstats line 2 (sdb): field 4 "+1": invalid syntax`, strconv.ErrSyntax},
		{"counter overflows uint64", "8 16 sdb 1 2 3 4 5 6 7 8 9 10 18446744073709551616", `diskstats line 2 (sdb): field 14 "18446744073709551616": value out of range`, strconv.ErrRange},
		{"major overflows uint32", "4294967296 16 sdb 1 2 3 4 5 6 7 8 9 10 11", `diskstats line 2 (sdb): field 1 "4294967296": value out of range`, strconv.ErrRange},
		{"minor non-numeric", "8 x sdb 1 2 3 4 5 6 7 8 9 10 11", `diskstats line 2 (sdb): field 2 "x": invalid syntax`, strconv.ErrSyntax},
		{"bad field in flush group", "8 16 sdb 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 z", `diskstats line 2 (sdb): field 20 "z": invalid syntax`, strconv.ErrSyntax},
		{"truncated line", "8 16 sdb 1 2 3 4 5 6", `diskstats line 2 (sdb): 9 fields, want at least 14`, nil},
		{"only major and minor", "8 16", `diskstats line 2: 2 fields, want at least 14`, nil},
		{"long garbage value is cut in the message, by its shape", "8 16 sdb " + strings.Repeat("9", 3*parseerr.MaxValue) + " 2 3 4 5 6 7 8 9 10 11",
			`diskstats line 2 (sdb): field 4 "` + strings.Repeat("9", parseerr.MaxDigits) + `": value out of range`, strconv.ErrRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Parser
			got, err := p.Parse([]byte(good+tt.line+"\n"+good), nil)
			require.Len(t, got, 2, "the good lines around the bad one survive")
			require.EqualError(t, err, tt.wantErr)
			les, count := lineErrors(t, err)
			require.Len(t, les, 1)
			assert.Equal(t, 1, count)
			assert.Equal(t, 2, les[0].Line)
			if tt.target != nil {
				assert.ErrorIs(t, err, tt.target)
			}
		})
	}
}

func TestParseFieldsIgnoredBeyondCompleteGroupsAreNotValidated(t *testing.T) {
	// A 17-field line is read as 14; its fields 15-17 are not used, so
	// garbage there costs nothing. Likewise field 21+ of a long line.
	var p Parser
	got, err := p.Parse([]byte("8 0 sda 1 2 3 4 5 6 7 8 9 10 11 x y z\n8 1 sda1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 junk\n"), nil)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, 14, got[0].Fields)
	assert.Equal(t, 20, got[1].Fields)
}

func TestParseReusesDst(t *testing.T) {
	var p Parser
	dst := make([]Stat, 0, 8)
	got, err := p.Parse([]byte("8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n"), dst)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Same(t, &dst[:1][0], &got[0], "parse appends into the caller's array")
	got, err = p.Parse([]byte("8 16 sdb 1 2 3 4 5 6 7 8 9 10 11\n"), got)
	require.NoError(t, err)
	require.Len(t, got, 1, "dst is truncated, not appended to")
	assert.Equal(t, "sdb", got[0].DeviceName)
}

func TestParseInternsNamesAndForgetsGoneDevices(t *testing.T) {
	var p Parser
	a, err := p.Parse([]byte("8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n"), nil)
	require.NoError(t, err)
	b, err := p.Parse([]byte("8 0 sda 9 9 9 9 9 9 9 9 9 9 9\n"), nil)
	require.NoError(t, err)
	assert.Equal(t, strings.Clone(a[0].DeviceName), b[0].DeviceName)
	assert.Same(t, unsafe.StringData(a[0].DeviceName), unsafe.StringData(b[0].DeviceName), "the second parse reuses the interned name")

	// Churn through many short-lived devices: the table stays bounded.
	for i := range 1000 {
		_, err := p.Parse([]byte("7 "+strconv.Itoa(i)+" loop"+strconv.Itoa(i)+" 1 2 3 4 5 6 7 8 9 10 11\n"), nil)
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, len(p.names), 2*1+64+1)
}

func TestParseSteadyStateAllocatesNothing(t *testing.T) {
	data := synthetic(100)
	var p Parser
	dst, err := p.Parse(data, nil)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(20, func() {
		dst, err = p.Parse(data, dst)
	})
	require.NoError(t, err)
	assert.Zero(t, allocs)
	assert.Len(t, dst, 100)
}

func TestParseAgreesWithProcfs(t *testing.T) {
	files, err := filepath.Glob("testdata/diskstats/*.txt")
	require.NoError(t, err)
	for _, file := range files {
		if strings.HasPrefix(filepath.Base(file), "malformed") {
			continue // procfs aborts the whole file on the first bad line
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			proc := t.TempDir()
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(proc, "diskstats"), data, 0o600))
			fs, err := blockdevice.NewFS(proc, t.TempDir())
			require.NoError(t, err)
			want, err := fs.ProcDiskstats()
			require.NoError(t, err)

			var p Parser
			got, err := p.Parse(data, nil)
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for i := range want {
				assert.Equal(t, Stat{Info: want[i].Info, IOStats: want[i].IOStats, Fields: want[i].IoStatsCount}, got[i])
			}
		})
	}
}

// golden is the JSON form of one parse: the stats and the per-line errors.
type golden struct {
	Stats  []Stat   `json:"stats"`
	Errors []string `json:"errors,omitempty"`
}

func TestParseGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/diskstats/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			var p Parser
			stats, err := p.Parse(data, nil)
			got := golden{Stats: stats}
			les, _ := lineErrors(t, err)
			for _, le := range les {
				got.Errors = append(got.Errors, le.Error())
			}
			testkit.GoldenJSON(t, strings.TrimSuffix(file, ".txt")+".golden.json", got)
		})
	}
}

func TestParseMalformedFileKeepsEveryGoodLine(t *testing.T) {
	data, err := os.ReadFile("testdata/diskstats/malformed.txt")
	require.NoError(t, err)
	var p Parser
	stats, err := p.Parse(data, nil)
	var names []string
	for _, s := range stats {
		names = append(names, s.DeviceName)
	}
	assert.Equal(t, []string{"sda", "sde", "sdf", "sdh"}, names)
	les, count := lineErrors(t, err)
	assert.Equal(t, 6, count)
	var lines []int
	for _, le := range les {
		lines = append(lines, le.Line)
	}
	assert.Equal(t, []int{2, 4, 5, 6, 7, 10}, lines)
	require.ErrorIs(t, err, strconv.ErrSyntax)
	assert.ErrorIs(t, err, strconv.ErrRange)
}

func TestParseGarbageKeepsTheFirstLinesOnly(t *testing.T) {
	data := "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n" + strings.Repeat("8 16 sdb x 2 3 4 5 6 7 8 9 10 11\n", 25)
	var p Parser
	stats, err := p.Parse([]byte(data), nil)
	require.Len(t, stats, 1)
	les, count := lineErrors(t, err)
	assert.Equal(t, 25, count)
	require.Len(t, les, parseerr.MaxLines)
	assert.Equal(t, 2, les[0].Line)
	assert.Equal(t, "sdb", les[0].Device)
	assert.Equal(t, "4", les[0].Field)
	assert.Equal(t, "x", les[0].Value)
	assert.Contains(t, err.Error(), "25 bad lines: diskstats line 2 (sdb): field 4 \"x\": invalid syntax; ")
	assert.Contains(t, err.Error(), "; and 15 more")
	assert.ErrorIs(t, err, strconv.ErrSyntax)
}

func TestParseRealProcDiskstats(t *testing.T) {
	var r FileReader
	t.Cleanup(func() { _ = r.Close() })
	data, err := r.Read("/proc/diskstats")
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("SKIPPED: no /proc/diskstats here")
	}
	require.NoError(t, err)
	var p Parser
	stats, err := p.Parse(data, nil)
	require.NoError(t, err)
	require.NotEmpty(t, stats, "a Linux host lists at least one block device")
	for _, s := range stats {
		assert.Contains(t, []int{14, 18, 20}, s.Fields, s.DeviceName)
	}
	// A second pread at offset 0 of the same open procfs file sees a fresh
	// snapshot of the same devices.
	data, err = r.Read("/proc/diskstats")
	require.NoError(t, err)
	again, err := p.Parse(data, nil)
	require.NoError(t, err)
	require.Len(t, again, len(stats))
	for i := range stats {
		assert.Equal(t, stats[i].Info, again[i].Info)
	}
}

// parseUint is the parser's number conversion applied to a whole token.
func parseUint(b []byte, size int) (uint64, error) {
	limit := uint64(1)<<size - 1
	v, end, err := scanUint(b, 0, limit)
	if err == nil && (end == 0 || end < len(b)) {
		err = strconv.ErrSyntax
	}
	return v, err
}

func TestScanUintMatchesStrconv(t *testing.T) {
	for _, in := range []string{
		"0", "7", "007", "4294967295", "4294967296", "4294967296x", "18446744073709551615", "18446744073709551616",
		"99999999999999999999", "000000000000000000000000001", "1844674407370955161x", "99999999999999999999x",
		"", "-1", "+1", " 1", "1e3", "0x10",
	} {
		for _, size := range []int{32, 64} {
			want, wantErr := strconv.ParseUint(in, 10, size)
			got, err := parseUint([]byte(in), size)
			if wantErr != nil {
				require.Error(t, err, "%q/%d", in, size)
				var numErr *strconv.NumError
				require.ErrorAs(t, wantErr, &numErr)
				require.ErrorIs(t, err, numErr.Err, "%q/%d", in, size)
				continue
			}
			require.NoError(t, err, "%q/%d", in, size)
			assert.Equal(t, want, got, "%q/%d", in, size)
		}
	}
}

// TestParseSanitisesNames: a device name with NUL, other control characters or non-UTF-8 bytes (it goes
// out as system.device with device_classes: [..., other]) is made valid and bounded where it is read,
// once per device (the interned name is the sanitised one).
func TestParseSanitisesNames(t *testing.T) {
	long := strings.Repeat("n", 500)
	data := []byte("8 0 sd\x00a 1 2 3 4 5 6 7 8 9 10 11\n8 16 \xff\xfe 1 2 3 4 5 6 7 8 9 10 11\n8 32 " + long + " 1 2 3 4 5 6 7 8 9 10 11\n")
	var p Parser
	stats, err := p.Parse(data, nil)
	require.NoError(t, err)
	require.Len(t, stats, 3)
	assert.Equal(t, `sd\x00a`, stats[0].DeviceName)
	assert.Equal(t, "\uFFFD\uFFFD", stats[1].DeviceName)
	assert.Equal(t, sanitize.String(sanitize.Device, long), stats[2].DeviceName)
	assert.Len(t, stats[2].DeviceName, sanitize.Cap(sanitize.Device))
	again, err := p.Parse(data, nil)
	require.NoError(t, err)
	assert.Equal(t, unsafe.StringData(stats[0].DeviceName), unsafe.StringData(again[0].DeviceName), "interned")

	_, err = p.Parse([]byte("8 0 sd\x01\xffb 1 2\n"), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `sd\x01`+"\uFFFD"+"b", "the error names the device as it is reported")
}

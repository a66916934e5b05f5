package pressure

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Pressure
	}{
		{
			name: "kernel 6.18 io",
			in:   "some avg10=0.05 avg60=0.52 avg300=0.58 total=23416991\nfull avg10=0.02 avg60=0.19 avg300=0.12 total=5117953\n",
			want: Pressure{
				Some:    Stall{Avg10: 0.0005, Avg60: 0.0052, Avg300: 0.0058, TotalMicros: 23416991},
				Full:    Stall{Avg10: 0.0002, Avg60: 0.0019, Avg300: 0.0012, TotalMicros: 5117953},
				HasFull: true,
			},
		},
		{
			name: "cpu before 5.13: no full line",
			in:   "some avg10=100.00 avg60=0.00 avg300=0.00 total=0\n",
			want: Pressure{Some: Stall{Avg10: 1}},
		},
		{
			name: "unknown keys ignored, fields in any order, no final newline",
			in:   "full total=7 avg300=1.00 avg60=2.00 avg10=3.00 window=9\nsome avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551615",
			want: Pressure{
				Some:    Stall{TotalMicros: 18446744073709551615},
				Full:    Stall{Avg10: 0.03, Avg60: 0.02, Avg300: 0.01, TotalMicros: 7},
				HasFull: true,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			require.NoError(t, err)
			assert.InDelta(t, tc.want.Some.Avg10, got.Some.Avg10, 1e-12)
			assert.InDelta(t, tc.want.Some.Avg60, got.Some.Avg60, 1e-12)
			assert.InDelta(t, tc.want.Some.Avg300, got.Some.Avg300, 1e-12)
			assert.InDelta(t, tc.want.Full.Avg10, got.Full.Avg10, 1e-12)
			assert.InDelta(t, tc.want.Full.Avg60, got.Full.Avg60, 1e-12)
			assert.InDelta(t, tc.want.Full.Avg300, got.Full.Avg300, 1e-12)
			assert.Equal(t, tc.want.Some.TotalMicros, got.Some.TotalMicros)
			assert.Equal(t, tc.want.Full.TotalMicros, got.Full.TotalMicros)
			assert.Equal(t, tc.want.HasFull, got.HasFull)
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in     string
		line         int
		field, value string // the bad field and its (quoted) text
		want         string // the whole message, "" for an error that names no line
		is           error
	}{
		{name: "empty", in: "", is: errNoSome},
		{name: "only full", in: "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", is: errNoSome},
		{name: "bad average", in: "some avg10=0.00 avg60=zero avg300=0.00 total=0\n", line: 1, field: "avg60", value: "zero", want: `pressure line 1: field avg60 "zero": invalid syntax`, is: strconv.ErrSyntax},
		{name: "negative average", in: "some avg10=-1.00 avg60=0.00 avg300=0.00 total=0\n", line: 1, field: "avg10", value: "-1.00", want: `pressure line 1: field avg10 "-1.00": average outside 0–100 %`, is: errRange},
		{name: "above 100 %", in: "some avg10=0.00 avg60=0.00 avg300=100.01 total=0\n", line: 1, field: "avg300", value: "100.01", want: `pressure line 1: field avg300 "100.01": average outside 0–100 %`, is: errRange},
		{name: "NaN", in: "some avg10=NaN avg60=0.00 avg300=0.00 total=0\n", line: 1, field: "avg10", value: "NaN", want: `pressure line 1: field avg10 "NaN": average outside 0–100 %`, is: errRange},
		{name: "total overflows", in: "some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551616\n", line: 1, field: "total", value: "18446744073709551616", want: `pressure line 1: field total "18446744073709551616": value out of range`, is: strconv.ErrRange},
		{name: "missing total", in: "some avg10=0.00 avg60=0.00 avg300=0.00\n", line: 1, field: "total", want: "pressure line 1: field total: missing field", is: errMissing},
		{name: "missing avg60 on line 2", in: "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 avg300=0.00 total=0\n", line: 2, field: "avg60", want: "pressure line 2: field avg60: missing field", is: errMissing},
		{name: "bare word", in: "some avg10 avg60=0.00 avg300=0.00 total=1\n", line: 1, value: "avg10", want: `pressure line 1 "avg10": field is not key=value`, is: errField},
		{name: "other kind", in: "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\npartial avg10=0.00\n", line: 2, want: `pressure line 2: line is neither "some" nor "full"`, is: errKind},
		{name: "twice some", in: "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\nsome avg10=0.00 avg60=0.00 avg300=0.00 total=1\n", line: 2, want: "pressure line 2: line appears twice", is: errDuplicate},
		{name: "twice full", in: "full avg10=0.00 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1\n", line: 2, want: "pressure line 2: line appears twice", is: errDuplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			require.Error(t, err)
			require.ErrorIs(t, err, tc.is)
			var le *parseerr.Line
			if tc.line == 0 {
				assert.NotErrorAs(t, err, &le, "%v", err)
				return
			}
			require.ErrorAs(t, err, &le)
			assert.Equal(t, tc.line, le.Line)
			assert.Equal(t, "pressure", le.File)
			assert.Equal(t, tc.field, le.Field)
			assert.Equal(t, tc.value, le.Value)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestReadFixtures(t *testing.T) {
	p, err := Read(filepath.Join("testdata", "psi", "proc", "pressure", "io"))
	require.NoError(t, err)
	assert.Equal(t, uint64(23416991), p.Some.TotalMicros)
	assert.InDelta(t, 23.416991, p.Some.TotalSeconds(), 1e-9)
	assert.True(t, p.HasFull)

	// A kernel without PSI has no /proc/pressure at all.
	path := filepath.Join("testdata", "nopsi", "proc", "pressure", "io")
	_, err = Read(path)
	require.ErrorIs(t, err, ErrUnavailable)
	assert.True(t, Unavailable(err))
	assert.Contains(t, err.Error(), path)

	// A malformed file is an error naming the file, the line and the field, and not "unavailable".
	path = filepath.Join("testdata", "malformed", "proc", "pressure", "io")
	_, err = Read(path)
	require.Error(t, err)
	assert.False(t, Unavailable(err))
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "line 2: field avg60")
}

func TestUnavailable(t *testing.T) {
	// psi=0 on kernels that keep the files: the read fails with EOPNOTSUPP.
	assert.True(t, Unavailable(&fs.PathError{Op: "read", Path: "/proc/pressure/io", Err: syscall.EOPNOTSUPP}))
	assert.True(t, Unavailable(&fs.PathError{Op: "open", Path: "/proc/pressure/io", Err: syscall.ENOENT}))
	assert.False(t, Unavailable(&fs.PathError{Op: "open", Path: "/proc/pressure/io", Err: syscall.EACCES}))
	assert.False(t, Unavailable(errNoSome))
}

// TestReadLive reads this machine's /proc/pressure/io when the kernel has PSI: the parser must accept
// what the running kernel prints, and the cumulative totals must never go back between two reads.
func TestReadLive(t *testing.T) {
	const path = "/proc/pressure/io"
	first, err := Read(path)
	if Unavailable(err) {
		t.Skip("kernel without PSI")
	}
	require.NoError(t, err)
	second, err := Read(path)
	require.NoError(t, err)
	assert.True(t, first.HasFull)
	assert.GreaterOrEqual(t, second.Some.TotalMicros, first.Some.TotalMicros)
	assert.GreaterOrEqual(t, second.Full.TotalMicros, first.Full.TotalMicros)
	// full (all tasks stalled) can never exceed some (at least one stalled).
	assert.LessOrEqual(t, second.Full.TotalMicros, second.Some.TotalMicros)
}

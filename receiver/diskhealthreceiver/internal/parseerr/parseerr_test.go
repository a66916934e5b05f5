package parseerr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLineError(t *testing.T) {
	for _, tc := range []struct {
		name string
		line Line
		want string
	}{
		{"whole line", Line{File: "pressure", Line: 2, Err: errors.New("line appears twice")}, "pressure line 2: line appears twice"},
		{"device", Line{File: "io.stat", Line: 1, Device: "8:0", Err: errors.New("device appears twice")}, "io.stat line 1 (8:0): device appears twice"},
		{"field and value", Line{File: "diskstats", Line: 2, Device: "sdb", Field: "7", Value: "x1", Err: strconv.ErrSyntax},
			`diskstats line 2 (sdb): field 7 "x1": invalid syntax`},
		{"field only", Line{File: "pressure", Line: 1, Field: "total", Err: errors.New("missing field")}, "pressure line 1: field total: missing field"},
		{"value only", Line{File: "mountinfo", Line: 3, Value: "garbage", Err: errors.New("too few fields")}, `mountinfo line 3 "garbage": too few fields`},
		{"value is quoted", Line{File: "io.stat", Line: 1, Value: "a\"b\n", Err: errors.New("bad")}, `io.stat line 1 "a\"b\n": bad`},
		{"no err", Line{File: "x", Line: 1}, "x line 1: malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.EqualError(t, &tc.line, tc.want)
		})
	}
}

func TestLineUnwraps(t *testing.T) {
	err := fmt.Errorf("cgroup /a: %w", &Line{File: "io.stat", Line: 4, Err: strconv.ErrRange})
	require.ErrorIs(t, err, strconv.ErrRange)
	var l *Line
	require.ErrorAs(t, err, &l)
	assert.Equal(t, 4, l.Line)
}

func TestValueIsClipped(t *testing.T) {
	long := strings.Repeat("x", 3*MaxValue)
	assert.Len(t, Clip([]byte(long)), MaxValue)
	assert.Equal(t, "short", Clip([]byte("short")))
	assert.Equal(t, strings.Repeat("9", MaxDigits), Clip([]byte(strings.Repeat("9", 3*MaxValue))), "a run past 20 digits is garbage, cut there")
	// Error clips a Value that was set without Clip too.
	l := &Line{File: "f", Line: 1, Value: long, Err: strconv.ErrRange}
	assert.Equal(t, `f line 1 "`+long[:MaxValue]+`": value out of range`, l.Error())
}

// TestClipKeepsTheShape: a line whose counters grow (in width too) is cut after the same fields, so its
// quoted start, numbers masked, stays the same problem.
func TestClipKeepsTheShape(t *testing.T) {
	line := func(n uint64) []byte {
		f := make([]string, 3*MaxValue)
		for i := range f {
			f[i] = strconv.FormatUint(n*uint64(i+1), 10)
		}
		return []byte("READ: " + strings.Join(f, " "))
	}
	fields := func(s string) int { return len(strings.Fields(s)) }
	short, wide := Clip(line(1)), Clip(line(1<<50))
	assert.Equal(t, fields(short), fields(wide))
	assert.Less(t, len(short), len(wide))
	assert.Equal(t, "READ: 1 2 3", short[:len("READ: 1 2 3")])
}

func TestLinesKeepsTheFirstMaxLines(t *testing.T) {
	var ls *Lines
	require.NoError(t, ls.Err(), "a nil *Lines is no error")
	require.NoError(t, new(Lines).Err(), "nor is an empty one")

	for i := 1; i <= MaxLines+15; i++ {
		ls = ls.Add(&Line{File: "mountinfo", Line: i, Err: strconv.ErrSyntax})
	}
	err := ls.Err()
	require.Error(t, err)
	assert.Equal(t, MaxLines+15, ls.Count)
	require.Len(t, ls.Lines, MaxLines)
	assert.Equal(t, MaxLines, ls.Lines[MaxLines-1].Line)
	msg := err.Error()
	assert.True(t, strings.HasPrefix(msg, "25 bad lines: mountinfo line 1: invalid syntax; mountinfo line 2: "), msg)
	assert.True(t, strings.HasSuffix(msg, "; mountinfo line 10: invalid syntax; and 15 more"), msg)
	require.ErrorIs(t, err, strconv.ErrSyntax)
	var l *Line
	require.ErrorAs(t, err, &l)
	assert.Equal(t, 1, l.Line)
}

func TestLinesWithOneLineIsThatLine(t *testing.T) {
	var ls *Lines
	ls = ls.Add(&Line{File: "diskstats", Line: 2, Device: "sdb", Err: errors.New("9 fields, want at least 14")})
	require.EqualError(t, ls.Err(), "diskstats line 2 (sdb): 9 fields, want at least 14")

	ls = ls.Add(&Line{File: "diskstats", Line: 5, Err: errors.New("1 fields, want at least 14")})
	assert.EqualError(t, ls.Err(),
		"2 bad lines: diskstats line 2 (sdb): 9 fields, want at least 14; diskstats line 5: 1 fields, want at least 14")
}

func TestCount(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	var many *Lines
	for i := range 25 {
		many = many.Add(&Line{File: "diskstats", Line: i + 1, Err: strconv.ErrSyntax})
	}
	one := &Line{File: "io.stat", Line: 1, Err: strconv.ErrSyntax}

	assert.Equal(t, 0, Count(nil))
	assert.Equal(t, 1, Count(a))
	assert.Equal(t, 2, Count(errors.Join(a, b)))
	assert.Equal(t, 3, Count(fmt.Errorf("file: %w", errors.Join(a, b, a))))
	assert.Equal(t, 25, Count(many), "the lines not kept count too")
	assert.Equal(t, 25, Count(fmt.Errorf("/proc/diskstats: %w", many)))
	assert.Equal(t, 1, Count(fmt.Errorf("cgroup /a: %w", one)))
	assert.Equal(t, 27, Count(errors.Join(a, fmt.Errorf("cgroup /a: %w", one), many)))
	assert.Equal(t, 2, Count(errors.Join(one, fmt.Errorf("cgroup /b: %w", errors.Join(one)))))
}

// Package parseerr is the one shape of a parse error: a *Line names the file, line, device, field and
// value a parser skipped, and *Lines collects the bad lines of one parse, keeping the first MaxLines so
// that a garbage file cannot make a huge error. Count tells a scraper how many failures an error
// stands for, for the count of a partial scrape.
package parseerr // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"

import (
	"strconv"
	"strings"
)

// MaxValue bounds how much of a bad value (a field, a device or the start of a line) an error keeps
// and quotes, so one garbage line cannot produce a huge log message. It counts the value's shape: a run
// of digits counts once (see Clip).
const MaxValue = 120

// MaxDigits is the most digits of one run a clipped value keeps: a uint64 has 20, and a longer run is
// garbage, cut there.
const MaxDigits = 20

// MaxLines is how many bad lines a *Lines keeps; the others are only counted.
const MaxLines = 10

// Line describes one line a parser could not read. Only File, Line and Err are always set.
type Line struct {
	File   string // "diskstats", "mountinfo", "io.stat", "blkio.throttle.io_serviced_recursive" …
	Line   int    // 1-based line number in the parsed data
	Device string // the line's device ("sda", "8:0"), "" when it has none or it is the bad value
	Field  string // the bad field ("7", "avg10", "rbytes"), "" for the whole line
	Value  string // the bad text, an example: at most MaxValue of its shape (see Clip); "" when not quoted
	Err    error  // what is wrong: a sentinel of the parser, strconv.ErrSyntax, strconv.ErrRange …
}

// Error formats the line as
//
//	<file> line <n>[ (<device>)][: field <f>][ "<value>"]: <err>
//
// for example `diskstats line 2 (sdb): field 7 "x1": invalid syntax`.
func (e *Line) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	b.WriteString(" line ")
	b.WriteString(strconv.Itoa(e.Line))
	if e.Device != "" {
		b.WriteString(" (")
		b.WriteString(e.Device)
		b.WriteString(")")
	}
	if e.Field != "" {
		b.WriteString(": field ")
		b.WriteString(e.Field)
	}
	if e.Value != "" {
		b.WriteString(" ")
		b.WriteString(strconv.Quote(clip(e.Value)))
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("malformed")
	}
	return b.String()
}

// Unwrap exposes Err to errors.Is and errors.As.
func (e *Line) Unwrap() error { return e.Err }

// Clip returns a copy of the start of b, for Line.Value: at most MaxValue bytes of its shape, where a
// run of digits counts as one byte and keeps at most MaxDigits digits (so at most MaxValue × 11 bytes).
// A problem is known by its text with the numbers it quotes masked (the scrapers' reporter logs it once
// per change of that): cut by bytes, a line whose counters grow would lose fields from its quoted start
// and look like a new problem; cut by shape, it keeps the same fields whatever its counters. The error
// then pins no more of the parsed data than that.
func Clip(b []byte) string { return string(b[:clipLen(b)]) }

func clip(s string) string { return s[:clipLen([]byte(s))] }

func clipLen(b []byte) int {
	i := 0
	for shape := 0; i < len(b) && shape < MaxValue; shape++ {
		if !isDigit(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && isDigit(b[j]) {
			j++
		}
		if j-i > MaxDigits {
			return i + MaxDigits
		}
		i = j
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// Lines collects the bad lines of one parse. Only the first MaxLines are kept; Count counts them all.
// A parser starts from a nil *Lines, so a good parse allocates nothing:
//
//	var bad *parseerr.Lines
//	…
//	bad = bad.Add(&parseerr.Line{File: "io.stat", Line: n, Err: err})
//	…
//	return result, bad.Err()
type Lines struct {
	Lines []*Line
	Count int // all bad lines, including those not kept
}

// Add counts l, keeps it if fewer than MaxLines are kept, and returns e, allocated if it was nil.
func (e *Lines) Add(l *Line) *Lines {
	if e == nil {
		e = new(Lines)
	}
	e.Count++
	if len(e.Lines) < MaxLines {
		e.Lines = append(e.Lines, l)
	}
	return e
}

// Err returns e as an error, or nil when no line was added (a nil *Lines never becomes a non-nil error).
func (e *Lines) Err() error {
	if e == nil || e.Count == 0 {
		return nil
	}
	return e
}

// Error is the one kept line's message when there was only one bad line, otherwise
//
//	<count> bad lines: <line>; <line>; … and <k> more
func (e *Lines) Error() string {
	if e.Count == 1 && len(e.Lines) == 1 {
		return e.Lines[0].Error()
	}
	var b strings.Builder
	b.WriteString(strconv.Itoa(e.Count))
	b.WriteString(" bad lines")
	for i, l := range e.Lines {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(l.Error())
	}
	if e.Count > len(e.Lines) {
		b.WriteString("; and ")
		b.WriteString(strconv.Itoa(e.Count - len(e.Lines)))
		b.WriteString(" more")
	}
	return b.String()
}

// Unwrap exposes the kept lines to errors.Is and errors.As.
func (e *Lines) Unwrap() []error {
	errs := make([]error, len(e.Lines))
	for i, l := range e.Lines {
		errs[i] = l
	}
	return errs
}

// Count reports how many failures err stands for, for the count of a partial scrape: a *Lines counts
// every bad line it saw (kept or not), a *Line one, an errors.Join (or any error with Unwrap() []error)
// the sum of its items, an error wrapping one of these (fmt.Errorf's %w) what it wraps, and any other
// error 1. A nil error is 0.
func Count(err error) int {
	switch e := err.(type) { //nolint:errorlint // walks the wrapping itself, one level at a time
	case nil:
		return 0
	case *Lines:
		return e.Count
	case *Line:
		return 1
	case interface{ Unwrap() []error }:
		n := 0
		for _, item := range e.Unwrap() {
			n += Count(item)
		}
		return max(n, 1)
	case interface{ Unwrap() error }:
		if inner := e.Unwrap(); inner != nil {
			return Count(inner)
		}
	}
	return 1
}

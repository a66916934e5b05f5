// Package pressure parses Linux pressure stall information (PSI): /proc/pressure/io and a cgroup v2
// io.pressure file, which share one format. Parsing is pure; Read is the thin file layer.
package pressure // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/pressure"

import (
	"bytes"
	"errors"
	"math"
	"strconv"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
)

// Stall is one line of a PSI file: the share of wall time in which tasks were stalled.
type Stall struct {
	// Avg10, Avg60 and Avg300 are the kernel's running averages over 10 s, 60 s and 300 s as ratios 0–1
	// (the kernel prints percent).
	Avg10, Avg60, Avg300 float64
	// TotalMicros is the cumulative stall time in microseconds since boot (or the cgroup's creation).
	TotalMicros uint64
}

// TotalSeconds is the cumulative stall time in seconds.
func (s Stall) TotalSeconds() float64 { return float64(s.TotalMicros) / 1e6 }

// Pressure is a parsed PSI file. Some is the time in which at least one non-idle task was stalled;
// Full the time in which all non-idle tasks were stalled at once. The io file has both lines since
// PSI's first kernel (4.20); HasFull is false only for files without the line (cpu before 5.13).
type Pressure struct {
	Some    Stall
	Full    Stall
	HasFull bool
}

// ErrUnavailable marks a kernel without PSI: CONFIG_PSI off or booted with psi=0 (no /proc/pressure,
// EOPNOTSUPP on the file), or a cgroup whose pressure accounting is switched off.
var ErrUnavailable = errors.New("pressure stall information is not available")

var (
	errNoSome    = errors.New(`no "some" line`)
	errDuplicate = errors.New("line appears twice")
	errKind      = errors.New(`line is neither "some" nor "full"`)
	errMissing   = errors.New("missing field")
	errField     = errors.New("field is not key=value")
	errRange     = errors.New("average outside 0–100 %")
)

// file names a PSI file in a parse error.
const file = "pressure"

// Parse reads the content of a PSI file:
//
//	some avg10=0.05 avg60=0.52 avg300=0.58 total=23416991
//	full avg10=0.02 avg60=0.19 avg300=0.12 total=5117953
//
// Both lines need avg10, avg60, avg300 and total; keys a later kernel may add are ignored. A file
// whose content cannot be trusted as a whole is an error, a *parseerr.Line for a bad line: half a
// pressure reading would mislead.
func Parse(data []byte) (Pressure, error) {
	var p Pressure
	var haveSome bool
	lineNo := 0
	for line := range bytes.Lines(data) {
		lineNo++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		kind, rest, _ := bytes.Cut(line, []byte(" "))
		var dst *Stall
		switch string(kind) {
		case "some":
			if haveSome {
				return Pressure{}, &parseerr.Line{File: file, Line: lineNo, Err: errDuplicate}
			}
			haveSome, dst = true, &p.Some
		case "full":
			if p.HasFull {
				return Pressure{}, &parseerr.Line{File: file, Line: lineNo, Err: errDuplicate}
			}
			p.HasFull, dst = true, &p.Full
		default:
			return Pressure{}, &parseerr.Line{File: file, Line: lineNo, Err: errKind}
		}
		if err := parseStall(rest, dst); err != nil {
			err.Line = lineNo
			return Pressure{}, err
		}
	}
	if !haveSome {
		return Pressure{}, errNoSome
	}
	return p, nil
}

func parseStall(fields []byte, s *Stall) *parseerr.Line {
	const (
		seen10 = 1 << iota
		seen60
		seen300
		seenTotal
		seenAll = seen10 | seen60 | seen300 | seenTotal
	)
	seen := 0
	for field := range bytes.FieldsSeq(fields) {
		key, val, ok := bytes.Cut(field, []byte("="))
		if !ok {
			return &parseerr.Line{File: file, Value: parseerr.Clip(field), Err: errField}
		}
		var avg *float64
		switch string(key) {
		case "avg10":
			avg, seen = &s.Avg10, seen|seen10
		case "avg60":
			avg, seen = &s.Avg60, seen|seen60
		case "avg300":
			avg, seen = &s.Avg300, seen|seen300
		case "total":
			v, err := strconv.ParseUint(string(val), 10, 64)
			if err != nil {
				return &parseerr.Line{File: file, Field: "total", Value: parseerr.Clip(val), Err: errors.Unwrap(err)}
			}
			s.TotalMicros, seen = v, seen|seenTotal
			continue
		default:
			continue
		}
		pct, err := strconv.ParseFloat(string(val), 64)
		if err != nil {
			return &parseerr.Line{File: file, Field: string(key), Value: parseerr.Clip(val), Err: errors.Unwrap(err)}
		}
		if math.IsNaN(pct) || pct < 0 || pct > 100 {
			return &parseerr.Line{File: file, Field: string(key), Value: parseerr.Clip(val), Err: errRange}
		}
		*avg = pct / 100
	}
	if seen != seenAll {
		missing := "total"
		switch {
		case seen&seen10 == 0:
			missing = "avg10"
		case seen&seen60 == 0:
			missing = "avg60"
		case seen&seen300 == 0:
			missing = "avg300"
		}
		return &parseerr.Line{File: file, Field: missing, Err: errMissing}
	}
	return nil
}

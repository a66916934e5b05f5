package diskstats

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"strconv"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

// The kernel has printed 14 fields per line since 2.6.25, 18 since 4.18
// (discard) and 20 since 5.5 (flush).
const (
	fieldsBase    = 14
	fieldsDiscard = 18
	fieldsFlush   = 20
)

// Parser parses /proc/diskstats content. It interns device names, so once
// every device has been seen a parse allocates nothing. A Parser is not safe
// for concurrent use; its zero value is ready to use.
type Parser struct {
	names map[string]string
}

// file names /proc/diskstats in a parse error.
const file = "diskstats"

// Parse appends one Stat per valid line of data to dst[:0] and returns it.
// A malformed line (a non-numeric or overflowing field, fewer than 14 fields)
// is skipped and reported in the returned *parseerr.Lines (which keeps the
// first parseerr.MaxLines, so a garbage file cannot make a huge error); every
// other line is still returned. Blank lines are ignored.
//
// Lines with 15–17 fields are read as 14, 19 as 18 and more than 20 as 20:
// only complete groups (discard, flush) are trusted. All counters are parsed
// as uint64, including the ones the kernel prints as 32-bit; wrapping is the
// rate engine's business.
func (p *Parser) Parse(data []byte, dst []Stat) ([]Stat, error) {
	if p.names == nil {
		p.names = make(map[string]string)
	}
	dst = dst[:0]
	var bad *parseerr.Lines // allocated on the first bad line: a good parse allocates nothing
	for lineNo := 1; len(data) > 0; lineNo++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		dst = append(dst, Stat{})
		blank, lerr := p.parseLine(line, &dst[len(dst)-1])
		if blank || lerr != nil {
			dst = dst[:len(dst)-1]
		}
		if lerr != nil {
			lerr.Line = lineNo
			bad = bad.Add(lerr)
		}
	}
	// Devices come and go (loop devices, CSI volumes); forget names that
	// are no longer printed once they dominate the table. clear keeps the
	// map's storage, so this costs no allocation either.
	if len(p.names) > 2*len(dst)+64 {
		clear(p.names)
		for i := range dst {
			p.names[dst[i].DeviceName] = dst[i].DeviceName
		}
	}
	return dst, bad.Err()
}

// spaces holds the bytes that separate fields: the kernel prints single
// spaces, but we also accept tabs and a CR before the newline.
var spaces = [256]bool{' ': true, '\t': true, '\r': true, '\v': true, '\f': true}

// parseLine fills st from one line. It reports blank for a line with no
// fields, and a *parseerr.Line (without line number) for a malformed line.
//
// Numbers are converted while the line is scanned, so each byte is looked at
// once. Whether a bad field matters depends on the final field count (fields
// past the last complete group are ignored), so the first failure is
// remembered, not returned at once.
func (p *Parser) parseLine(line []byte, st *Stat) (blank bool, _ *parseerr.Line) {
	var (
		v       [fieldsFlush - 3]uint64
		name    []byte
		n       int // fields seen, up to fieldsFlush+1 to tell "exactly 20" from "more"
		badAt   int // 1-based field number of the first bad field, 0 if none
		badText []byte
		badErr  error
	)
	for i := 0; i < len(line) && n <= fieldsFlush; {
		if spaces[line[i]] {
			i++
			continue
		}
		n++
		start := i
		if n != 3 && n <= fieldsFlush && badAt == 0 {
			limit := uint64(math.MaxUint64)
			if n <= 2 {
				limit = math.MaxUint32 // major, minor
			}
			var x uint64
			var err error
			x, i, err = scanUint(line, i, limit)
			if err == nil && (i == start || (i < len(line) && !spaces[line[i]])) {
				err = strconv.ErrSyntax
			}
			switch {
			case err != nil:
				badAt, badErr = n, err
			case n == 1:
				st.MajorNumber = uint32(x)
			case n == 2:
				st.MinorNumber = uint32(x)
			default:
				v[n-4] = x
			}
		}
		for i < len(line) && !spaces[line[i]] {
			i++
		}
		switch {
		case n == 3:
			name = line[start:i]
		case badAt == n:
			badText = line[start:i]
		}
	}
	if n == 0 {
		return true, nil
	}
	switch {
	case n < fieldsBase:
		return false, &parseerr.Line{File: file, Device: sanitize.Bytes(sanitize.Device, name), Err: fmt.Errorf("%d fields, want at least %d", n, fieldsBase)}
	case n < fieldsDiscard:
		n = fieldsBase
	case n < fieldsFlush:
		n = fieldsDiscard
	default:
		n = fieldsFlush
	}
	if badAt != 0 && badAt <= n {
		return false, badField(name, badAt, badText, badErr)
	}

	interned, ok := p.names[string(name)] // no allocation for the lookup
	if !ok {
		// The read boundary of device names: valid UTF-8, no control characters, at most
		// sanitize.Cap(sanitize.Device) bytes. Keyed by the raw name, so this runs once per device.
		interned = sanitize.Bytes(sanitize.Device, name)
		p.names[string(name)] = interned
	}
	st.DeviceName = interned
	st.Fields = n
	// Zero what the line did not have (or had but incompletely).
	clear(v[n-3:])
	s := &st.IOStats
	s.ReadIOs, s.ReadMerges, s.ReadSectors, s.ReadTicks = v[0], v[1], v[2], v[3]
	s.WriteIOs, s.WriteMerges, s.WriteSectors, s.WriteTicks = v[4], v[5], v[6], v[7]
	s.IOsInProgress, s.IOsTotalTicks, s.WeightedIOTicks = v[8], v[9], v[10]
	s.DiscardIOs, s.DiscardMerges, s.DiscardSectors, s.DiscardTicks = v[11], v[12], v[13], v[14]
	s.FlushRequestsCompleted, s.TimeSpentFlushing = v[15], v[16]
	return false, nil
}

func badField(name []byte, field int, value []byte, err error) *parseerr.Line {
	return &parseerr.Line{File: file, Device: sanitize.Bytes(sanitize.Device, name), Field: strconv.Itoa(field), Value: parseerr.Clip(value), Err: err}
}

// scanUint converts the ASCII digits of b starting at i, stopping at the
// first non-digit, whose index it returns. It fails with strconv.ErrRange as
// soon as the value exceeds limit, like strconv.ParseUint.
func scanUint(b []byte, i int, limit uint64) (uint64, int, error) {
	var v uint64
	for digits := 0; i < len(b); i, digits = i+1, digits+1 {
		d := uint64(b[i]) - '0'
		if d > 9 {
			break
		}
		if digits < 19 { // 19 digits always fit in 64 bits
			v = v*10 + d
		} else {
			hi, lo := bits.Mul64(v, 10)
			var carry uint64
			v, carry = bits.Add64(lo, d, 0)
			if hi != 0 || carry != 0 {
				return 0, i, strconv.ErrRange
			}
		}
		if v > limit {
			return 0, i, strconv.ErrRange
		}
	}
	return v, i, nil
}

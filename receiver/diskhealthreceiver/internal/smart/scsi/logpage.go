package scsi

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/ascii"
)

// LogPage is a LOG SENSE page in parameter format.
type LogPage struct {
	Code    uint8
	Subpage uint8
	// SPF says the subpage format is in use; DS that parameters are not
	// saved.
	SPF, DS bool
	Params  []LogParam
}

// LogParam is one log parameter. Value aliases the page buffer.
type LogParam struct {
	Code    uint16
	Control uint8
	Value   []byte
}

// Param returns the parameter with the given code.
func (p *LogPage) Param(code uint16) (LogParam, bool) {
	for _, q := range p.Params {
		if q.Code == code {
			return q, true
		}
	}
	return LogParam{}, false
}

// header reads a log page header and returns the page body, checking that
// the page length fits the bytes the device returned.
func header(b []byte) (code, sub uint8, spf, ds bool, body []byte, err error) {
	if len(b) < 4 {
		return 0, 0, false, false, nil, fmt.Errorf("log page: %d bytes, shorter than the 4-byte header", len(b))
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if 4+n > len(b) {
		return 0, 0, false, false, nil, fmt.Errorf("log page %#02x: page length %d exceeds the %d bytes returned (truncated)", b[0]&0x3F, n, len(b)-4)
	}
	return b[0] & 0x3F, b[1], b[0]&0x40 != 0, b[0]&0x80 != 0, b[4 : 4+n], nil
}

// ParseLogPage walks a parameter-format log page. Every parameter must fit
// inside the page length; a parameter that runs past it is an error.
// Bytes after the page length (allocation padding) are ignored.
func ParseLogPage(b []byte) (*LogPage, error) {
	code, sub, spf, ds, body, err := header(b)
	if err != nil {
		return nil, err
	}
	p := &LogPage{Code: code, Subpage: sub, SPF: spf, DS: ds}
	for off := 0; off < len(body); {
		if off+4 > len(body) {
			return nil, fmt.Errorf("log page %#02x: parameter header at offset %d cut off by the page end", code, 4+off)
		}
		n := int(body[off+3])
		if off+4+n > len(body) {
			return nil, fmt.Errorf("log page %#02x: parameter %#04x at offset %d has length %d, past the page end", code, binary.BigEndian.Uint16(body[off:]), 4+off, n)
		}
		p.Params = append(p.Params, LogParam{
			Code:    binary.BigEndian.Uint16(body[off:]),
			Control: body[off+2],
			Value:   body[off+4 : off+4+n],
		})
		off += 4 + n
	}
	return p, nil
}

func expectPage(b []byte, code uint8) (*LogPage, error) {
	p, err := ParseLogPage(b)
	if err != nil {
		return nil, err
	}
	if p.Code != code {
		return nil, fmt.Errorf("log page: got page %#02x, want %#02x", p.Code, code)
	}
	return p, nil
}

// beCounter reads a big-endian counter of any length, saturating at the
// largest uint64 when significant bytes do not fit.
func beCounter(b []byte) uint64 {
	var v uint64
	for i, c := range b {
		if len(b)-i > 8 {
			if c != 0 {
				return math.MaxUint64
			}
			continue
		}
		v = v<<8 | uint64(c)
	}
	return v
}

// PageRef names a log page and subpage.
type PageRef struct{ Code, Subpage uint8 }

// ParseSupportedPages decodes page 00h: either the list of supported page
// codes (subpage 00h) or of supported page/subpage pairs (subpage FFh).
func ParseSupportedPages(b []byte) ([]PageRef, error) {
	code, sub, spf, _, body, err := header(b)
	if err != nil {
		return nil, err
	}
	if code != PageSupported {
		return nil, fmt.Errorf("supported log pages: got page %#02x", code)
	}
	var out []PageRef
	if spf && sub == 0xFF {
		if len(body)%2 != 0 {
			return nil, fmt.Errorf("supported log pages and subpages: odd length %d", len(body))
		}
		for i := 0; i < len(body); i += 2 {
			out = append(out, PageRef{body[i] & 0x3F, body[i+1]})
		}
		return out, nil
	}
	for _, c := range body {
		out = append(out, PageRef{Code: c & 0x3F})
	}
	return out, nil
}

// Temperature is log page 0Dh.
type Temperature struct {
	// Current is the drive temperature in °C (HasCurrent false when the
	// drive reports FFh, "not available").
	Current    int
	HasCurrent bool
	// Reference is the maximum temperature the drive is rated to run at
	// continuously (the "drive trip" smartctl prints).
	Reference    int
	HasReference bool
}

// ParseTemperaturePage decodes log page 0Dh.
func ParseTemperaturePage(b []byte) (Temperature, error) {
	p, err := expectPage(b, PageTemperature)
	if err != nil {
		return Temperature{}, err
	}
	var t Temperature
	if q, ok := p.Param(0x0000); ok && len(q.Value) >= 2 && q.Value[1] != 0xFF {
		t.Current, t.HasCurrent = int(q.Value[1]), true
	}
	if q, ok := p.Param(0x0001); ok && len(q.Value) >= 2 && q.Value[1] != 0xFF {
		t.Reference, t.HasReference = int(q.Value[1]), true
	}
	return t, nil
}

// InformationalExceptions is log page 2Fh: the drive's own failure
// prediction (the SCSI counterpart of ATA SMART RETURN STATUS).
type InformationalExceptions struct {
	// ASC/ASCQ of the most recent informational exception; 0/0 = none.
	ASC, ASCQ uint8
	// Temperature is the most recent temperature reading (°C) when
	// reported.
	Temperature    int
	HasTemperature bool
}

// FailurePredicted reports ASC 5Dh: "failure prediction threshold
// exceeded".
func (ie InformationalExceptions) FailurePredicted() bool { return ie.ASC == 0x5D }

// Warning reports ASC 0Bh: a warning such as "specified temperature
// exceeded" (0B/01).
func (ie InformationalExceptions) Warning() bool { return ie.ASC == 0x0B }

// ParseInformationalExceptions decodes log page 2Fh.
func ParseInformationalExceptions(b []byte) (InformationalExceptions, error) {
	p, err := expectPage(b, PageInformationalExceptions)
	if err != nil {
		return InformationalExceptions{}, err
	}
	q, ok := p.Param(0x0000)
	if !ok || len(q.Value) < 2 {
		return InformationalExceptions{}, fmt.Errorf("log page 0x2f: general parameter 0000h missing or shorter than 2 bytes")
	}
	ie := InformationalExceptions{ASC: q.Value[0], ASCQ: q.Value[1]}
	if len(q.Value) >= 3 && q.Value[2] != 0xFF {
		ie.Temperature, ie.HasTemperature = int(q.Value[2]), true
	}
	return ie, nil
}

// Counter is a log counter that may be absent from the page.
type Counter struct {
	Value uint64
	Valid bool
}

func counterOf(p *LogPage, code uint16) Counter {
	if q, ok := p.Param(code); ok && len(q.Value) > 0 {
		return Counter{Value: beCounter(q.Value), Valid: true}
	}
	return Counter{}
}

// ErrorCounters is one of the write (02h), read (03h) or verify (05h) error
// counter pages.
type ErrorCounters struct {
	Page                    uint8
	CorrectedWithoutDelay   Counter // 0000h: errors corrected without substantial delay
	CorrectedWithDelay      Counter // 0001h: errors corrected with possible delays
	Retries                 Counter // 0002h: total rewrites or rereads
	TotalCorrected          Counter // 0003h
	CorrectionAlgorithmRuns Counter // 0004h
	BytesProcessed          Counter // 0005h
	TotalUncorrected        Counter // 0006h: errors the drive could not correct
}

// ParseErrorCounters decodes page 02h, 03h or 05h.
func ParseErrorCounters(b []byte) (ErrorCounters, error) {
	p, err := ParseLogPage(b)
	if err != nil {
		return ErrorCounters{}, err
	}
	switch p.Code {
	case PageWriteErrors, PageReadErrors, PageVerifyErrors:
	default:
		return ErrorCounters{}, fmt.Errorf("error counters: page %#02x is not a write/read/verify error counter page", p.Code)
	}
	return ErrorCounters{
		Page:                    p.Code,
		CorrectedWithoutDelay:   counterOf(p, 0x0000),
		CorrectedWithDelay:      counterOf(p, 0x0001),
		Retries:                 counterOf(p, 0x0002),
		TotalCorrected:          counterOf(p, 0x0003),
		CorrectionAlgorithmRuns: counterOf(p, 0x0004),
		BytesProcessed:          counterOf(p, 0x0005),
		TotalUncorrected:        counterOf(p, 0x0006),
	}, nil
}

// StartStop is log page 0Eh.
type StartStop struct {
	// ManufactureDate is "YYYYWW" as the drive reports it ("" if absent).
	ManufactureDate        string
	SpecifiedStartStops    Counter // rated start-stop cycles over the device lifetime
	AccumulatedStartStops  Counter
	SpecifiedLoadUnloads   Counter
	AccumulatedLoadUnloads Counter
}

// ParseStartStop decodes log page 0Eh.
func ParseStartStop(b []byte) (StartStop, error) {
	p, err := expectPage(b, PageStartStop)
	if err != nil {
		return StartStop{}, err
	}
	var s StartStop
	if q, ok := p.Param(0x0001); ok && len(q.Value) == 6 {
		s.ManufactureDate = ascii.Clean(q.Value)
	}
	s.SpecifiedStartStops = counterOf(p, 0x0003)
	s.AccumulatedStartStops = counterOf(p, 0x0004)
	s.SpecifiedLoadUnloads = counterOf(p, 0x0005)
	s.AccumulatedLoadUnloads = counterOf(p, 0x0006)
	return s, nil
}

// SelfTestResult is one entry of log page 10h.
type SelfTestResult struct {
	// Number is the parameter code: 1 is the most recent test.
	Number uint16
	// Code is the self-test code: 1/5 background/foreground short, 2/6
	// background/foreground extended.
	Code uint8
	// Result: 0 passed, 1-2 aborted, 3-7 failed, 15 in progress.
	Result       uint8
	Segment      uint8
	PowerOnHours uint16
	FirstFailure uint64
	SenseKey     uint8
	ASC, ASCQ    uint8
}

// Failed reports a result that means the test found a fault.
func (r SelfTestResult) Failed() bool { return r.Result >= 3 && r.Result <= 7 }

// Extended reports a full (extended) self-test.
func (r SelfTestResult) Extended() bool { return r.Code == 2 || r.Code == 6 }

// ParseSelfTestResults decodes log page 10h, most recent first; unused
// entries (all zero) are left out.
func ParseSelfTestResults(b []byte) ([]SelfTestResult, error) {
	p, err := expectPage(b, PageSelfTest)
	if err != nil {
		return nil, err
	}
	var out []SelfTestResult
	for _, q := range p.Params {
		if q.Code == 0 || q.Code > 20 {
			continue
		}
		if len(q.Value) < 16 {
			return nil, fmt.Errorf("log page 0x10: self-test result %d has %d bytes, want 16", q.Code, len(q.Value))
		}
		if allZero(q.Value[:16]) {
			continue
		}
		v := q.Value
		out = append(out, SelfTestResult{
			Number:       q.Code,
			Code:         v[0] >> 5,
			Result:       v[0] & 0x0F,
			Segment:      v[1],
			PowerOnHours: binary.BigEndian.Uint16(v[2:]),
			FirstFailure: binary.BigEndian.Uint64(v[4:]),
			SenseKey:     v[12] & 0x0F,
			ASC:          v[13],
			ASCQ:         v[14],
		})
	}
	return out, nil
}

// UnresolvedSelfTestFailure returns the most recent failed self-test unless
// a later extended test passed, which re-verified the whole medium.
func UnresolvedSelfTestFailure(results []SelfTestResult) (SelfTestResult, bool) {
	// Parameter code 1 is the most recent test, whatever order the page
	// listed the parameters in.
	ordered := slices.SortedFunc(slices.Values(results), func(a, b SelfTestResult) int {
		return cmp.Compare(a.Number, b.Number)
	})
	for _, r := range ordered {
		if r.Failed() {
			return r, true
		}
		if r.Extended() && r.Result == 0 {
			return SelfTestResult{}, false
		}
	}
	return SelfTestResult{}, false
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

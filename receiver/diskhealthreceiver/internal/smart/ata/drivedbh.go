package ata

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDriveDBSize bounds a drive database file: smartmontools' drivedb.h is
// about 300 KiB and has grown by ~15 KiB a year.
const MaxDriveDBSize = 8 << 20

// maxDriveDBEntries bounds the entries of one file (drivedb.h has ~1 000).
const maxDriveDBEntries = 50_000

// maxAttrName bounds an attribute name: it becomes an attribute value on
// every SMART point. smartctl's own limit is 23 characters ("-P showall"
// complains past it); a little room is left for local files.
const maxAttrName = 32

// legacyPresets are the old "-v" arguments smartctl still accepts (its
// "-v help" lists them) and drivedb.h still uses, spelt out as the
// ID,FORMAT[,NAME] they stand for.
var legacyPresets = map[string]string{
	"9,halfminutes":               "9,halfmin2hour,Power_On_Half_Minutes",
	"9,minutes":                   "9,min2hour,Power_On_Minutes",
	"9,seconds":                   "9,sec2hour,Power_On_Seconds",
	"9,temp":                      "9,tempminmax,Temperature_Celsius",
	"192,emergencyretractcyclect": "192,raw48,Emerg_Retract_Cycle_Ct",
	"193,loadunload":              "193,raw24/raw24",
	"194,10xCelsius":              "194,temp10x,Temperature_Celsius_x10",
	"194,unknown":                 "194,raw48,Unknown_Attribute",
	"197,increasing":              "197,raw48+,Total_Pending_Sectors",
	"198,offlinescanuncsectorct":  "198,raw48,Offline_Scan_UNC_SectCt",
	"198,increasing":              "198,raw48+,Total_Offl_Uncorrectabl",
	"200,writeerrorcount":         "200,raw48,Write_Error_Count",
	"201,detectedtacount":         "201,raw48,Detected_TA_Count",
	"220,temp":                    "220,tempminmax,Temperature_Celsius",
}

// ParseDriveDB reads a drive database in smartmontools' drivedb.h syntax, the
// file update-smart-drivedb maintains and smartctl -B reads: C comments and a
// list of { "family", "model regexp", "firmware regexp", "warning",
// "presets" } entries, adjacent string literals joined. The "VERSION:" entry
// gives Version, the "DEFAULT" entry the default attribute definitions; USB
// bridge entries and entries whose family starts with "$" (smartctl skips
// those) are left out. Of the presets, "-v" attribute definitions are taken
// and "-F" firmware-bug options are checked and ignored (no command this
// receiver sends depends on them).
//
// Anything else is an error naming its line: a database smartctl would
// refuse, or one whose expressions Go cannot compile, is never half used.
// A file without a DEFAULT entry has no defaults: it is an additions file
// (see DriveDB.WithAdditions, Complete).
func ParseDriveDB(b []byte) (*DriveDB, error) {
	if len(b) > MaxDriveDBSize {
		return nil, fmt.Errorf("drive database is %d bytes, more than %d", len(b), MaxDriveDBSize)
	}
	if !utf8.Valid(b) {
		return nil, errors.New("drive database is not valid UTF-8")
	}
	l := &lexer{b: b, line: 1}
	var (
		version  string
		defaults map[uint8]AttrDef
		entries  []dbEntry
		lines    []int
	)
	for {
		t, err := l.next()
		if err != nil {
			return nil, err
		}
		if t.kind == tokEOF {
			break
		}
		if t.kind != '{' {
			return nil, l.errorf(t.line, "want '{' to start an entry, got %s", t)
		}
		fields, err := l.entry()
		if err != nil {
			return nil, err
		}
		family, presets := fields[0], fields[4]
		switch {
		case strings.HasPrefix(family, "VERSION:"):
			version = printable(strings.TrimSpace(strings.TrimPrefix(family, "VERSION:")), 128)
		case family == "DEFAULT":
			if defaults, err = parsePresets(presets); err != nil {
				return nil, l.errorf(t.line, "DEFAULT entry: %w", err)
			}
		case strings.HasPrefix(family, "USB:"), strings.HasPrefix(family, "$"):
		default:
			if fields[1] == "" {
				return nil, l.errorf(t.line, "entry %q: empty model expression", family)
			}
			if len(entries) == maxDriveDBEntries {
				return nil, l.errorf(t.line, "more than %d entries", maxDriveDBEntries)
			}
			defs, err := parsePresets(presets)
			if err != nil {
				return nil, l.errorf(t.line, "entry %q: %w", family, err)
			}
			entries = append(entries, dbEntry{family: family, model: fields[1], firmware: fields[2], defs: defs})
			lines = append(lines, t.line)
		}
		t, err = l.next()
		if err != nil {
			return nil, err
		}
		switch t.kind {
		case ',':
		case tokEOF:
			return newDriveDB(version, defaults, entries, lines)
		default:
			return nil, l.errorf(t.line, "want ',' after an entry, got %s", t)
		}
	}
	return newDriveDB(version, defaults, entries, lines)
}

// Complete reports whether the database has default attribute definitions,
// so it can replace the built-in one (an additions file has none).
func (db *DriveDB) Complete() bool { return db.or().defaults != nil }

// parsePresets reads an entry's options string.
func parsePresets(s string) (map[uint8]AttrDef, error) {
	f := strings.Fields(s)
	var defs map[uint8]AttrDef
	for i := 0; i < len(f); i += 2 {
		if i+1 == len(f) {
			return nil, fmt.Errorf("option %s without a value", f[i])
		}
		switch opt, arg := f[i], f[i+1]; opt {
		case "-v":
			id, d, err := parseAttrPreset(arg)
			if err != nil {
				return nil, err
			}
			if defs == nil {
				defs = map[uint8]AttrDef{}
			}
			defs[id] = d
		case "-F":
			switch arg {
			case "none", "nologdir", "samsung", "samsung2", "samsung3", "xerrorlba", "swapid":
			default:
				return nil, fmt.Errorf("unknown firmware bug option -F %s", arg)
			}
		default:
			return nil, fmt.Errorf("unknown option %s", opt)
		}
	}
	return defs, nil
}

// parseAttrPreset reads one "-v ID,FORMAT[:BYTEORDER][,NAME[,HDD|SSD]]".
func parseAttrPreset(arg string) (uint8, AttrDef, error) {
	if full, ok := legacyPresets[arg]; ok {
		arg = full
	}
	parts := strings.Split(arg, ",")
	if len(parts) < 2 || len(parts) > 4 {
		return 0, AttrDef{}, fmt.Errorf("-v %s: want ID,FORMAT[:BYTEORDER][,NAME[,HDD|SSD]]", arg)
	}
	n, err := strconv.ParseUint(parts[0], 10, 8)
	if err != nil || n == 0 {
		// smartctl's "N" (every attribute) is a command-line convenience no drivedb entry uses.
		return 0, AttrDef{}, fmt.Errorf("-v %s: attribute ID must be 1 to 255", arg)
	}
	var d AttrDef
	name, order, _ := strings.Cut(parts[1], ":")
	// "+" marks a raw value smartctl expects to only increase; it does not change the decoding.
	if d.Format, err = ParseFormat(strings.TrimSuffix(name, "+")); err != nil {
		return 0, AttrDef{}, fmt.Errorf("-v %s: %w", arg, err)
	}
	if strings.Contains(parts[1], ":") && !validByteOrder(order) {
		return 0, AttrDef{}, fmt.Errorf("-v %s: byte order %q is not 1 to 8 of 012345rvwz", arg, order)
	}
	d.ByteOrder = order
	if len(parts) > 2 {
		if d.Name = parts[2]; !validAttrName(d.Name) {
			return 0, AttrDef{}, fmt.Errorf("-v %s: name must be 1 to %d printable ASCII characters", arg, maxAttrName)
		}
	}
	if len(parts) > 3 {
		switch parts[3] {
		case "HDD":
			d.only = hddOnly
		case "SSD":
			d.only = ssdOnly
		default:
			return 0, AttrDef{}, fmt.Errorf("-v %s: flag %q is neither HDD nor SSD", arg, parts[3])
		}
	}
	return uint8(n), d, nil
}

func validAttrName(s string) bool {
	if s == "" || len(s) > maxAttrName {
		return false
	}
	for i := range len(s) {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// printable keeps s's printable ASCII, at most n bytes: the version goes to
// the log as is.
func printable(s string, n int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() == n {
			break
		}
		if r >= ' ' && r <= '~' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// The lexer knows the part of C that drivedb.h uses, as smartctl's own reader
// does: whitespace, comments, braces, commas and string literals.
type lexer struct {
	b    []byte
	i    int
	line int
}

const (
	tokEOF    = 0
	tokString = '"'
)

type token struct {
	kind byte // '{', '}', ',', tokString or tokEOF
	s    string
	line int
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of file"
	case tokString:
		return "a string"
	}
	return strconv.QuoteRune(rune(t.kind))
}

func (l *lexer) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("line %d: %w", line, fmt.Errorf(format, args...))
}

// skip passes whitespace and comments.
func (l *lexer) skip() error {
	for l.i < len(l.b) {
		switch c := l.b[l.i]; {
		case c == '\n':
			l.line++
			l.i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			l.i++
		case c == '/' && l.i+1 < len(l.b) && l.b[l.i+1] == '/':
			for l.i < len(l.b) && l.b[l.i] != '\n' {
				l.i++
			}
		case c == '/' && l.i+1 < len(l.b) && l.b[l.i+1] == '*':
			start := l.line
			l.i += 2
			for {
				if l.i+1 >= len(l.b) {
					return l.errorf(start, "comment not closed")
				}
				if l.b[l.i] == '*' && l.b[l.i+1] == '/' {
					l.i += 2
					break
				}
				if l.b[l.i] == '\n' {
					l.line++
				}
				l.i++
			}
		default:
			return nil
		}
	}
	return nil
}

// next returns the next token; adjacent string literals are one string.
func (l *lexer) next() (token, error) {
	if err := l.skip(); err != nil {
		return token{}, err
	}
	t := token{line: l.line}
	if l.i == len(l.b) {
		return t, nil
	}
	switch c := l.b[l.i]; c {
	case '{', '}', ',':
		l.i++
		t.kind = c
		return t, nil
	case '"':
		t.kind = tokString
		var b strings.Builder
		for l.i < len(l.b) && l.b[l.i] == '"' {
			if err := l.literal(&b); err != nil {
				return t, err
			}
			if err := l.skip(); err != nil {
				return t, err
			}
		}
		t.s = b.String()
		return t, nil
	default:
		return t, l.errorf(l.line, "unexpected %q", rune(c))
	}
}

// literal appends one string literal's value. A backslash takes the next
// character literally (drivedb.h escapes only \ and " — regular expressions
// write "\\." for a literal dot); a backslash before a newline continues the
// line, as in C.
func (l *lexer) literal(b *strings.Builder) error {
	start := l.line
	l.i++ // opening quote
	for l.i < len(l.b) {
		c := l.b[l.i]
		switch c {
		case '"':
			l.i++
			return nil
		case '\n':
			return l.errorf(start, "string not closed on its line")
		case '\\':
			if l.i+1 == len(l.b) {
				return l.errorf(start, "string not closed")
			}
			l.i++
			if l.b[l.i] == '\n' {
				l.line++
				l.i++
				continue
			}
			c = l.b[l.i]
		}
		b.WriteByte(c)
		l.i++
	}
	return l.errorf(start, "string not closed")
}

// entry reads the rest of an entry after its '{': five strings, separated
// by commas, an optional trailing comma, and '}'.
func (l *lexer) entry() ([5]string, error) {
	var f [5]string
	for i := range f {
		t, err := l.next()
		if err != nil {
			return f, err
		}
		if t.kind != tokString {
			return f, l.errorf(t.line, "entry field %d: want a string, got %s", i+1, t)
		}
		f[i] = t.s
		if t, err = l.next(); err != nil {
			return f, err
		}
		switch {
		case t.kind == ',' && i < 4:
		case t.kind == '}' && i == 4:
			return f, nil
		case t.kind == ',' && i == 4:
			if t, err = l.next(); err != nil {
				return f, err
			}
			if t.kind != '}' {
				return f, l.errorf(t.line, "want '}' to close the entry, got %s", t)
			}
			return f, nil
		default:
			return f, l.errorf(t.line, "entry field %d: want ',' or '}', got %s", i+1, t)
		}
	}
	return f, nil
}

package mdraid

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// MdstatArray is one array's entry in /proc/mdstat.
type MdstatArray struct {
	Name string
	// Active is false for "inactive" arrays (assembled but not started).
	Active bool
	// ReadOnly is "read-only", "auto-read-only" or "".
	ReadOnly string `json:",omitempty"`
	Level    string // personality: raid1, raid5, ... ("" when inactive)
	Members  []MdstatMember
	// Blocks is the size in KiB blocks.
	Blocks uint64
	// RaidDisks and Working come from "[n/m]"; Status is "[UU_]" without
	// brackets ('U' up, '_' missing).
	RaidDisks, Working int
	Status             string `json:",omitempty"`
	// Action is the progress line's verb: resync (also used for repair),
	// recovery, check, reshape; "" when none runs.
	Action string `json:",omitempty"`
	// Delayed/Pending: "resync=DELAYED", "resync=PENDING".
	Delayed, Pending bool `json:",omitempty"`
	// Ratio is the progress line's percentage / 100; DoneBlocks and
	// TotalBlocks are the "(done/total)" numbers in KiB.
	Ratio                   float64 `json:",omitempty"`
	DoneBlocks, TotalBlocks uint64  `json:",omitempty"`
	// Finish is "finish=N.Nmin", SpeedBytes "speed=NK/sec" in bytes/s.
	Finish     time.Duration `json:",omitempty"`
	SpeedBytes uint64        `json:",omitempty"`
}

// MdstatMember is one "sdb1[1](F)" token.
type MdstatMember struct {
	Name string
	// Number is the bracketed descriptor number (not the slot).
	Number int
	// Flags are the parenthesised letters: F faulty, S spare, W
	// write-mostly, R replacement, J journal.
	Flags string `json:",omitempty"`
}

// maxMdstatLine bounds one line; the kernel's lines are short.
const maxMdstatLine = 64 << 10

// ParseMdstat parses /proc/mdstat. Lines it does not understand (bitmap,
// personalities, unused devices) are skipped; a malformed array header is
// an error that names the line, and the arrays parsed so far are returned.
func ParseMdstat(r io.Reader) ([]MdstatArray, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxMdstatLine)
	var out []MdstatArray
	var cur *MdstatArray
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if line == "" {
			cur = nil
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			name, rest, ok := strings.Cut(line, " : ")
			if !ok || strings.HasPrefix(line, "Personalities") || strings.HasPrefix(line, "unused devices") {
				cur = nil
				continue
			}
			a, err := parseMdstatHeader(strings.TrimSpace(name), rest)
			if err != nil {
				return out, fmt.Errorf("mdstat line %d: %w", lineNo, err)
			}
			out = append(out, a)
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			continue
		}
		if err := cur.parseDetail(strings.TrimSpace(line)); err != nil {
			return out, fmt.Errorf("mdstat line %d: %w", lineNo, err)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("mdstat: %w", err)
	}
	return out, nil
}

func parseMdstatHeader(name, rest string) (MdstatArray, error) {
	a := MdstatArray{Name: name}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return a, fmt.Errorf("array %s: empty state", name)
	}
	switch f[0] {
	case "active":
		a.Active = true
	case "inactive":
	default:
		return a, fmt.Errorf("array %s: state %q, want active or inactive", name, f[0])
	}
	f = f[1:]
	if len(f) > 0 && strings.HasPrefix(f[0], "(") {
		a.ReadOnly = strings.Trim(f[0], "()")
		f = f[1:]
	}
	if a.Active && len(f) > 0 && !strings.Contains(f[0], "[") {
		a.Level = f[0]
		f = f[1:]
	}
	for _, tok := range f {
		m, err := parseMdstatMember(tok)
		if err != nil {
			return a, fmt.Errorf("array %s: %w", name, err)
		}
		a.Members = append(a.Members, m)
	}
	return a, nil
}

func parseMdstatMember(tok string) (MdstatMember, error) {
	open := strings.LastIndexByte(tok, '[')
	closeIdx := strings.IndexByte(tok[max(open, 0):], ']') + max(open, 0)
	if open <= 0 || closeIdx <= open {
		return MdstatMember{}, fmt.Errorf("member %q: want name[number]", tok)
	}
	n, err := strconv.Atoi(tok[open+1 : closeIdx])
	if err != nil || n < 0 {
		return MdstatMember{}, fmt.Errorf("member %q: bad number", tok)
	}
	m := MdstatMember{Name: tok[:open], Number: n}
	for rest := tok[closeIdx+1:]; rest != ""; {
		if len(rest) < 3 || rest[0] != '(' || rest[2] != ')' {
			return MdstatMember{}, fmt.Errorf("member %q: bad flags %q", tok, rest)
		}
		m.Flags += rest[1:2]
		rest = rest[3:]
	}
	return m, nil
}

// parseDetail reads the indented lines: the size/status line and the
// progress line.
func (a *MdstatArray) parseDetail(line string) error {
	f := strings.Fields(line)
	if len(f) >= 2 && f[1] == "blocks" {
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return fmt.Errorf("array %s: blocks %q", a.Name, f[0])
		}
		a.Blocks = v
		for _, tok := range f[2:] {
			if !strings.HasPrefix(tok, "[") || !strings.HasSuffix(tok, "]") {
				continue
			}
			in := tok[1 : len(tok)-1]
			if n, m, ok := strings.Cut(in, "/"); ok {
				nv, err1 := strconv.Atoi(n)
				mv, err2 := strconv.Atoi(m)
				if err1 != nil || err2 != nil || nv < 0 || mv < 0 {
					return fmt.Errorf("array %s: counts %q", a.Name, tok)
				}
				a.RaidDisks, a.Working = nv, mv
			} else if strings.Trim(in, "U_") == "" {
				a.Status = in
			}
		}
		return nil
	}
	for _, action := range []string{"resync", "recovery", "check", "reshape"} {
		if v, ok := strings.CutPrefix(line, action+"="); ok {
			a.Action = action
			a.Delayed = v == "DELAYED"
			a.Pending = v == "PENDING"
			return nil
		}
	}
	if strings.HasPrefix(line, "[") || progressVerb(f) != "" {
		return a.parseProgress(f)
	}
	return nil
}

func progressVerb(f []string) string {
	if len(f) >= 2 && f[1] == "=" {
		switch f[0] {
		case "resync", "recovery", "check", "reshape":
			return f[0]
		}
	}
	return ""
}

// parseProgress reads "[==>....]  recovery = 12.6% (132480/1048512)
// finish=0.5min speed=26496K/sec".
func (a *MdstatArray) parseProgress(f []string) error {
	if len(f) > 0 && strings.HasPrefix(f[0], "[") {
		f = f[1:]
	}
	verb := progressVerb(f)
	if verb == "" || len(f) < 3 {
		return fmt.Errorf("array %s: progress line %q", a.Name, strings.Join(f, " "))
	}
	a.Action = verb
	pct, err := strconv.ParseFloat(strings.TrimSuffix(f[2], "%"), 64)
	if err != nil || !strings.HasSuffix(f[2], "%") || math.IsNaN(pct) || pct < 0 || pct > 100 {
		return fmt.Errorf("array %s: percentage %q", a.Name, f[2])
	}
	a.Ratio = pct / 100
	for _, tok := range f[3:] {
		switch {
		case strings.HasPrefix(tok, "(") && strings.HasSuffix(tok, ")"):
			d, t, ok := strings.Cut(tok[1:len(tok)-1], "/")
			dv, err1 := strconv.ParseUint(d, 10, 64)
			tv, err2 := strconv.ParseUint(t, 10, 64)
			if !ok || err1 != nil || err2 != nil {
				return fmt.Errorf("array %s: progress %q", a.Name, tok)
			}
			a.DoneBlocks, a.TotalBlocks = dv, tv
		case strings.HasPrefix(tok, "finish=") && strings.HasSuffix(tok, "min"):
			m, err := strconv.ParseFloat(tok[len("finish="):len(tok)-len("min")], 64)
			if err != nil || math.IsNaN(m) || m < 0 || m > 1e9 {
				return fmt.Errorf("array %s: %q", a.Name, tok)
			}
			a.Finish = time.Duration(m * float64(time.Minute)).Round(time.Second)
		case strings.HasPrefix(tok, "speed=") && strings.HasSuffix(tok, "K/sec"):
			k, err := strconv.ParseUint(tok[len("speed="):len(tok)-len("K/sec")], 10, 64)
			if err != nil || k > 1<<53 {
				return fmt.Errorf("array %s: %q", a.Name, tok)
			}
			a.SpeedBytes = k * 1024
		}
	}
	return nil
}

// mdstatAction maps a sysfs sync_action to the word mdstat prints.
func mdstatAction(action string) string {
	switch action {
	case ActionResync, ActionRepair:
		return "resync"
	case ActionRecover:
		return "recovery"
	case ActionCheck, ActionReshape:
		return action
	}
	return ""
}

// CrossCheck compares an array read from sysfs with its /proc/mdstat
// entry and returns one sentence per disagreement; nil when they agree.
// Progress is compared within tolerance (0..1): the two files are read at
// slightly different moments and mdstat rounds to 0.1%.
func CrossCheck(a Array, m MdstatArray, tolerance float64) []string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	if a.Name != m.Name {
		add("name: sysfs %s, mdstat %s", a.Name, m.Name)
	}
	if m.Active && a.Level != m.Level {
		add("level: sysfs %s, mdstat %s", a.Level, m.Level)
	}
	if m.Blocks != 0 && a.SizeBytes != m.Blocks*1024 {
		add("size: sysfs %d bytes, mdstat %d KiB", a.SizeBytes, m.Blocks)
	}
	if m.RaidDisks != 0 {
		if a.RaidDisks != m.RaidDisks {
			add("raid disks: sysfs %d, mdstat %d", a.RaidDisks, m.RaidDisks)
		}
		if a.Degraded >= 0 && a.Degraded != m.RaidDisks-m.Working {
			add("degraded: sysfs %d, mdstat %d of %d working", a.Degraded, m.Working, m.RaidDisks)
		}
	}
	running := a.Sync.Running && a.SyncAction != ActionIdle && a.SyncAction != ActionFrozen
	switch {
	case running && mdstatAction(a.SyncAction) != m.Action:
		add("sync action: sysfs %s, mdstat %q", a.SyncAction, m.Action)
	case !running && m.Action != "" && !m.Delayed && !m.Pending:
		add("sync action: sysfs idle, mdstat %s", m.Action)
	case running && !a.Sync.Delayed && !m.Delayed && !m.Pending && math.Abs(a.Sync.Ratio-m.Ratio) > tolerance:
		add("progress: sysfs %.4f, mdstat %.4f", a.Sync.Ratio, m.Ratio)
	}
	names := map[string]bool{}
	for _, mm := range m.Members {
		names[mm.Name] = true
	}
	for _, mem := range a.Members {
		if !names[mem.Name] {
			add("member %s: in sysfs, not in mdstat", mem.Name)
		}
		delete(names, mem.Name)
	}
	for _, mm := range m.Members {
		if names[mm.Name] {
			add("member %s: in mdstat, not in sysfs", mm.Name)
		}
	}
	return diffs
}

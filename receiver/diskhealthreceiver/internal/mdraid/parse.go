package mdraid

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MemberFlags are the words of a member's dev-*/state attribute.
type MemberFlags uint16

// The member states the kernel writes (drivers/md/md.c, state_show).
const (
	Faulty          MemberFlags = 1 << iota // kicked out of the array after a fault
	InSync                                  // a fully in-sync member
	WriteMostly                             // raid1: read only when no other copy can be
	Blocked                                 // failed but not yet acknowledged by metadata; writes wait
	Spare                                   // working but not a full member; rebuilding if it has a slot
	WriteError                              // a write error has been seen
	WantReplacement                         // asked to be replaced
	Replacement                             // is the replacement of another member
	Journal                                 // raid4/5/6 write journal
	FailFast                                // fails fast instead of retrying
	ExternalBBL                             // bad-block list kept by external metadata
)

var flagNames = []struct {
	flag MemberFlags
	name string
}{
	{Faulty, "faulty"}, {InSync, "in_sync"}, {WriteMostly, "write_mostly"}, {Blocked, "blocked"},
	{Spare, "spare"}, {WriteError, "write_error"}, {WantReplacement, "want_replacement"},
	{Replacement, "replacement"}, {Journal, "journal"}, {FailFast, "failfast"}, {ExternalBBL, "external_bbl"},
}

// Names returns the flags in the kernel's spelling and order.
func (f MemberFlags) Names() []string {
	var out []string
	for _, fn := range flagNames {
		if f&fn.flag != 0 {
			out = append(out, fn.name)
		}
	}
	return out
}

func (f MemberFlags) String() string { return strings.Join(f.Names(), ",") }

// MarshalText writes the flags as String does, for golden files and logs.
func (f MemberFlags) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// ParseMemberState parses dev-*/state: comma-separated words, possibly
// none. Words this package does not know are returned in unknown (newer
// kernels add states), never an error.
func ParseMemberState(b []byte) (flags MemberFlags, unknown []string) {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, nil
	}
next:
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		for _, fn := range flagNames {
			if w == fn.name {
				flags |= fn.flag
				continue next
			}
		}
		unknown = append(unknown, w)
	}
	return flags, unknown
}

// Progress of a resync, recovery, check, repair or reshape, from
// sync_completed ("none", "delayed", or "<done> / <total>" in sectors).
type Progress struct {
	Running      bool   // a sync thread exists: the numbers or Delayed apply
	Delayed      bool   // waiting for another array sharing a disk
	DoneSectors  uint64 // sync_completed's first number
	TotalSectors uint64 // its second
}

// ParseSyncCompleted parses md/sync_completed.
func ParseSyncCompleted(b []byte) (Progress, error) {
	s := strings.TrimSpace(string(b))
	switch s {
	case "none":
		return Progress{}, nil
	case "delayed":
		return Progress{Running: true, Delayed: true}, nil
	}
	done, total, ok := strings.Cut(s, "/")
	if !ok {
		return Progress{}, fmt.Errorf("sync_completed %q: want none, delayed or <done> / <total>", s)
	}
	d, err1 := strconv.ParseUint(strings.TrimSpace(done), 10, 64)
	t, err2 := strconv.ParseUint(strings.TrimSpace(total), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return Progress{}, fmt.Errorf("sync_completed %q: %w", s, err)
	}
	return Progress{Running: true, DoneSectors: d, TotalSectors: t}, nil
}

// ParseRaidDisks parses md/raid_disks: "<n>", or "<n> (<before>)" while a
// reshape changes the member count. An empty file (no level yet) is 0, 0.
func ParseRaidDisks(b []byte) (n, before int, err error) {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, 0, nil
	}
	now, old, reshaping := strings.Cut(s, " ")
	n, err = strconv.Atoi(now)
	if err != nil || n < 0 {
		return 0, 0, fmt.Errorf("raid_disks %q: not a count", s)
	}
	if !reshaping {
		return n, n, nil
	}
	old = strings.TrimSpace(old)
	if !strings.HasPrefix(old, "(") || !strings.HasSuffix(old, ")") {
		return 0, 0, fmt.Errorf("raid_disks %q: want <n> (<before>)", s)
	}
	before, err = strconv.Atoi(old[1 : len(old)-1])
	if err != nil || before < 0 {
		return 0, 0, fmt.Errorf("raid_disks %q: not a count", s)
	}
	return n, before, nil
}

// ParseSyncSpeed parses md/sync_speed ("none" or KiB/s, the kernel's
// 30-second average) into bytes per second.
func ParseSyncSpeed(b []byte) (uint64, error) {
	s := strings.TrimSpace(string(b))
	if s == "none" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > 1<<53 {
		return 0, fmt.Errorf("sync_speed %q: not a KiB/s count", s)
	}
	return v * 1024, nil
}

// ParseSlot parses dev-*/slot: a slot number or "none" (-1).
func ParseSlot(b []byte) (int, error) {
	s := strings.TrimSpace(string(b))
	if s == "none" {
		return -1, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("slot %q: want a number or none", s)
	}
	return v, nil
}

// ParseUUID parses md/uuid (Linux 5.10+): the array's UUID as the kernel
// prints it, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", returned in lower case.
// An all-zero UUID (an array without one) is "".
func ParseUUID(b []byte) (string, error) {
	s := strings.ToLower(strings.TrimSpace(string(b)))
	if len(s) != 36 {
		return "", fmt.Errorf("uuid %q: want 8-4-4-4-12 hex digits", s)
	}
	zero := true
	for i := range len(s) {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return "", fmt.Errorf("uuid %q: want 8-4-4-4-12 hex digits", s)
			}
		case c >= '0' && c <= '9' || c >= 'a' && c <= 'f':
			zero = zero && c == '0'
		default:
			return "", fmt.Errorf("uuid %q: want 8-4-4-4-12 hex digits", s)
		}
	}
	if zero {
		return "", nil
	}
	return s, nil
}

// parseUint parses a decimal attribute; what is the attribute's name.
func parseUint(what string, b []byte) (uint64, error) {
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q: not a number", what, s)
	}
	return v, nil
}

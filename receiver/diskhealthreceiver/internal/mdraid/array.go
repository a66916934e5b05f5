package mdraid

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// Sync actions (md/sync_action). A running check finds mismatches and
// counts them; a repair rewrites them; resync follows an unclean shutdown;
// recover rebuilds onto a spare; reshape changes level, layout or count.
const (
	ActionIdle    = "idle"
	ActionResync  = "resync"
	ActionRecover = "recover"
	ActionCheck   = "check"
	ActionRepair  = "repair"
	ActionReshape = "reshape"
	ActionFrozen  = "frozen"
)

// Array is one md array as sysfs shows it.
type Array struct {
	Name string // kernel name: md0, md127
	// UUID is md/uuid (Linux 5.10+): the array's own UUID from its
	// metadata, the same across reboots and renames (md127 one boot, md0
	// the next); "" when the kernel has no such attribute or the array no
	// UUID.
	UUID  string `json:",omitempty"`
	Level string // md/level: raid0, raid1, raid4, raid5, raid6, raid10, linear, container, ""
	// State is md/array_state: clear, inactive, suspended, readonly,
	// read-auto, clean, active, write-pending, active-idle, broken.
	State string
	// SizeBytes is the array's usable size (the block device's size).
	SizeBytes uint64
	// ComponentBytes is the space used on each member (md/component_size).
	ComponentBytes uint64
	// ChunkBytes is md/chunk_size (striped levels); 0 otherwise.
	ChunkBytes uint64
	// RaidDisks is md/raid_disks: the number of member slots. During a
	// reshape that changes it, RaidDisksBefore is the count being left.
	RaidDisks, RaidDisksBefore int
	// Degraded is md/degraded: slots without a working in-sync member. It
	// is -1 for levels without redundancy, which have no such attribute.
	Degraded int
	// SyncAction is md/sync_action ("" when the level has none).
	SyncAction string
	Sync       Sync
	// MismatchSectors is md/mismatch_cnt: sectors found inconsistent by
	// the last check or repair (or rewritten by the last resync/repair).
	MismatchSectors uint64
	// Layout is md/layout (raid5/6/10 layout number; -1 when absent).
	Layout int64
	// Members are the dev-* entries, sorted by Slot then name; spares and
	// faulty members not yet removed included.
	Members []Member
}

// Sync is the progress of the running sync action.
type Sync struct {
	Progress
	// Ratio is DoneSectors/TotalSectors, 0..1; meaningful while Running
	// and not Delayed.
	Ratio float64
	// SpeedBytes is md/sync_speed in bytes per second (0 when none).
	SpeedBytes uint64
	// ETA is the remaining sectors at SpeedBytes; 0 when unknown
	// (not running, delayed, or no speed yet).
	ETA time.Duration
}

// Member is one component device of an array (md/dev-*).
type Member struct {
	// Dir is the sysfs directory, "dev-sda1".
	Dir string
	// Name is the member's kernel block device name (from dev-*/block);
	// blockdev gives its physical disk and hw.id.
	Name string
	// Slot is the member's role in the array, -1 for none (spare or faulty).
	Slot  int
	Flags MemberFlags
	// UnknownFlags are state words this package does not know.
	UnknownFlags []string `json:",omitempty"`
	// CorrectedReadErrors is dev-*/errors: read errors the array
	// corrected from redundancy without kicking the member out.
	CorrectedReadErrors uint64
}

// Rebuilding reports whether the member is a spare being recovered onto:
// it already has a slot but is not in sync yet.
func (m Member) Rebuilding() bool { return m.Flags&Spare != 0 && m.Slot >= 0 }

// Redundancy is the number of members the array can lose and still serve
// all data: raid1 n-1, raid4/5 1, raid6 2, raid10 copies-1 (at least; some
// losses of more are survivable), 0 for raid0, linear and anything else.
func (a Array) Redundancy() int {
	switch a.Level {
	case "raid1":
		return max(a.RaidDisks-1, 0)
	case "raid4", "raid5":
		return 1
	case "raid6":
		return 2
	case "raid10":
		if a.Layout < 0 {
			return 1
		}
		near, far := a.Layout&0xFF, a.Layout>>8&0xFF
		if near*far <= 1 {
			return 0
		}
		return int(near*far - 1)
	}
	return 0
}

// reader reads one array's attributes and collects the errors.
type reader struct {
	sys  fs.FS
	dir  string // block/<name>/md
	errs []error
}

func (r *reader) read(rel string) ([]byte, bool) {
	p := path.Join(r.dir, rel)
	b, err := fs.ReadFile(r.sys, p)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			r.errs = append(r.errs, err)
		}
		return nil, false
	}
	return b, true
}

func (r *reader) fail(rel string, err error) {
	r.errs = append(r.errs, fmt.Errorf("%s: %w", path.Join(r.dir, rel), err))
}

func (r *reader) uint(rel string) (uint64, bool) {
	b, ok := r.read(rel)
	if !ok {
		return 0, false
	}
	v, err := parseUint(path.Base(rel), b)
	if err != nil {
		r.fail(rel, err)
		return 0, false
	}
	return v, true
}

// ValidName reports whether name can be an md array's kernel name.
func ValidName(name string) bool {
	return strings.HasPrefix(name, "md") && fs.ValidPath(name) && !strings.Contains(name, "/")
}

// ListArrays returns the names of the md arrays under sys/block, sorted.
func ListArrays(sys fs.FS) ([]string, error) {
	des, err := fs.ReadDir(sys, "block")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, de := range des {
		name := de.Name()
		if !ValidName(name) {
			continue
		}
		if st, err := fs.Stat(sys, "block/"+name+"/md"); err == nil && st.IsDir() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// ReadArray reads one array. Attributes a level does not have are left at
// their zero values (Degraded -1); an attribute that exists but cannot be
// read or parsed is reported in the joined error while everything else is
// still filled.
func ReadArray(sys fs.FS, name string) (Array, error) {
	if !ValidName(name) {
		return Array{Name: name}, fmt.Errorf("%q is not an md array name", name)
	}
	a := Array{Name: name, Degraded: -1, Layout: -1}
	r := &reader{sys: sys, dir: "block/" + name + "/md"}
	if _, err := fs.Stat(sys, r.dir); err != nil {
		return a, err
	}
	if b, ok := r.read("level"); ok {
		a.Level = strings.TrimSpace(string(b))
	}
	if b, ok := r.read("uuid"); ok {
		if u, err := ParseUUID(b); err != nil {
			r.fail("uuid", err)
		} else {
			a.UUID = u
		}
	}
	if b, ok := r.read("array_state"); ok {
		a.State = strings.TrimSpace(string(b))
	}
	if b, ok := r.read("raid_disks"); ok {
		n, before, err := ParseRaidDisks(b)
		if err != nil {
			r.fail("raid_disks", err)
		}
		a.RaidDisks, a.RaidDisksBefore = n, before
	}
	if v, ok := r.uint("../size"); ok {
		a.SizeBytes = v * 512
	}
	if v, ok := r.uint("component_size"); ok {
		a.ComponentBytes = v * 1024
	}
	if v, ok := r.uint("chunk_size"); ok {
		a.ChunkBytes = v
	}
	if b, ok := r.read("layout"); ok {
		if v, err := parseUint("layout", b); err == nil && v <= 1<<62 {
			a.Layout = int64(v)
		}
	}
	if v, ok := r.uint("degraded"); ok {
		a.Degraded = int(min(v, 1<<30))
	}
	if b, ok := r.read("sync_action"); ok {
		a.SyncAction = strings.TrimSpace(string(b))
	}
	if b, ok := r.read("sync_completed"); ok {
		p, err := ParseSyncCompleted(b)
		if err != nil {
			r.fail("sync_completed", err)
		}
		a.Sync.Progress = p
	}
	if b, ok := r.read("sync_speed"); ok {
		v, err := ParseSyncSpeed(b)
		if err != nil {
			r.fail("sync_speed", err)
		}
		a.Sync.SpeedBytes = v
	}
	a.Sync.fill()
	if v, ok := r.uint("mismatch_cnt"); ok {
		a.MismatchSectors = v
	}
	a.Members = r.members()
	return a, errors.Join(r.errs...)
}

// fill computes Ratio and ETA from the raw numbers.
func (s *Sync) fill() {
	if !s.Running || s.Delayed || s.TotalSectors == 0 {
		return
	}
	done := min(s.DoneSectors, s.TotalSectors)
	s.Ratio = float64(done) / float64(s.TotalSectors)
	if s.SpeedBytes > 0 {
		secs := float64(s.TotalSectors-done) * 512 / float64(s.SpeedBytes)
		s.ETA = time.Duration(min(secs, float64(1<<62)/float64(time.Second)) * float64(time.Second)).Round(time.Second)
	}
}

func (r *reader) members() []Member {
	des, err := fs.ReadDir(r.sys, r.dir)
	if err != nil {
		r.errs = append(r.errs, err)
		return nil
	}
	var ms []Member
	for _, de := range des {
		dir := de.Name()
		if !strings.HasPrefix(dir, "dev-") || !de.IsDir() {
			continue
		}
		m := Member{Dir: dir, Name: strings.TrimPrefix(dir, "dev-"), Slot: -1}
		if target, err := fs.ReadLink(r.sys, path.Join(r.dir, dir, "block")); err == nil {
			if base := path.Base(target); base != "." && base != "/" && base != ".." {
				m.Name = base
			}
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrInvalid) {
			// ErrInvalid: not a symlink, or an fs.FS without ReadLink.
			r.errs = append(r.errs, err)
		}
		if b, ok := r.read(dir + "/state"); ok {
			m.Flags, m.UnknownFlags = ParseMemberState(b)
		}
		if b, ok := r.read(dir + "/slot"); ok {
			slot, err := ParseSlot(b)
			if err != nil {
				r.fail(dir+"/slot", err)
			} else {
				m.Slot = slot
			}
		}
		if v, ok := r.uint(dir + "/errors"); ok {
			m.CorrectedReadErrors = v
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b Member) int {
		if a.Slot != b.Slot {
			// Slotted members first, in slot order; then the rest by name.
			switch {
			case a.Slot < 0:
				return 1
			case b.Slot < 0:
				return -1
			}
			return a.Slot - b.Slot
		}
		return strings.Compare(a.Name, b.Name)
	})
	return ms
}

package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// View says whose mount namespace a mountinfo file describes.
type View uint8

const (
	// ViewInit is <root_path>/proc/1/mountinfo: the host init's namespace.
	// Mount points are host paths.
	ViewInit View = iota
	// ViewSelf is <root_path>/proc/self/mountinfo, the fallback when init's
	// file cannot be read (hidepid). "self" resolves to the collector in
	// the pid namespace of that procfs, so in a container this is the
	// container's own namespace: the host's mounts appear below root_path
	// (the host's /boot as /hostfs/boot) next to the container's own
	// (its overlay /, /proc, /etc/hosts, ...).
	ViewSelf
)

func (v View) String() string {
	if v == ViewSelf {
		return "self"
	}
	return "init"
}

// Translate applies root_path to mounts read from a view, in place, and
// returns the mounts to keep. With no root_path (empty or "/") nothing
// changes: Path is the mount point.
//
// ViewInit: MountPoint stays the host path and Path is root_path+MountPoint,
// unless the mount point already starts with root_path, which is then used
// as is. That is hostmetrics' translateMountpoint, so users moving from it
// get the same statfs paths.
//
// ViewSelf: only mounts at or below root_path are host mounts; Path is the
// mount point as read and MountPoint is it with root_path removed, so both
// views report the same host paths and the same filters apply to both.
// The container's own mounts (outside root_path) are dropped, and ReadOnly
// keeps only the superblock's state, because the mount flag read here is
// that of the container's bind (read-only in the usual -v /:/hostfs:ro),
// not the host's. Here we
// differ from hostmetrics on purpose: it would report "/hostfs/boot" as the
// mount point, and statfs "/hostfs/etc/hosts" for the container's
// /etc/hosts, which is some other host filesystem.
func Translate(mounts []Mount, rootPath string, view View) []Mount {
	if rootPath == "" {
		return mounts
	}
	root := filepath.Clean(rootPath)
	if root == "/" {
		return mounts
	}
	if view == ViewSelf {
		kept := mounts[:0]
		for _, m := range mounts {
			if !hasPathPrefix(m.MountPoint, root) {
				continue
			}
			m.Path = m.MountPoint
			m.MountPoint = m.MountPoint[len(root):]
			m.ReadOnly = m.SuperRO
			if m.MountPoint == "" {
				m.MountPoint = "/"
			}
			kept = append(kept, m)
		}
		return kept
	}
	// One allocation for all the joined paths.
	n := 0
	for i := range mounts {
		n += len(root) + len(mounts[i].MountPoint)
	}
	buf := make([]byte, 0, n)
	type span struct{ a, b int }
	spans := make([]span, len(mounts))
	for i := range mounts {
		mp := mounts[i].MountPoint
		if hasPathPrefix(mp, root) {
			spans[i] = span{-1, -1}
			continue
		}
		a := len(buf)
		buf = append(buf, root...)
		if mp != "/" {
			buf = append(buf, mp...)
		}
		spans[i] = span{a, len(buf)}
	}
	s := string(buf)
	for i := range mounts {
		if spans[i].a >= 0 {
			mounts[i].Path = s[spans[i].a:spans[i].b]
		}
	}
	return mounts
}

// hasPathPrefix reports whether p is dir or below it (dir is clean, not "/").
func hasPathPrefix(p, dir string) bool {
	return strings.HasPrefix(p, dir) && (len(p) == len(dir) || p[len(dir)] == '/')
}

// DropShadowed removes mounts hidden under a later mount at the same mount
// point (a statfs of the path sees only the top one), in place. The kernel
// makes the covering mount a child of the covered one, so within a group
// of mounts sharing a mount point the top is the one that is no other
// member's parent; if the IDs do not tell, the last in the file wins,
// as in df.
func DropShadowed(mounts []Mount) []Mount {
	var groups map[string][]int
	first := make(map[string]int, len(mounts))
	for i := range mounts {
		mp := mounts[i].MountPoint
		j, dup := first[mp]
		if !dup {
			first[mp] = i
			continue
		}
		if groups == nil {
			groups = make(map[string][]int)
		}
		if groups[mp] == nil {
			groups[mp] = []int{j}
		}
		groups[mp] = append(groups[mp], i)
	}
	if groups == nil {
		return mounts
	}
	drop := make(map[int]bool)
	for _, idx := range groups {
		// How many members name each ID as their parent: one pass, so a mount point with thousands of
		// mounts stacked on it costs thousands of steps, not their square.
		parents := make(map[int]int, len(idx))
		for _, k := range idx {
			parents[mounts[k].ParentID]++
		}
		top := -1
		for _, i := range idx {
			children := parents[mounts[i].ID]
			if mounts[i].ParentID == mounts[i].ID {
				children-- // its own parent (a broken line) does not cover it
			}
			if children == 0 {
				top = i // later uncovered members win
			}
		}
		if top < 0 {
			top = idx[len(idx)-1]
		}
		for _, i := range idx {
			if i != top {
				drop[i] = true
			}
		}
	}
	kept := mounts[:0]
	for i := range mounts {
		if !drop[i] {
			kept = append(kept, mounts[i])
		}
	}
	return kept
}

// DedupeMode chooses which mounts of the same filesystem are reported.
type DedupeMode uint8

const (
	// DedupeDrop (default) reports each (major:minor, root) once and drops
	// bind mounts of a directory inside a mount already reported (same
	// device, root below the other's root), because statfs gives the same
	// numbers for all of them. btrfs subvolumes are not binds: / and /home
	// on subvolumes @ and @home are both reported.
	DedupeDrop DedupeMode = iota
	// DedupeKeepBinds reports each (major:minor, root) once; bind mounts of
	// subdirectories stay.
	DedupeKeepBinds
	// DedupeKeep keeps every mount (shadowed ones are still dropped).
	DedupeKeep
)

type rootKey struct {
	major, minor uint32
	root         string
}

// Dedupe removes duplicate mounts in place, keeping mountinfo order. Of a
// group, the mount with the shortest mount point is kept (then the
// lexicographically smallest), whatever the order of the lines.
func Dedupe(mounts []Mount, mode DedupeMode) []Mount {
	if mode == DedupeKeep {
		return mounts
	}
	best := make(map[rootKey]int, len(mounts))
	for i := range mounts {
		k := rootKey{mounts[i].Major, mounts[i].Minor, mounts[i].Root}
		j, ok := best[k]
		if !ok || shorter(mounts[i].MountPoint, mounts[j].MountPoint) {
			best[k] = i
		}
	}
	kept := mounts[:0]
	for i := range mounts {
		m := &mounts[i]
		if best[rootKey{m.Major, m.Minor, m.Root}] != i {
			continue
		}
		if mode == DedupeDrop && !m.subvolume && hasAncestorRoot(best, m) {
			continue
		}
		kept = append(kept, *m)
	}
	return kept
}

func shorter(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// hasAncestorRoot reports whether another mount of the same device shows a
// directory above m.Root.
func hasAncestorRoot(roots map[rootKey]int, m *Mount) bool {
	r := m.Root
	if r == "/" || !strings.HasPrefix(r, "/") {
		return false
	}
	for {
		i := strings.LastIndexByte(r, '/')
		if i <= 0 {
			_, ok := roots[rootKey{m.Major, m.Minor, "/"}]
			return ok
		}
		r = r[:i]
		if _, ok := roots[rootKey{m.Major, m.Minor, r}]; ok {
			return true
		}
	}
}

// SelectOptions configures Select.
type SelectOptions struct {
	RootPath string
	View     View
	Filter   *Filter // nil: DefaultFilterConfig
	Dedupe   DedupeMode
}

var defaultFilter = sync.OnceValue(func() *Filter {
	f, err := NewFilter("filesystem", DefaultFilterConfig())
	if err != nil {
		panic(err) // the defaults are constants; a test covers them
	}
	return f
})

// Select turns a mountinfo file into the mounts to report: parse, drop
// shadowed mounts, translate for root_path, filter, dedupe. Filtering
// comes before dedupe so that excluding one path of a filesystem does not
// lose the filesystem when another path of it is still wanted. The error
// is a *parseerr.Lines for bad lines; the good ones are still returned.
func Select(data []byte, opts SelectOptions) ([]Mount, error) {
	mounts, err := ParseMountInfo(data)
	mounts = DropShadowed(mounts)
	mounts = Translate(mounts, opts.RootPath, opts.View)
	f := opts.Filter
	if f == nil {
		f = defaultFilter()
	}
	kept := mounts[:0]
	for i := range mounts {
		if f.Match(&mounts[i]) {
			kept = append(kept, mounts[i])
		}
	}
	// Clone so the cached table does not pin the array sized for every
	// line of the file.
	return slices.Clone(Dedupe(kept, opts.Dedupe)), err
}

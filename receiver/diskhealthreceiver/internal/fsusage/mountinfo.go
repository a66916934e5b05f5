package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"bytes"
	"errors"
	"strings"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

// Mount is one line of a mountinfo file, reduced to what filesystem usage
// needs. The string fields are unescaped (the kernel writes space, tab,
// newline and backslash as \040 \011 \012 \134). FSType and Source are
// sanitised (sanitize.FSType, sanitize.MountSource: valid UTF-8, escaped,
// capped); MountPoint and Root are raw bytes, as statfs needs them: a mount
// point need not be valid UTF-8, so sanitise it (sanitize.MountPoint) before
// using it as a telemetry attribute.
type Mount struct {
	// ID and ParentID are the kernel's mount IDs (fields 1 and 2). They are
	// only used to find mounts hidden under another mount at the same path.
	ID, ParentID int
	// Major and Minor identify the superblock (st_dev). For block-device
	// filesystems they are the device's numbers, which join these mounts
	// with /proc/diskstats; other filesystems get an anonymous 0:N.
	Major, Minor uint32
	// Root is the directory of the filesystem that this mount shows: "/"
	// for an ordinary mount, a subdirectory for a bind mount, the subvolume
	// path for a btrfs subvolume.
	Root string
	// MountPoint is where the mount is seen on the host (see Translate).
	MountPoint string
	// Path is what to statfs: MountPoint as seen from this process, i.e.
	// under root_path when one is set. ParseMountInfo sets it to the
	// mount point as read; Translate rewrites it.
	Path string
	// FSType is the filesystem type with its subtype, e.g. "ext4",
	// "fuse.sshfs".
	FSType string
	// Source is the mount source: "/dev/sda1", "/dev/mapper/vg-root",
	// "server:/export", "tmpfs", or "none".
	Source string
	// Class is Classify(FSType).
	Class FSClass
	// ReadOnly is true when the mount or its superblock is read-only, or
	// ext4 has switched the filesystem to emergency read-only after errors.
	// In ViewSelf the mount flag is the container's bind of the host
	// filesystem, not the host's, so Translate leaves it out there.
	ReadOnly bool
	// EmergencyRO is the ext4 "emergency_ro" superblock state: the kernel
	// stopped writes after detecting errors or a forced shutdown.
	EmergencyRO bool
	// Shutdown is the ext4 "shutdown" superblock state (EXT4_IOC_SHUTDOWN, or the journal aborted
	// by a forced shutdown): every read and write fails with EIO; the mount flags still say rw.
	Shutdown bool

	// MountRO is the mount's own flag (field 6); SuperRO the superblock's
	// read-only state (ro or emergency_ro). A superblock that went ro under
	// an rw mount was switched by the filesystem itself
	// (errors=remount-ro), not by the administrator.
	MountRO, SuperRO bool
	// ProjectQuota is true when the superblock options show project quotas on (XFS prjquota or
	// pqnoenforce, ext4 prjquota): per-directory usage can be read from them.
	ProjectQuota bool
	// subvolume is true for a btrfs mount whose Root is the mounted
	// subvolume itself, so that dedupe does not mistake it for a bind
	// mount of a directory.
	subvolume bool
}

// MajorMinor returns "major:minor", the form /proc and sysfs use.
func (m *Mount) MajorMinor() string {
	return blockdev.MajorMinor(m.Major, m.Minor)
}

// Mode returns "ro" or "rw", the values of system.filesystem.mode.
func (m *Mount) Mode() string {
	if m.ReadOnly {
		return "ro"
	}
	return "rw"
}

// ReadOnlyAfterErrors reports a filesystem the kernel made read-only
// because of errors: emergency_ro, or a read-only superblock under a
// read-write mount of a filesystem that has recorded errorCount errors.
func (m *Mount) ReadOnlyAfterErrors(errorCount uint64) bool {
	return m.EmergencyRO || (m.SuperRO && !m.MountRO && errorCount > 0)
}

// MountKey identifies one reported mount across scrapes: the state of the
// statfs prober and the forecaster is keyed by it, so a different
// filesystem mounted at the same place starts afresh.
type MountKey struct {
	MountPoint   string
	Major, Minor uint32
	Root         string
}

// Key returns the mount's identity.
func (m *Mount) Key() MountKey {
	return MountKey{MountPoint: m.MountPoint, Major: m.Major, Minor: m.Minor, Root: m.Root}
}

var (
	errNoSeparator  = errors.New(`no "-" separator after the optional fields`)
	errFieldCount   = errors.New("too few fields")
	errMountID      = errors.New("bad mount ID")
	errParentID     = errors.New("bad parent ID")
	errMajorMinor   = errors.New("bad major:minor")
	errMountPoint   = errors.New("mount point is not an absolute path")
	errEmptyRoot    = errors.New("empty root")
	errEmptyFSType  = errors.New("empty filesystem type")
	errSuperOptions = errors.New("missing superblock options")
)

// ParseMountInfo parses the contents of /proc/<pid>/mountinfo (proc(5)):
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//	(1)(2)(3)   (4)   (5)      (6)       (7)   (8) (9)   (10)        (11)
//
// A bad line is skipped and reported in the returned *parseerr.Lines (the
// first parseerr.MaxLines are kept, each quoting the start of its line); it
// never costs the other mounts. Path is set to the mount point as read.
//
// All strings of the result share one backing allocation, so a parse costs
// a handful of allocations whatever the number of lines; the table is kept
// as a whole, so nothing is pinned longer than it would be anyway.
func ParseMountInfo(data []byte) ([]Mount, error) {
	mounts := make([]Mount, 0, bytes.Count(data, []byte{'\n'})+1)
	type spans struct{ root, mp, fstype, source [2]int32 }
	offs := make([]spans, 0, cap(mounts))
	// Unescaped fields are never longer than the input, so one buffer of
	// its size never grows (growing from a guess cost more in tests).
	text := make([]byte, 0, len(data))
	var bad *parseerr.Lines

	lineNo := 0
	for len(data) > 0 {
		lineNo++
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if len(line) == 0 {
			continue
		}
		start := len(text)
		var m Mount
		var sp spans
		var err error
		text, err = parseLine(line, &m, text, &sp.root, &sp.mp, &sp.fstype, &sp.source)
		if err != nil {
			text = text[:start]
			bad = bad.Add(&parseerr.Line{File: "mountinfo", Line: lineNo, Value: parseerr.Clip(line), Err: err})
			continue
		}
		mounts = append(mounts, m)
		offs = append(offs, sp)
	}

	s := string(text)
	for i := range mounts {
		m, o := &mounts[i], &offs[i]
		m.Root = s[o.root[0]:o.root[1]]
		m.MountPoint = s[o.mp[0]:o.mp[1]]
		m.Path = m.MountPoint
		m.FSType = sanitize.String(sanitize.FSType, s[o.fstype[0]:o.fstype[1]])
		m.Source = sanitize.String(sanitize.MountSource, s[o.source[0]:o.source[1]])
		m.Class = Classify(m.FSType)
		m.subvolume = m.subvolume && m.FSType == "btrfs"
	}
	return mounts, bad.Err()
}

// parseLine fills m from one line, appending the unescaped Root, mount
// point, fs type and source to text and recording where each one lies.
func parseLine(line []byte, m *Mount, text []byte, root, mp, fstype, source *[2]int32) ([]byte, error) {
	// Fields are single-space separated and never contain a raw space.
	// Fields 1-6 are positional; then come optional fields up to a lone
	// "-" (optional fields are tag:value or "unbindable", never "-").
	next := func() ([]byte, bool) {
		if line == nil {
			return nil, false
		}
		var f []byte
		if i := bytes.IndexByte(line, ' '); i >= 0 {
			f, line = line[:i], line[i+1:]
		} else {
			f, line = line, nil
		}
		return f, true
	}
	var f [6][]byte
	for i := range f {
		var ok bool
		if f[i], ok = next(); !ok {
			return text, errFieldCount
		}
	}
	for {
		opt, ok := next()
		if !ok {
			return text, errNoSeparator
		}
		if string(opt) == "-" {
			break
		}
	}
	post := line
	var ok bool
	if m.ID, ok = atoi(f[0]); !ok {
		return text, errMountID
	}
	if m.ParentID, ok = atoi(f[1]); !ok {
		return text, errParentID
	}
	colon := bytes.IndexByte(f[2], ':')
	if colon < 0 {
		return text, errMajorMinor
	}
	if m.Major, ok = atou32(f[2][:colon]); !ok {
		return text, errMajorMinor
	}
	if m.Minor, ok = atou32(f[2][colon+1:]); !ok {
		return text, errMajorMinor
	}
	if len(f[3]) == 0 {
		return text, errEmptyRoot
	}
	if len(f[4]) == 0 || f[4][0] != '/' {
		return text, errMountPoint
	}
	// The first mount option is always "ro" or "rw".
	m.MountRO = optionPresent(f[5], "ro")

	// After the separator: type, source (possibly empty), super options.
	i := bytes.IndexByte(post, ' ')
	if i <= 0 {
		if i == 0 {
			return text, errEmptyFSType
		}
		return text, errFieldCount
	}
	fsType, post := post[:i], post[i+1:]
	i = bytes.IndexByte(post, ' ')
	if i < 0 {
		return text, errSuperOptions
	}
	src, super := post[:i], post[i+1:]
	m.EmergencyRO = optionPresent(super, "emergency_ro")
	m.Shutdown = optionPresent(super, "shutdown")
	m.SuperRO = m.EmergencyRO || optionPresent(super, "ro")
	m.ReadOnly = m.MountRO || m.SuperRO
	m.ProjectQuota = optionPresent(super, "prjquota") || optionPresent(super, "pqnoenforce")

	text = appendField(text, f[3], root)
	text = appendField(text, f[4], mp)
	text = appendField(text, fsType, fstype)
	text = appendField(text, src, source)

	if v, ok := optionValue(super, "subvol"); ok {
		// Compare unescaped and without the leading slash, which older
		// kernels omit.
		r := string(text[root[0]:root[1]])
		m.subvolume = strings.TrimPrefix(unescapeString(v), "/") == strings.TrimPrefix(r, "/")
	}
	return text, nil
}

func appendField(text, field []byte, span *[2]int32) []byte {
	span[0] = int32(len(text))
	text = appendUnescaped(text, field)
	span[1] = int32(len(text))
	return text
}

// appendUnescaped decodes the kernel's octal escapes (\ooo). A backslash
// that does not start a valid three-digit escape is kept as is.
func appendUnescaped(dst, s []byte) []byte {
	for {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		s = s[i:]
		if len(s) >= 4 && isOctal(s[1]) && isOctal(s[2]) && isOctal(s[3]) && s[1] <= '3' {
			dst = append(dst, (s[1]-'0')<<6|(s[2]-'0')<<3|(s[3]-'0'))
			s = s[4:]
			continue
		}
		dst = append(dst, '\\')
		s = s[1:]
	}
}

func unescapeString(b []byte) string { return string(appendUnescaped(nil, b)) }

// Unescape decodes a field the kernel escaped with octal escapes (a mount point or source in
// mountinfo or mountstats), as ParseMountInfo does.
func Unescape(b []byte) string { return unescapeString(b) }

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// optionPresent reports whether the comma-separated list has the option
// exactly (so "errors=remount-ro" is not "ro").
func optionPresent(opts []byte, name string) bool {
	for len(opts) > 0 {
		var o []byte
		if i := bytes.IndexByte(opts, ','); i >= 0 {
			o, opts = opts[:i], opts[i+1:]
		} else {
			o, opts = opts, nil
		}
		if string(o) == name {
			return true
		}
	}
	return false
}

// optionValue returns the value of name=value in a comma-separated list.
func optionValue(opts []byte, name string) ([]byte, bool) {
	for len(opts) > 0 {
		var o []byte
		if i := bytes.IndexByte(opts, ','); i >= 0 {
			o, opts = opts[:i], opts[i+1:]
		} else {
			o, opts = opts, nil
		}
		if len(o) > len(name) && o[len(name)] == '=' && string(o[:len(name)]) == name {
			return o[len(name)+1:], true
		}
	}
	return nil, false
}

func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func atou32(b []byte) (uint32, bool) {
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > 1<<32-1 {
		return 0, false
	}
	return uint32(n), true
}

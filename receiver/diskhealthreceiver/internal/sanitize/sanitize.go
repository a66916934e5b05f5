// Package sanitize is the one path every string read from the host takes before it can leave the
// receiver as an attribute value, a resource attribute or a log body: valid UTF-8, no control
// characters, and a length cap per kind. It is applied where a string is read (blockdev identity,
// /proc/diskstats names, mountinfo fields, SMART device identity, cgroup paths), so every source that
// uses the value gets the same clean string.
//
// The rules, in order:
//   - an invalid UTF-8 byte becomes U+FFFD (Protobuf strings must be valid UTF-8: a strict reader
//     rejects the whole batch for one bad string);
//   - a control character (C0, DEL, C1) is escaped as \xNN (\u00NN for C1), so it stays visible in
//     the value but can break no log line or terminal;
//   - a value past the kind's cap in bytes is cut at a rune boundary and ends in "~" and 16 hex digits
//     of a hash (FNV-1a, 64 bits) of the whole value read, so two values that differ only past the cap
//     stay two values: two 300-byte device names sharing their first 64 bytes are two system.device.
//     The caps keep every value the kernel or a device writes whole (a /proc/diskstats name is a
//     gendisk name, at most 31 bytes, and a partition number).
//
// The result is valid, printable-or-escaped UTF-8 of at most Cap(kind) bytes, and String is
// idempotent. A string that is already printable ASCII within the cap is returned as is, without
// allocating. Every altered or cut value is counted per kind (Snapshot); Notes turns the counts into
// one log line per kind, so a cut is said once, not every scrape.
package sanitize // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"

import (
	"sync/atomic"
	"unicode/utf8"
)

// Kind is what a string is; it decides the cap and names the string in notes.
type Kind uint8

// The kinds and their caps in bytes (see docs/hostile-input.md). The caps are far above
// what the kernel or a device writes (a kernel disk name has at most 31 bytes, an ATA model 40, an
// NVMe serial 20, a path at most PATH_MAX = 4096), so a value that reaches one is garbage.
const (
	Model       Kind = iota // hw.model: 128
	Serial                  // hw.serial_number: 256 (a SCSI VPD page 0x80 serial can have 251)
	Firmware                // hw.firmware_version: 64
	WWN                     // disk_health.disk.wwn: 256
	Device                  // kernel device names (system.device, disk_health.disk.parent, hw.name): 64
	DMName                  // disk.dm_name: 128 (the kernel's DM_NAME_LEN)
	MountSource             // a mount's source (system.device of a filesystem): 1024
	MountPoint              // system.filesystem.mountpoint: 4096 (PATH_MAX)
	FSType                  // system.filesystem.type: 64
	CgroupPath              // cgroup.path: 4096
	SystemdUnit             // systemd.unit.name: 256 (systemd's own limit)
	HWID                    // hw.id: 512 (built from capped parts: WWN, or model_serial)
	FSUUID                  // disk_health.filesystem.uuid: 64 (a by-uuid link name; blkid's are at most 36)
	ProjectName             // disk_health.filesystem.project.name: 256 (an /etc/projid name)
	NVMeAddress             // an NVMe controller's address (traddr=…,trsvcid=…,host_traddr=…): 512
	NumKinds                // the number of kinds
)

var kinds = [NumKinds]struct {
	name string
	cap  int
}{
	Model:       {"hw.model", 128},
	Serial:      {"hw.serial_number", 256},
	Firmware:    {"hw.firmware_version", 64},
	WWN:         {"disk_health.disk.wwn", 256},
	Device:      {"device name", 64},
	DMName:      {"disk.dm_name", 128},
	MountSource: {"mount source", 1024},
	MountPoint:  {"mount point", 4096},
	FSType:      {"filesystem type", 64},
	CgroupPath:  {"cgroup.path", 4096},
	SystemdUnit: {"systemd.unit.name", 256},
	HWID:        {"hw.id", 512},
	FSUUID:      {"disk_health.filesystem.uuid", 64},
	ProjectName: {"disk_health.filesystem.project.name", 256},
	NVMeAddress: {"nvme address", 512},
}

// Cap is the most bytes a sanitised string of kind k has.
func Cap(k Kind) int { return kinds[k].cap }

func (k Kind) String() string { return kinds[k].name }

// counts are the process's alterations per kind: values given new bytes (replaced or escaped) and
// values cut to the cap.
var counts [NumKinds]struct{ altered, cut atomic.Uint64 }

// String returns s valid, escaped and capped for kind k (see the package comment).
func String(k Kind, s string) string {
	limit := kinds[k].cap
	if len(s) <= limit && plainASCII(s) {
		return s
	}
	out, altered, cut := clean(s, limit)
	if altered {
		counts[k].altered.Add(1)
	}
	if cut {
		counts[k].cut.Add(1)
	}
	return out
}

// Bytes is String for a byte slice; it allocates only the result.
func Bytes(k Kind, b []byte) string {
	if len(b) <= kinds[k].cap && plainASCII(b) {
		return string(b)
	}
	return String(k, string(b))
}

func plainASCII[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

const hex = "0123456789abcdef"

// clean builds the sanitised string; altered reports replaced or escaped bytes, cut a value past limit.
func clean(s string, limit int) (out string, altered, cut bool) {
	b := make([]byte, 0, min(len(s), limit))
	keep := 0 // the longest clean prefix, whole pieces only, that leaves room for a cut's suffix
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var piece [6]byte
		var p []byte
		switch {
		case r == utf8.RuneError && size == 1:
			p = utf8.AppendRune(piece[:0], utf8.RuneError)
			altered = true
		case r < 0x20 || r == 0x7f:
			p = append(piece[:0], '\\', 'x', hex[r>>4], hex[r&0xf])
			altered = true
		case r >= 0x80 && r <= 0x9f:
			p = append(piece[:0], '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
			altered = true
		default:
			p = []byte(s[i : i+size])
		}
		if len(b)+len(p) > limit {
			return withSuffix(b[:keep], s), altered, true
		}
		b = append(b, p...)
		if len(b) <= limit-suffixLen {
			keep = len(b)
		}
		i += size
	}
	return string(b), altered, false
}

// suffixLen is the length of a cut value's suffix: "~" and a 64-bit hash in hex.
const suffixLen = 1 + 16

// withSuffix ends b, the clean form of a prefix of s, in the suffix naming the whole of s.
func withSuffix(b []byte, s string) string {
	h := uint64(14695981039346656037) // FNV-1a offset basis
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	b = append(b, '~')
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, hex[h>>uint(shift)&0xf])
	}
	return string(b)
}

// Stats are the alterations of one kind since the process started.
type Stats struct {
	Altered uint64 // values with invalid UTF-8 replaced or control characters escaped
	Cut     uint64 // values cut to the kind's cap
}

// Snapshot returns the alterations of every kind so far.
func Snapshot() [NumKinds]Stats {
	var s [NumKinds]Stats
	for k := range s {
		s[k] = Stats{Altered: counts[k].altered.Load(), Cut: counts[k].cut.Load()}
	}
	return s
}

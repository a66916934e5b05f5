// Package projquota reads per-directory usage from filesystem project quotas (XFS prjquota, ext4's project
// feature): the kernel charges every block and inode of a directory tree to the tree's project ID, so one
// quotactl per project gives what du would find by walking it, without walking. It also parses the files
// that name projects (/etc/projects: id:directory, /etc/projid: name:id), bytes in, maps out.
package projquota // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/projquota"

import (
	"bytes"
	"cmp"
	"errors"
	"slices"
	"strconv"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
)

// Project is one project's usage and limits on one filesystem, in bytes and inodes; a limit of 0 is none.
type Project struct {
	ID                   uint32
	Used, Inodes         uint64
	BlockHard, BlockSoft uint64
	InodeHard, InodeSoft uint64
}

// MaxScan bounds the projects read from one filesystem in one call: a filesystem with more quota records
// than that is cut there (ErrTruncated), so a misconfigured one cannot make a scrape unbounded.
const MaxScan = 1 << 16

// MaxNames bounds the entries kept from a projects or projid file.
const MaxNames = 1 << 16

var (
	// ErrOff is returned when project quota accounting is not on for the filesystem.
	ErrOff = errors.New("project quotas are not on for this filesystem")
	// ErrUnsupported is returned where the platform has no quotactl.
	ErrUnsupported = errors.New("project quotas are read on Linux only")
	// ErrTruncated is returned with the first MaxScan projects when a filesystem has more.
	ErrTruncated = errors.New("more project quota records than the scan bound")

	errNoColon = errors.New("no colon")
	errID      = errors.New("project ID is not a number from 0 to 4294967295")
	errEmpty   = errors.New("empty name or directory")
	errTooMany = errors.New("more entries than the bound; the rest are ignored")
)

// Top keeps the n projects using the most bytes (ties: the lower ID), returned by ascending ID so that
// points come in a stable order; ps is reordered in place. n <= 0 keeps none.
func Top(ps []Project, n int) []Project {
	if n <= 0 {
		return ps[:0]
	}
	if len(ps) > n {
		slices.SortFunc(ps, func(a, b Project) int {
			if c := cmp.Compare(b.Used, a.Used); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		ps = ps[:n]
	}
	slices.SortFunc(ps, func(a, b Project) int { return cmp.Compare(a.ID, b.ID) })
	return ps
}

// ParseProjects parses an /etc/projects-style file: "id:directory" per line, '#' comments and blank lines
// ignored. It returns the directory of each ID (the last line wins) and the bad lines, if any.
func ParseProjects(data []byte) (map[uint32]string, error) {
	return parse(data, "projects", func(left, right []byte) (uint32, []byte, error) {
		id, err := parseID(left)
		return id, right, err
	})
}

// ParseProjID parses an /etc/projid-style file: "name:id" per line. It returns the name of each ID.
func ParseProjID(data []byte) (map[uint32]string, error) {
	return parse(data, "projid", func(left, right []byte) (uint32, []byte, error) {
		id, err := parseID(right)
		return id, left, err
	})
}

func parseID(b []byte) (uint32, error) {
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 32)
	if err != nil {
		return 0, errID
	}
	return uint32(v), nil
}

// parse splits each line at its first colon for /etc/projects (a directory may hold colons after it) and
// at its last for /etc/projid (a name may too); split picks the ID and the text out of the two sides.
func parse(data []byte, file string, split func(left, right []byte) (uint32, []byte, error)) (map[uint32]string, error) {
	out := map[uint32]string{}
	var bad *parseerr.Lines
	for n := 1; len(data) > 0; n++ {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		i := bytes.IndexByte(line, ':')
		if file == "projid" {
			i = bytes.LastIndexByte(line, ':')
		}
		if i < 0 {
			bad = bad.Add(&parseerr.Line{File: file, Line: n, Value: parseerr.Clip(line), Err: errNoColon})
			continue
		}
		id, text, err := split(line[:i], line[i+1:])
		if err == nil && len(bytes.TrimSpace(text)) == 0 {
			err = errEmpty
		}
		if err != nil {
			bad = bad.Add(&parseerr.Line{File: file, Line: n, Value: parseerr.Clip(line), Err: err})
			continue
		}
		if _, dup := out[id]; !dup && len(out) >= MaxNames {
			bad = bad.Add(&parseerr.Line{File: file, Line: n, Err: errTooMany})
			break
		}
		out[id] = string(bytes.TrimSpace(text))
	}
	return out, bad.Err()
}

package dm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MetadataBlockBytes is the thin-pool metadata block size, fixed by the
// kernel (THIN_METADATA_BLOCK_SIZE, 4 KiB).
const MetadataBlockBytes = 4096

// SectorBytes is the unit of every dm length.
const SectorBytes = 512

// Thin-pool modes in the status line.
const (
	PoolRW             = "rw"
	PoolRO             = "ro"
	PoolOutOfDataSpace = "out_of_data_space"
)

// ThinPoolStatus is a thin-pool target's status line:
//
//	<transaction id> <used metadata blocks>/<total metadata blocks>
//	<used data blocks>/<total data blocks> <held metadata root|->
//	ro|rw|out_of_data_space [no_]discard_passdown|ignore_discard
//	error_if_no_space|queue_if_no_space needs_check|- <metadata low watermark>
//
// or "Fail" (the pool failed: no I/O possible) or "Error" (its metadata
// could not be read), in which case only Fail or Error is set.
type ThinPoolStatus struct {
	Fail  bool `json:",omitempty"`
	Error bool `json:",omitempty"`

	TransactionID       uint64
	UsedMetadataBlocks  uint64 // MetadataBlockBytes each
	TotalMetadataBlocks uint64
	UsedDataBlocks      uint64 // the table's data block size each
	TotalDataBlocks     uint64
	// HeldMetadataRoot is the held metadata snapshot's root block, 0 for "-".
	HeldMetadataRoot uint64
	Mode             string // PoolRW, PoolRO, PoolOutOfDataSpace
	Discard          string // discard_passdown, no_discard_passdown, ignore_discard
	NoSpacePolicy    string // error_if_no_space, queue_if_no_space
	NeedsCheck       bool   // metadata flagged for thin_check: the pool stays read-only
	// MetadataLowWatermark is the free-metadata-block threshold below
	// which the kernel raises an event (absent on kernels before 4.19:
	// HasLowWatermark false).
	MetadataLowWatermark uint64
	HasLowWatermark      bool
}

// ReadOnly reports a pool that accepts no writes: ro mode (metadata full,
// or errors), or needs_check.
func (s ThinPoolStatus) ReadOnly() bool { return s.Mode == PoolRO || s.NeedsCheck }

// MetadataRatio and DataRatio are the used fractions (0 when the total is 0).
func (s ThinPoolStatus) MetadataRatio() float64 {
	return ratio(s.UsedMetadataBlocks, s.TotalMetadataBlocks)
}

// DataRatio is the used share of the pool's data blocks, 0–1.
func (s ThinPoolStatus) DataRatio() float64 { return ratio(s.UsedDataBlocks, s.TotalDataBlocks) }

func ratio(used, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return float64(min(used, total)) / float64(total)
}

func failState(line string) (fail, isErr bool) {
	switch strings.TrimSpace(line) {
	case "Fail":
		return true, false
	case "Error":
		return false, true
	}
	return false, false
}

func splitPair(what, s string) (a, b uint64, err error) {
	x, y, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, fmt.Errorf("%s %q: want used/total", what, s)
	}
	a, err1 := strconv.ParseUint(x, 10, 64)
	b, err2 := strconv.ParseUint(y, 10, 64)
	if err := errors.Join(err1, err2); err != nil || a > b {
		return 0, 0, fmt.Errorf("%s %q: want used/total with used <= total", what, s)
	}
	return a, b, nil
}

// ParseThinPoolStatus parses a thin-pool status line.
func ParseThinPoolStatus(line string) (ThinPoolStatus, error) {
	var s ThinPoolStatus
	if s.Fail, s.Error = failState(line); s.Fail || s.Error {
		return s, nil
	}
	f := strings.Fields(line)
	if len(f) < 7 {
		return ThinPoolStatus{}, fmt.Errorf("thin-pool status %q: %d fields, want at least 7", line, len(f))
	}
	var err error
	if s.TransactionID, err = strconv.ParseUint(f[0], 10, 64); err != nil {
		return ThinPoolStatus{}, fmt.Errorf("thin-pool transaction id %q", f[0])
	}
	if s.UsedMetadataBlocks, s.TotalMetadataBlocks, err = splitPair("thin-pool metadata", f[1]); err != nil {
		return ThinPoolStatus{}, err
	}
	if s.UsedDataBlocks, s.TotalDataBlocks, err = splitPair("thin-pool data", f[2]); err != nil {
		return ThinPoolStatus{}, err
	}
	if f[3] != "-" {
		if s.HeldMetadataRoot, err = strconv.ParseUint(f[3], 10, 64); err != nil {
			return ThinPoolStatus{}, fmt.Errorf("thin-pool held root %q", f[3])
		}
	}
	switch f[4] {
	case PoolRW, PoolRO, PoolOutOfDataSpace:
		s.Mode = f[4]
	default:
		return ThinPoolStatus{}, fmt.Errorf("thin-pool mode %q", f[4])
	}
	switch f[5] {
	case "discard_passdown", "no_discard_passdown", "ignore_discard":
		s.Discard = f[5]
	default:
		return ThinPoolStatus{}, fmt.Errorf("thin-pool discard %q", f[5])
	}
	switch f[6] {
	case "error_if_no_space", "queue_if_no_space":
		s.NoSpacePolicy = f[6]
	default:
		return ThinPoolStatus{}, fmt.Errorf("thin-pool no-space policy %q", f[6])
	}
	if len(f) > 7 {
		switch f[7] {
		case "needs_check":
			s.NeedsCheck = true
		case "-":
		default:
			return ThinPoolStatus{}, fmt.Errorf("thin-pool needs_check field %q", f[7])
		}
	}
	if len(f) > 8 {
		if s.MetadataLowWatermark, err = strconv.ParseUint(f[8], 10, 64); err != nil {
			return ThinPoolStatus{}, fmt.Errorf("thin-pool metadata low watermark %q", f[8])
		}
		s.HasLowWatermark = true
	}
	return s, nil
}

// ThinPoolTable is a thin-pool target's table line:
//
//	<metadata dev> <data dev> <data block size> <low water mark> [<#features> <feature>...]
type ThinPoolTable struct {
	MetadataDev, DataDev string // "major:minor"
	// DataBlockSectors is the data block size in 512-byte sectors.
	DataBlockSectors uint64
	// LowWaterMarkBlocks is the free-data-block threshold for an event.
	LowWaterMarkBlocks uint64
	Features           []string `json:",omitempty"`
}

// DataBlockBytes is the size of one data block.
func (t ThinPoolTable) DataBlockBytes() uint64 { return t.DataBlockSectors * SectorBytes }

// ParseThinPoolTable parses a thin-pool table line.
func ParseThinPoolTable(line string) (ThinPoolTable, error) {
	f := strings.Fields(line)
	if len(f) < 4 {
		return ThinPoolTable{}, fmt.Errorf("thin-pool table %q: %d fields, want at least 4", line, len(f))
	}
	t := ThinPoolTable{MetadataDev: f[0], DataDev: f[1]}
	var err error
	if t.DataBlockSectors, err = strconv.ParseUint(f[2], 10, 64); err != nil || t.DataBlockSectors == 0 || t.DataBlockSectors > 1<<40 {
		return ThinPoolTable{}, fmt.Errorf("thin-pool data block size %q", f[2])
	}
	if t.LowWaterMarkBlocks, err = strconv.ParseUint(f[3], 10, 64); err != nil {
		return ThinPoolTable{}, fmt.Errorf("thin-pool low water mark %q", f[3])
	}
	if t.Features, err = counted("thin-pool features", f[4:]); err != nil {
		return ThinPoolTable{}, err
	}
	return t, nil
}

// counted reads "<n> <arg>..." and checks that exactly n args follow
// (an empty rest is no args).
func counted(what string, f []string) ([]string, error) {
	if len(f) == 0 {
		return nil, nil
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 0 || n != len(f)-1 {
		return nil, fmt.Errorf("%s %q: want a count and that many words", what, strings.Join(f, " "))
	}
	return f[1:], nil
}

// ThinStatus is a thin target's status line: "<nr mapped sectors>
// <highest mapped sector>" (the latter "-" when nothing is mapped), "-"
// when the thin device is not active in its pool, or "Fail" / "Error".
type ThinStatus struct {
	Fail     bool `json:",omitempty"`
	Error    bool `json:",omitempty"`
	Inactive bool `json:",omitempty"`
	// MappedSectors is the provisioned space; HighestMappedSector the last
	// provisioned sector (valid when HasHighest).
	MappedSectors       uint64
	HighestMappedSector uint64
	HasHighest          bool
}

// MappedBytes is the space the volume has taken from its pool.
func (s ThinStatus) MappedBytes() uint64 { return s.MappedSectors * SectorBytes }

// ParseThinStatus parses a thin status line.
func ParseThinStatus(line string) (ThinStatus, error) {
	var s ThinStatus
	if s.Fail, s.Error = failState(line); s.Fail || s.Error {
		return s, nil
	}
	f := strings.Fields(line)
	if len(f) == 1 && f[0] == "-" {
		return ThinStatus{Inactive: true}, nil
	}
	if len(f) != 2 {
		return ThinStatus{}, fmt.Errorf("thin status %q: want <mapped> <highest>", line)
	}
	var err error
	if s.MappedSectors, err = strconv.ParseUint(f[0], 10, 64); err != nil || s.MappedSectors > 1<<54 {
		return ThinStatus{}, fmt.Errorf("thin mapped sectors %q", f[0])
	}
	if f[1] != "-" {
		if s.HighestMappedSector, err = strconv.ParseUint(f[1], 10, 64); err != nil {
			return ThinStatus{}, fmt.Errorf("thin highest mapped sector %q", f[1])
		}
		s.HasHighest = true
	}
	return s, nil
}

// MultipathStatus is a multipath target's status line:
//
//	<#features> <queue_io> <pg_init_count> <#hw handler args> <args>...
//	<#groups> <next group> then per group:
//	<A|E|D> <#selector args> <args>... <#paths> <#selector path args>
//	then per path: <major:minor> <A|F> <fail count> <selector path args>...
type MultipathStatus struct {
	// QueueIO: I/O is being queued (no usable path and queue_if_no_path).
	QueueIO     bool
	PGInitCount uint64
	// NextGroup is the group the next I/O goes to, 1-based (0 for none).
	NextGroup int
	Groups    []PathGroup
}

// PathGroup is one priority group.
type PathGroup struct {
	// State: 'A' active (current), 'E' enabled, 'D' disabled (bypassed).
	State string
	Paths []Path
}

// Path is one path to the LUN.
type Path struct {
	Dev       string // "major:minor" of the underlying device (sdX)
	Active    bool   // 'A'; false for 'F' (failed)
	FailCount uint64
}

// Counts returns the number of paths, active paths and failed paths.
func (s MultipathStatus) Counts() (total, active, failed int) {
	for _, g := range s.Groups {
		for _, p := range g.Paths {
			total++
			if p.Active {
				active++
			} else {
				failed++
			}
		}
	}
	return total, active, failed
}

type fields struct {
	f   []string
	pos int
	err error
}

func (t *fields) next(what string) string {
	if t.err != nil {
		return ""
	}
	if t.pos >= len(t.f) {
		t.err = fmt.Errorf("multipath status: missing %s", what)
		return ""
	}
	t.pos++
	return t.f[t.pos-1]
}

func (t *fields) count(what string, limit int) int {
	s := t.next(what)
	if t.err != nil {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > limit {
		t.err = fmt.Errorf("multipath status: %s %q", what, s)
		return 0
	}
	return n
}

func (t *fields) skip(what string, n int) []string {
	if t.err != nil {
		return nil
	}
	if t.pos+n > len(t.f) {
		t.err = fmt.Errorf("multipath status: missing %s", what)
		return nil
	}
	t.pos += n
	return t.f[t.pos-n : t.pos]
}

// ParseMultipathStatus parses a multipath status line.
func ParseMultipathStatus(line string) (MultipathStatus, error) {
	t := &fields{f: strings.Fields(line)}
	limit := len(t.f)
	var s MultipathStatus
	features := t.skip("features", t.count("feature count", limit))
	if len(features) > 0 {
		s.QueueIO = features[0] == "1"
	}
	if len(features) > 1 {
		s.PGInitCount, _ = strconv.ParseUint(features[1], 10, 64)
	}
	t.skip("hardware handler args", t.count("hardware handler count", limit))
	groups := t.count("group count", limit)
	s.NextGroup = t.count("next group", 1<<20)
	for g := 0; g < groups && t.err == nil; g++ {
		var pg PathGroup
		switch st := t.next("group state"); st {
		case "A", "E", "D":
			pg.State = st
		default:
			if t.err == nil {
				t.err = fmt.Errorf("multipath status: group state %q", st)
			}
		}
		t.skip("selector args", t.count("selector arg count", limit))
		paths := t.count("path count", limit)
		pathArgs := t.count("selector path arg count", limit)
		for p := 0; p < paths && t.err == nil; p++ {
			dev := t.next("path device")
			state := t.next("path state")
			fc, err := strconv.ParseUint(t.next("fail count"), 10, 64)
			if t.err == nil && (err != nil || (state != "A" && state != "F") || !strings.Contains(dev, ":")) {
				t.err = fmt.Errorf("multipath status: path %q %q", dev, state)
			}
			t.skip("selector path args", pathArgs)
			pg.Paths = append(pg.Paths, Path{Dev: dev, Active: state == "A", FailCount: fc})
		}
		s.Groups = append(s.Groups, pg)
	}
	if t.err == nil && t.pos != len(t.f) {
		t.err = fmt.Errorf("multipath status: %d words left over", len(t.f)-t.pos)
	}
	if t.err != nil {
		return MultipathStatus{}, t.err
	}
	return s, nil
}

// ThinTable is a thin target's table line: "<pool dev> <dev id>
// [<external origin dev>]"; PoolDev joins a volume to its pool.
type ThinTable struct {
	PoolDev   string // "major:minor" of the thin-pool device
	DevID     uint64 // the volume's id inside the pool
	OriginDev string `json:",omitempty"`
}

// ParseThinTable parses a thin table line.
func ParseThinTable(line string) (ThinTable, error) {
	f := strings.Fields(line)
	if len(f) < 2 || len(f) > 3 {
		return ThinTable{}, fmt.Errorf("thin table %q: want <pool dev> <dev id> [<origin>]", line)
	}
	id, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return ThinTable{}, fmt.Errorf("thin dev id %q", f[1])
	}
	t := ThinTable{PoolDev: f[0], DevID: id}
	if len(f) == 3 {
		t.OriginDev = f[2]
	}
	return t, nil
}

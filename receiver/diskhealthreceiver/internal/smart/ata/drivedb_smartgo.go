//go:build linux

package ata

import (
	"fmt"
	"runtime/debug"
	_ "unsafe" // go:linkname

	_ "github.com/anatol/smart.go" // its drive database is the built-in one
)

// The built-in drive database is smart.go's own table, at the version pinned in go.mod, itself
// generated from smartmontools' drivedb.h. smart.go keeps it unexported and reachable only through
// its own SG_IO transport, which cannot sit behind this receiver's command allowlist, so the table is
// linked by name instead of copied: there is no copy of drivedb data in this repository, and bumping
// the pin brings its database with it. smartGoAttr and smartGoEntry have the layout of smart.go's
// ataDeviceAttr and ataDeviceInfo; TestLinkedDriveDBIsTheModuleSource compares every field read
// through them with the module's source, so a pin whose layout differs fails there.

type smartGoAttr struct {
	name        string
	typ         int
	byteOrder   string
	restriction int
}

type smartGoEntry struct {
	model, modelRe, firmwareRe string
	presets                    map[int]smartGoAttr
	_                          int // bug: its firmware-bug flags, not used here
}

// The last path element's dot is escaped in symbol names.
//
//go:linkname smartGoDefaults github.com/anatol/smart%2ego.ataDefaultAttributes
var smartGoDefaults map[int]smartGoAttr

//go:linkname smartGoEntries github.com/anatol/smart%2ego.ataDevicesDatabase
var smartGoEntries []smartGoEntry

const smartGoPath = "github.com/anatol/smart.go"

// smartGoFormats are our formats in smart.go's numbering (AtaDeviceAttributeType…, from 1).
var smartGoFormats = [...]Format{FormatRaw8, FormatRaw16, FormatRaw48, FormatHex48, FormatRaw56, FormatHex56,
	FormatRaw64, FormatHex64, FormatRaw16OptRaw16, FormatRaw16OptAvg16, FormatRaw24OptRaw8, FormatRaw24DivRaw24,
	FormatRaw24DivRaw32, FormatSec2Hour, FormatMin2Hour, FormatHalfMin2Hour, FormatMsec24Hour32, FormatTempMinMax,
	FormatTemp10X}

// smartGoMedia are our media in smart.go's numbering (ataDeviceAttributeRestriction…, from 0).
var smartGoMedia = [...]medium{anyMedium, hddOnly, ssdOnly}

// smartGoDB converts smart.go's table. An attribute ID, format or restriction out of range is an
// error (a pin whose table this code does not understand), never a guess.
func smartGoDB() (defaults map[uint8]AttrDef, entries []dbEntry, err error) {
	if defaults, err = smartGoDefs(smartGoDefaults); err != nil {
		return nil, nil, fmt.Errorf("defaults: %w", err)
	}
	entries = make([]dbEntry, len(smartGoEntries))
	for i := range smartGoEntries {
		e := &smartGoEntries[i]
		entries[i] = dbEntry{family: e.model, model: e.modelRe, firmware: e.firmwareRe}
		if len(e.presets) > 0 {
			if entries[i].defs, err = smartGoDefs(e.presets); err != nil {
				return nil, nil, fmt.Errorf("entry %q: %w", e.model, err)
			}
		}
	}
	return defaults, entries, nil
}

func smartGoDefs(m map[int]smartGoAttr) (map[uint8]AttrDef, error) {
	defs := make(map[uint8]AttrDef, len(m))
	for id, a := range m {
		if id < 0 || id > 255 || a.typ < 1 || a.typ > len(smartGoFormats) || a.restriction < 0 || a.restriction >= len(smartGoMedia) {
			return nil, fmt.Errorf("attribute %d: format %d, restriction %d out of range", id, a.typ, a.restriction)
		}
		defs[uint8(id)] = AttrDef{Name: a.name, Format: smartGoFormats[a.typ-1], ByteOrder: a.byteOrder, only: smartGoMedia[a.restriction]}
	}
	return defs, nil
}

// smartGoVersion is the version of smart.go linked into this binary, as its build information says.
func smartGoVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == smartGoPath {
				if m.Replace != nil {
					m = m.Replace
				}
				return m.Version
			}
		}
	}
	return "(version unknown)"
}

package ata

import (
	"fmt"
	"regexp"
	"sync"
)

// The drive database is smartmontools' drivedb.h, read at run time (ParseDriveDB) as smartctl reads
// it: none is compiled in, and no copy of its data is kept in this repository. smartctl's default
// attribute names are drivedb.h's DEFAULT entry, so without a database every attribute is
// Unknown_Attribute, as smartctl names an attribute no entry defines.

// AttrDef says how to name and decode one attribute.
type AttrDef struct {
	// Name is "" in a family entry that changes only the format ("-v 9,msec24hour32"):
	// the default name then applies.
	Name   string
	Format Format
	// ByteOrder overrides the format's default byte order ("" = default).
	ByteOrder string
	// only restricts a default name to one kind of medium (smartctl's
	// HDD/SSD attribute flags): on the other kind the attribute is unknown.
	only medium
}

// medium is the kind of storage a default attribute name applies to.
type medium uint8

const (
	anyMedium medium = iota
	hddOnly
	ssdOnly
)

// dbEntry is one drive database entry: a family name, an anchored model and
// firmware regular expression and the attributes that differ from the
// defaults. The first matching entry wins.
type dbEntry struct {
	family, model, firmware string
	defs                    map[uint8]AttrDef
}

// unknownName names attributes that neither table knows.
const unknownName = "Unknown_Attribute"

// compiledEntry is a dbEntry with its expressions compiled (nil until the database's first lookup).
type compiledEntry struct {
	*dbEntry
	model, firmware *regexp.Regexp
}

// DriveDB is a drive database: the default attribute definitions and the
// family entries, searched in order (the first match wins, as in smartctl).
// Safe for concurrent use.
//
// Its expressions are checked when it is read and compiled on the first lookup: compiled, smartmontools'
// drivedb.h holds ~3.6 MiB of heap (about 7 MiB of RSS at GOGC=100), which a host without an ATA disk
// (NVMe and virtual disks only) would carry for nothing from the collector's start.
type DriveDB struct {
	version  string
	defaults map[uint8]AttrDef
	entries  []compiledEntry
	compile  sync.Once // fills entries' expressions
	lookups  sync.Map  // lookupKey → Preset
}

// newDriveDB checks entries against the pattern budget (patterns.go); they are compiled on the first
// lookup. lines, when not nil, are the entries' lines in their file, for the errors.
func newDriveDB(version string, defaults map[uint8]AttrDef, entries []dbEntry, lines []int) (*DriveDB, error) {
	db := &DriveDB{version: version, defaults: defaults, entries: make([]compiledEntry, len(entries))}
	fail := func(i int, what string, err error) error {
		err = fmt.Errorf("entry %q: %s expression: %w", entries[i].family, what, err)
		if lines != nil {
			err = fmt.Errorf("line %d: %w", lines[i], err)
		}
		return err
	}
	var budget patternBudget
	for i := range entries {
		e := &entries[i]
		if err := budget.check(e.model); err != nil {
			return nil, fail(i, "model", err)
		}
		if e.firmware != "" {
			if err := budget.check(e.firmware); err != nil {
				return nil, fail(i, "firmware", err)
			}
		}
		db.entries[i] = compiledEntry{dbEntry: e}
	}
	return db, nil
}

// compiled is db's entries with their expressions compiled, compiling them on the first call. Every
// expression passed patternBudget.check when its database was read, which parses it as it compiles,
// so MustCompile cannot panic here. Identical expressions share one compiled Regexp.
func (db *DriveDB) compiled() []compiledEntry {
	db.compile.Do(func() {
		seen := map[string]*regexp.Regexp{}
		get := func(expr string) *regexp.Regexp {
			re, ok := seen[expr]
			if !ok {
				re = regexp.MustCompile(anchor(expr))
				seen[expr] = re
			}
			return re
		}
		for i := range db.entries {
			e := &db.entries[i]
			e.model = get(e.dbEntry.model)
			if e.dbEntry.firmware != "" {
				e.firmware = get(e.dbEntry.firmware)
			}
		}
	})
	return db.entries
}

// none is the database in use when there is none: no defaults, no entries.
var none = &DriveDB{}

// Version says which database this is: the drivedb.h VERSION entry's text ("" without a
// database).
func (db *DriveDB) Version() string { return db.or().version }

// Len is the number of family entries.
func (db *DriveDB) Len() int { return len(db.or().entries) }

// WithAdditions is db with extra's entries searched first: smartctl's
// "-B +FILE" and /etc/smart_drivedb.h. db's defaults and version stay. The
// result compiles its expressions on its own first lookup.
func (db *DriveDB) WithAdditions(extra *DriveDB) *DriveDB {
	db = db.or()
	out := &DriveDB{version: db.version, defaults: db.defaults, entries: make([]compiledEntry, 0, len(extra.entries)+len(db.entries))}
	// Only the entries' dbEntry is read: their expressions may be being compiled by a lookup.
	for _, from := range []*DriveDB{extra, db} {
		for i := range from.entries {
			out.entries = append(out.entries, compiledEntry{dbEntry: from.entries[i].dbEntry})
		}
	}
	return out
}

// or is db, or the empty database when db is nil.
func (db *DriveDB) or() *DriveDB {
	if db == nil {
		return none
	}
	return db
}

// Preset is what the drive database says about one drive.
type Preset struct {
	// Family is the matched drive family; "" when no entry matched, or when
	// the matching entry names no family (Known tells these apart).
	Family string
	// Known reports whether a database entry matched the drive.
	Known bool
	// Entry is the matching entry's model expression ("" when none matched).
	Entry    string
	defs     map[uint8]AttrDef
	defaults map[uint8]AttrDef
	// rotation is IDENTIFY word 217: 1 solid state, >1 rpm, 0 unknown.
	rotation uint16
}

type lookupKey struct {
	model, firmware string
	rotation        uint16
}

// LookupDrive finds the drive database entry of a model and firmware
// revision, as smartctl does; rotationRate (IDENTIFY word 217) decides
// whether HDD-only or SSD-only default names apply. Results are memoised: a
// drive's identity is looked up once per database. A nil database is none:
// every attribute is Unknown_Attribute.
func (db *DriveDB) LookupDrive(model, firmware string, rotationRate uint16) Preset {
	db = db.or()
	key := lookupKey{model, firmware, rotationRate}
	if p, ok := db.lookups.Load(key); ok {
		return p.(Preset)
	}
	p := Preset{rotation: rotationRate, defaults: db.defaults}
	for _, e := range db.compiled() {
		if !e.model.MatchString(model) || (e.firmware != nil && !e.firmware.MatchString(firmware)) {
			continue
		}
		p.Family, p.Known, p.Entry, p.defs = e.family, true, e.dbEntry.model, e.defs
		break
	}
	db.lookups.Store(key, p)
	return p
}

// BuiltIn is the preset of a drive no drive database was read for: defs are
// the names and formats smart.go's own table gave its attributes (by ID; an
// attribute it does not name is Unknown_Attribute, as in smartctl). No
// medium restriction applies: smart.go picked the names for this drive.
func BuiltIn(defs map[uint8]AttrDef) Preset {
	return Preset{defaults: defs}
}

// Def returns the name and format of attribute id on this drive: the
// family's definition, else the default one. A default restricted to hard
// disks is "Unknown_SSD_Attribute" on a solid-state drive and one restricted
// to SSDs "Unknown_HDD_Attribute" on a rotating one, as smartctl names them.
// A family definition without a name takes the default name, unrestricted
// (as smartctl names it).
func (p Preset) Def(id uint8) AttrDef {
	if d, ok := p.defs[id]; ok {
		if d.Name == "" {
			d.Name = unknownName
			if def, ok := p.defaults[id]; ok {
				d.Name = def.Name
			}
		}
		return d
	}
	d, ok := p.defaults[id]
	if !ok {
		return AttrDef{Name: unknownName}
	}
	switch {
	case d.only == hddOnly && p.rotation == 1:
		d.Name = "Unknown_SSD_Attribute"
	case d.only == ssdOnly && p.rotation > 1:
		d.Name = "Unknown_HDD_Attribute"
	}
	return d
}

// Decode names and decodes every attribute of a SMART data page, attaching
// its threshold when the thresholds page is known (th may be nil when that
// page was unreadable; the attributes then carry no threshold).
func (p Preset) Decode(data *SMARTData, th *Thresholds) Attributes {
	out := make(Attributes, 0, len(data.Attributes))
	for _, ra := range data.Attributes {
		def := p.Def(ra.ID)
		a := Attribute{RawAttribute: ra, Name: def.Name, Raw: DecodeRaw(ra, def.Format, def.ByteOrder)}
		a.Threshold, a.HasThreshold = th.Lookup(ra.ID)
		out = append(out, a)
	}
	return out
}

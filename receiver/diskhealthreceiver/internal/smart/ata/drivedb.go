package ata

import (
	"regexp"
	"sync"
)

//go:generate go run ./internal/gendrivedb -o drivedb_gen.go

// The drive database (drivedb_gen.go) is generated from the drive database of
// github.com/anatol/smart.go at the version pinned in go.mod, itself generated
// from smartmontools' drivedb.h: every family smartctl knows, with the
// attribute names, raw formats and byte orders it applies. smart.go keeps that
// table unexported and reachable only through its own SG_IO transport, which
// cannot sit behind this receiver's command allowlist, so gendrivedb reads it
// from the module source instead; TestDriveDBIsGenerated fails when the
// committed table is not what the pinned module yields. Only the table is
// taken: matching (anchored, as smartctl matches) and decoding are ours.

// AttrDef says how to name and decode one attribute.
type AttrDef struct {
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

// compiledEntry is a dbEntry with its expressions compiled.
type compiledEntry struct {
	*dbEntry
	model, firmware *regexp.Regexp
}

// compiled compiles the table once, on the first lookup. smartctl matches
// whole strings, so every expression is anchored.
var compiled = sync.OnceValue(func() []compiledEntry {
	out := make([]compiledEntry, len(driveDB))
	for i := range driveDB {
		e := &driveDB[i]
		out[i] = compiledEntry{dbEntry: e, model: regexp.MustCompile(`^(?:` + e.model + `)$`)}
		if e.firmware != "" {
			out[i].firmware = regexp.MustCompile(`^(?:` + e.firmware + `)$`)
		}
	}
	return out
})

// Preset is what the drive database says about one drive.
type Preset struct {
	// Family is the matched drive family; "" when no entry matched, or when
	// the matching entry names no family (Known tells these apart).
	Family string
	// Known reports whether a database entry matched the drive.
	Known bool
	// Entry is the matching entry's model expression ("" when none matched).
	Entry string
	defs  map[uint8]AttrDef
	// rotation is IDENTIFY word 217: 1 solid state, >1 rpm, 0 unknown.
	rotation uint16
}

type lookupKey struct {
	model, firmware string
	rotation        uint16
}

var lookups sync.Map // lookupKey → Preset

// Lookup finds the drive family of a model number (any firmware) in the drive
// database.
func Lookup(model string) Preset { return LookupDrive(model, "", 0) }

// LookupDrive finds the drive database entry of a model and firmware
// revision, as smartctl does; rotationRate (IDENTIFY word 217) decides
// whether HDD-only or SSD-only default names apply. Results are memoised: a
// drive's identity is looked up once per process.
func LookupDrive(model, firmware string, rotationRate uint16) Preset {
	key := lookupKey{model, firmware, rotationRate}
	if p, ok := lookups.Load(key); ok {
		return p.(Preset)
	}
	p := Preset{rotation: rotationRate}
	for _, e := range compiled() {
		if !e.model.MatchString(model) || (e.firmware != nil && !e.firmware.MatchString(firmware)) {
			continue
		}
		p.Family, p.Known, p.Entry, p.defs = e.family, true, e.dbEntry.model, e.defs
		break
	}
	lookups.Store(key, p)
	return p
}

// Def returns the name and format of attribute id on this drive: the
// family's definition, else the default one. A default restricted to hard
// disks is "Unknown_SSD_Attribute" on a solid-state drive and one restricted
// to SSDs "Unknown_HDD_Attribute" on a rotating one, as smartctl names them.
func (p Preset) Def(id uint8) AttrDef {
	if d, ok := p.defs[id]; ok {
		return d
	}
	d, ok := defaultDefs[id]
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

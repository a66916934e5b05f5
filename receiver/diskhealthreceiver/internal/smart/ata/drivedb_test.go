package ata

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		model, family string
		checks        map[uint8]Format
	}{
		{"ST4000DM004-2CV104", "Seagate BarraCuda 3.5 (SMR)", map[uint8]Format{1: FormatRaw24DivRaw32, 7: FormatRaw24DivRaw32, 9: FormatMsec24Hour32, 188: FormatRaw16, 195: FormatRaw24DivRaw32, 240: FormatMsec24Hour32, 5: FormatRaw16OptRaw16, 194: FormatTempMinMax}},
		{"ST4000DM004", "Seagate BarraCuda 3.5 (SMR)", nil},
		{"ST4000DM0041", "Seagate (other hard disks)", map[uint8]Format{9: FormatRaw24OptRaw8}},
		{"ST8000DM005-2EH112", "Seagate BarraCuda 3.5 (CMR)", map[uint8]Format{9: FormatRaw24OptRaw8, 188: FormatRaw16}},
		{"ST8000VN004-2M2101", "Seagate IronWolf", map[uint8]Format{1: FormatRaw24DivRaw32, 240: FormatMsec24Hour32}},
		{"ST16000NM001G-2KK103", "Seagate Exos / Enterprise Capacity", map[uint8]Format{188: FormatRaw16}},
		{"ST3000DM001-1CH166", "Seagate (other hard disks)", map[uint8]Format{7: FormatRaw24DivRaw32}},
		{"ST31000524AS", "Seagate (other hard disks)", map[uint8]Format{188: FormatRaw16}},
		{"Samsung SSD 870 EVO 1TB", "Samsung SATA SSD", nil},
		{"CT1000MX500SSD1", "Crucial/Micron MX500", nil},
		{"INTEL SSDSC2KB480G8", "Intel SATA SSD", map[uint8]Format{9: FormatMsec24Hour32}},
		{"HGST HUH721212ALE604", "HGST/WDC Ultrastar (helium)", nil},
		{"QEMU HARDDISK", "", map[uint8]Format{1: FormatRaw48, 188: FormatRaw48, 9: FormatRaw24OptRaw8}},
		{"WDC WD40EFRX-68N32N0", "", nil},
		{"XST4000DM004", "", nil}, // matches are anchored
		{"", "", nil},
	} {
		p := Lookup(tc.model)
		assert.Equal(t, tc.family, p.Family, tc.model)
		for id, f := range tc.checks {
			assert.Equal(t, f, p.Def(id).Format, "%s attribute %d", tc.model, id)
		}
	}
	assert.Equal(t, "Helium_Level", Lookup("HGST HUH721212ALE604").Def(22).Name)
	assert.Equal(t, "Unknown_Attribute", Lookup("QEMU HARDDISK").Def(22).Name)
	assert.Equal(t, "Percent_Lifetime_Remain", Lookup("CT1000MX500SSD1").Def(202).Name)
}

// Every database entry must name its attributes, use a known format and a
// byte order the decoder accepts.
func TestDatabaseIsWellFormed(t *testing.T) {
	check := func(where string, defs map[uint8]AttrDef) {
		for id, d := range defs {
			assert.NotEmpty(t, d.Name, "%s attribute %d", where, id)
			assert.Less(t, d.Format, numFormats, "%s attribute %d", where, id)
			if d.ByteOrder != "" {
				assert.True(t, validByteOrder(d.ByteOrder), "%s attribute %d", where, id)
			}
		}
	}
	check("defaults", defaultDefs)
	names := map[string]bool{}
	for _, f := range families {
		assert.NotEmpty(t, f.name)
		assert.False(t, names[f.name], "duplicate family %q", f.name)
		names[f.name] = true
		assert.True(t, len(f.models) > 0 || f.pattern != nil, f.name)
		if f.pattern != nil {
			s := f.pattern.String()
			assert.True(t, s[0] == '^' && s[len(s)-1] == '$', "%s: pattern %q must be anchored", f.name, s)
		}
		check(f.name, f.defs)
	}
	// Seagate packing is shared, not aliased: decoding presets must not have
	// modified the shared base table.
	assert.Len(t, seagatePacked, 4)
}

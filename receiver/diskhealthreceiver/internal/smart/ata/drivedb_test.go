package ata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		model, firmware, family string
		known                   bool
		checks                  map[uint8]AttrDef
	}{
		{"ST4000DM004-2CV104", "", "Seagate BarraCuda 3.5 (SMR)", true, map[uint8]AttrDef{
			1: {Name: "Raw_Read_Error_Rate", Format: FormatRaw24DivRaw32}, 7: {Name: "Seek_Error_Rate", Format: FormatRaw24DivRaw32},
			9: {Name: "Power_On_Hours", Format: FormatMsec24Hour32}, 188: {Name: "Command_Timeout", Format: FormatRaw16},
			195: {Name: "ECC_On_the_Fly_Count", Format: FormatRaw24DivRaw32}, 240: {Name: "Head_Flying_Hours", Format: FormatMsec24Hour32},
			5: {Name: "Reallocated_Sector_Ct", Format: FormatRaw16OptRaw16}, 194: {Name: "Temperature_Celsius", Format: FormatTempMinMax},
		}},
		{"PNY CS900 240GB SSD", "", "Phison Driven SSDs", true, map[uint8]AttrDef{
			197: {Name: "Not_In_Use"}, 231: {Name: "SSD_Life_Left"}, 241: {Name: "Lifetime_Writes_GiB"}, 242: {Name: "Lifetime_Reads_GiB"},
		}},
		{"CT1000MX500SSD1", "", "Crucial/Micron Client SSDs", true, map[uint8]AttrDef{202: {Name: "Percent_Lifetime_Remain"}}},
		{"HGST HUH721212ALE604", "", "HGST Ultrastar DC HC520 (He12)", true, map[uint8]AttrDef{22: {Name: "Helium_Level", Format: FormatRaw16OptRaw16, only: hddOnly}}},
		{"QEMU HARDDISK", "", "", false, map[uint8]AttrDef{
			1: {Name: "Raw_Read_Error_Rate"}, 188: {Name: "Command_Timeout"}, 9: {Name: "Power_On_Hours", Format: FormatRaw24OptRaw8},
			22: {Name: "Helium_Level", Format: FormatRaw16OptRaw16, only: hddOnly}, 100: {Name: unknownName},
		}},
		{"XST4000DM004-2CV104", "", "", false, nil}, // matches are anchored
		{"", "", "", false, nil},
	} {
		p := LookupDrive(tc.model, tc.firmware, 0)
		assert.Equal(t, tc.family, p.Family, tc.model)
		assert.Equal(t, tc.known, p.Known, tc.model)
		for id, d := range tc.checks {
			assert.Equal(t, d, p.Def(id), "%s attribute %d", tc.model, id)
		}
	}
	assert.Equal(t, Lookup("ST4000DM004-2CV104"), LookupDrive("ST4000DM004-2CV104", "", 0), "memoised lookups are the same")
}

// A default name restricted to one medium is unknown on the other, as
// smartctl names it; a family's own definition is never restricted.
func TestLookupMediumRestriction(t *testing.T) {
	ssd, hdd, unknown := LookupDrive("QEMU HARDDISK", "", 1), LookupDrive("QEMU HARDDISK", "", 7200), LookupDrive("QEMU HARDDISK", "", 0)
	assert.Equal(t, "Unknown_SSD_Attribute", ssd.Def(7).Name)
	assert.Equal(t, "Seek_Error_Rate", hdd.Def(7).Name)
	assert.Equal(t, "Seek_Error_Rate", unknown.Def(7).Name)
	assert.Equal(t, "Unknown_HDD_Attribute", hdd.Def(177).Name)
	assert.Equal(t, "Wear_Leveling_Count", ssd.Def(177).Name)
	assert.Equal(t, "SSD_Life_Left", LookupDrive("PNY CS900 240GB SSD", "", 1).Def(231).Name)
	assert.Equal(t, "Unknown_SSD_Attribute", LookupDrive("QEMU HARDDISK", "", 1).Def(231).Name)
}

// Every database entry compiles (anchored), names its attributes, uses a
// known format and a byte order the decoder accepts.
func TestDatabaseIsWellFormed(t *testing.T) {
	check := func(where string, defs map[uint8]AttrDef) {
		for id, d := range defs {
			assert.NotEmpty(t, d.Name, "%s attribute %d", where, id)
			assert.Less(t, d.Format, numFormats, "%s attribute %d", where, id)
			if d.ByteOrder != "" {
				assert.True(t, validByteOrder(d.ByteOrder), "%s attribute %d byte order %q", where, id, d.ByteOrder)
			}
		}
	}
	check("defaults", defaultDefs)
	require.Greater(t, len(driveDB), 500, "the whole smartmontools database, not a hand-picked few")
	require.Equal(t, len(driveDB), Builtin().Len())
	for _, e := range driveDB {
		check(e.family+" "+e.model, e.defs)
	}
}

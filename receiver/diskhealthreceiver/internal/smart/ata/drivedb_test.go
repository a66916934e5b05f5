package ata

import (
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Lookups in smartctl's drive database (Debian 12's smartmontools 7.3 drivedb.h): the entry, the
// family's presets over the defaults, HDD/SSD-only defaults. TestDriveDBAgreesWithSmartctl checks
// the names against smartctl itself.
func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		model, firmware, family string
		known                   bool
		checks                  map[uint8]AttrDef
	}{
		{"ST4000DM004-2CV104", "", "Seagate BarraCuda 3.5 (SMR)", true, map[uint8]AttrDef{
			1: {Name: "Raw_Read_Error_Rate"}, 7: {Name: "Seek_Error_Rate", only: hddOnly},
			9: {Name: "Power_On_Hours", Format: FormatMsec24Hour32}, 188: {Name: "Command_Timeout", Format: FormatRaw16},
			195: {Name: "Hardware_ECC_Recovered"}, 240: {Name: "Head_Flying_Hours", Format: FormatMsec24Hour32},
			5: {Name: "Reallocated_Sector_Ct", Format: FormatRaw16OptRaw16}, 194: {Name: "Temperature_Celsius", Format: FormatTempMinMax},
		}},
		{"PNY CS900 240GB SSD", "", "Phison Driven SSDs", true, map[uint8]AttrDef{
			197: {Name: "Not_In_Use"}, 231: {Name: "SSD_Life_Left"}, 241: {Name: "Lifetime_Writes_GiB"}, 242: {Name: "Lifetime_Reads_GiB"},
		}},
		{"CT1000MX500SSD1", "", "Crucial/Micron Client SSDs", true, map[uint8]AttrDef{202: {Name: "Percent_Lifetime_Remain"}}},
		{"HGST HUH721212ALE604", "", "HGST Ultrastar DC HC520 (He12)", true, map[uint8]AttrDef{22: {Name: "Helium_Level"}}},
		{"QEMU HARDDISK", "", "", false, map[uint8]AttrDef{
			1: {Name: "Raw_Read_Error_Rate"}, 188: {Name: "Command_Timeout"}, 9: {Name: "Power_On_Hours", Format: FormatRaw24OptRaw8},
			22: {Name: unknownName}, 100: {Name: unknownName},
		}},
		{"XST4000DM004-2CV104", "", "", false, nil}, // matches are anchored
		{"", "", "", false, nil},
	} {
		p := smartctlDB(t).LookupDrive(tc.model, tc.firmware, 0)
		assert.Equal(t, tc.family, p.Family, tc.model)
		assert.Equal(t, tc.known, p.Known, tc.model)
		for id, d := range tc.checks {
			assert.Equal(t, d, p.Def(id), "%s attribute %d", tc.model, id)
		}
	}
	assert.Equal(t, lookup(t, "ST4000DM004-2CV104"), smartctlDB(t).LookupDrive("ST4000DM004-2CV104", "", 0), "memoised lookups are the same")
}

// A default name restricted to one medium is unknown on the other, as
// smartctl names it; a family's own definition is never restricted.
func TestLookupMediumRestriction(t *testing.T) {
	ssd, hdd, unknown := smartctlDB(t).LookupDrive("QEMU HARDDISK", "", 1), smartctlDB(t).LookupDrive("QEMU HARDDISK", "", 7200), smartctlDB(t).LookupDrive("QEMU HARDDISK", "", 0)
	assert.Equal(t, "Unknown_SSD_Attribute", ssd.Def(7).Name)
	assert.Equal(t, "Seek_Error_Rate", hdd.Def(7).Name)
	assert.Equal(t, "Seek_Error_Rate", unknown.Def(7).Name)
	assert.Equal(t, "Unknown_HDD_Attribute", hdd.Def(177).Name)
	assert.Equal(t, "Wear_Leveling_Count", ssd.Def(177).Name)
	assert.Equal(t, "SSD_Life_Left", smartctlDB(t).LookupDrive("PNY CS900 240GB SSD", "", 1).Def(231).Name)
	assert.Equal(t, "Unknown_SSD_Attribute", smartctlDB(t).LookupDrive("QEMU HARDDISK", "", 1).Def(231).Name)
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
	db := smartctlDB(t)
	check("defaults", db.defaults)
	require.Greater(t, db.Len(), 500, "the whole smartmontools database, not a hand-picked few")
	for _, e := range db.entries {
		defs := maps.Clone(e.defs)
		for id, d := range defs {
			if d.Name == "" { // a format-only preset ("-v 9,msec24hour32") keeps the default name
				d.Name = db.defaults[id].Name
				defs[id] = d
			}
		}
		check(e.family+" "+e.dbEntry.model, defs)
	}
}

// No package of the repository links another module's unexported symbols (issue 31): the drive
// database is read from drivedb.h, never reached inside a dependency, whose layout may change under a
// build that still compiles.
func TestNoLinkname(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	root := filepath.Dir(strings.TrimSpace(string(out)))
	directive := "//go:" + "linkname" // spelt so that this file does not hold it
	files := 0
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir // VCS data, build output
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		assert.NotContains(t, string(b), directive, "%s links by name", path)
		return nil
	}))
	require.Greater(t, files, 100, "the walk saw the repository")
}

package ata

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// writtenBack is smartctl's drive database as we parsed it, written back as a drivedb.h
// (writeDriveDBH).
func writtenBack(t testing.TB) []byte {
	t.Helper()
	var b strings.Builder
	require.NoError(t, writeDriveDBH(&b, smartctlDB(t)))
	return []byte(b.String())
}

// assertSameNames checks that two databases name and decode every attribute
// of every model alike, on a drive of unknown, solid-state and rotating media.
func assertSameNames(t *testing.T, want, got *DriveDB, models []string) {
	t.Helper()
	for _, model := range models {
		for _, rot := range []uint16{0, 1, 7200} {
			w, g := want.LookupDrive(model, "", rot), got.LookupDrive(model, "", rot)
			require.Equal(t, w.Known, g.Known, model)
			require.Equal(t, w.Family, g.Family, model)
			for id := 1; id <= 255; id++ {
				require.Equal(t, w.Def(uint8(id)), g.Def(uint8(id)), "%s (rotation %d) attribute %d", model, rot, id)
			}
		}
	}
}

// A database written back as a drivedb.h and read again is the same database: the same entries in
// the same order, the same defaults, and so the same names on the fleet models
// TestDriveDBAgreesWithSmartctl checks against smartctl -P showall.
func TestParseDriveDBRoundTrip(t *testing.T) {
	orig := smartctlDB(t)
	db, err := ParseDriveDB(writtenBack(t))
	require.NoError(t, err)
	require.True(t, db.Complete())
	assert.Equal(t, orig.Version(), db.Version())
	assert.Equal(t, orig.defaults, db.defaults)
	require.Equal(t, orig.Len(), db.Len())
	for i, e := range db.entries {
		require.Equal(t, *orig.entries[i].dbEntry, *e.dbEntry, "entry %d", i)
	}
	require.Len(t, fleetModels, 55)
	assertSameNames(t, orig, db, fleetModels)
	assertSameNames(t, orig, db, []string{"QEMU HARDDISK", "KINGSTON SSDNow 40GB", ""})
}

// A newer drivedb.h renames an attribute and adds a family: the runtime
// database names them so, with no rebuild; every model another entry matches is unchanged.
func TestParseDriveDBNewerRevision(t *testing.T) {
	base := string(writtenBack(t))
	const model = "ST4000DM004-2CV104"
	require.Equal(t, "Command_Timeout", lookup(t, model).Def(188).Name)
	require.False(t, lookup(t, "ACME FUTUREDISK 9000").Known)

	entry := smartctlDB(t).LookupDrive(model, "", 0).Entry
	i := strings.Index(base, cString(entry))
	require.Positive(t, i)
	const preset = "-v 188,raw16 " // format only: the default name
	j := i + strings.Index(base[i:], preset)
	require.Greater(t, j, i)
	newer := base[:j] + "-v 188,raw16,Command_Timeout_Count " + base[j+len(preset):]
	newer = strings.Replace(newer, `  { "DEFAULT",`, `  { "ACME FutureDisk", // a family released after the build
    "ACME FUTUREDISK [0-9]+",
    "", "",
    "-v 9,msec24hour32 "
    "-v 231,raw48,Life_Left_Percent"
  },
  { "DEFAULT",`, 1)

	db, err := ParseDriveDB([]byte(newer))
	require.NoError(t, err)
	assert.Equal(t, "Command_Timeout_Count", db.LookupDrive(model, "", 0).Def(188).Name)
	assert.Equal(t, AttrDef{Name: "Command_Timeout_Count", Format: FormatRaw16}, db.LookupDrive(model, "", 0).Def(188))
	acme := db.LookupDrive("ACME FUTUREDISK 9000", "", 1)
	assert.Equal(t, "ACME FutureDisk", acme.Family)
	assert.Equal(t, "Life_Left_Percent", acme.Def(231).Name)
	assert.Equal(t, AttrDef{Name: "Power_On_Hours", Format: FormatMsec24Hour32}, acme.Def(9), "a format-only preset keeps the default name")
	assert.Equal(t, "Wear_Leveling_Count", acme.Def(177).Name, "defaults still apply")
	assert.Equal(t, "Command_Timeout", lookup(t, model).Def(188).Name, "the database it was derived from is untouched")
	others := make([]string, 0, len(fleetModels))
	for _, m := range fleetModels {
		if lookup(t, m).Entry != entry {
			others = append(others, m)
		}
	}
	assertSameNames(t, smartctlDB(t), db, others)
}

// The syntax smartmontools' drivedb.h uses beyond the generated file:
// comments of both kinds between and inside entries, strings split over
// lines, legacy -v arguments, "+" formats, -F options, USB and "$" entries.
func TestParseDriveDBSyntax(t *testing.T) {
	db, err := ParseDriveDB([]byte(`/*
 * drivedb.h - smartmontools drive database file
 */
/*
const drive_settings builtin_knowndrives[] = {
 */
  { "VERSION: 7.5 $Id: drivedb.h 5700 2025-01-01 00:00:00Z chrfranke $",
    "-", "-",
    "Version information",
    ""
  },
  { "DEFAULT",
    "-", "-",
    "Default settings",
    "-v 1,raw48,Raw_Read_Error_Rate "
    //  2-8 Unknown_Attribute
    "-v 9,raw24(raw8),Power_On_Hours "
    "-v 7,raw48,Seek_Error_Rate,HDD "
    "-v 177,raw48,Wear_Leveling_Count,SSD "
    "-v 194,tempminmax,Temperature_Celsius"
  },
  { "Old Maxtor", // legacy arguments
    "Maxtor 4W(040|060)H[34]",
    "",
    "A warning that is not read",
    "-v 9,minutes -v 194,10xCelsius -v 197,increasing -F samsung2 "
    "-v 5,raw48:543210,Realloc_Big_Endian"
  },
  { "$Disabled entry",
    "Maxtor .*",
    "", "", "-v 1,raw48,Never_Used"
  },
  { "USB: Some enclosure; JMicron",
    "0x152d:0x2329",
    "", // 0x0100
    "",
    "-d sat"
  },
  { "", "Firmware bound", "FW1\\.[0-9]", "", "-v 1,hex48,With_Fw" },
  { "Catch-all",
    "Fi"
    "rmware bound|\"Quoted\\\\Model\"",
    "", "", "-v 1,hex56,Without_Fw", },
/*
}; // builtin_knowndrives[]
 */
`))
	require.NoError(t, err)
	assert.Equal(t, "7.5 $Id: drivedb.h 5700 2025-01-01 00:00:00Z chrfranke $", db.Version())
	require.Equal(t, 3, db.Len(), "USB and $ entries are left out")
	m := db.LookupDrive("Maxtor 4W060H4", "", 0)
	assert.Equal(t, "Old Maxtor", m.Family)
	assert.Equal(t, AttrDef{Name: "Power_On_Minutes", Format: FormatMin2Hour}, m.Def(9))
	assert.Equal(t, AttrDef{Name: "Temperature_Celsius_x10", Format: FormatTemp10X}, m.Def(194))
	assert.Equal(t, AttrDef{Name: "Total_Pending_Sectors", Format: FormatRaw48}, m.Def(197))
	assert.Equal(t, AttrDef{Name: "Realloc_Big_Endian", Format: FormatRaw48, ByteOrder: "543210"}, m.Def(5))
	assert.Equal(t, "Raw_Read_Error_Rate", m.Def(1).Name, "the disabled entry never matches")
	assert.Equal(t, "Unknown_SSD_Attribute", db.LookupDrive("Maxtor 4W060H4", "", 1).Def(7).Name)
	assert.Equal(t, "Unknown_Attribute", m.Def(2).Name)

	assert.Equal(t, "With_Fw", db.LookupDrive("Firmware bound", "FW1.2", 0).Def(1).Name)
	assert.Equal(t, "Without_Fw", db.LookupDrive("Firmware bound", "FW2.0", 0).Def(1).Name)
	assert.Equal(t, "Without_Fw", db.LookupDrive(`"Quoted\Model"`, "", 0).Def(1).Name, "escaped quote and backslash")
	assert.False(t, db.LookupDrive("0x152d:0x2329", "", 0).Known)
}

// A file without DEFAULT is an additions file: its entries go first, the
// database it is added to keeps its defaults and version.
func TestDriveDBWithAdditions(t *testing.T) {
	add, err := ParseDriveDB([]byte(`{ "Local", "ST4000DM004-2CV104", "", "", "-v 188,raw48,Local_Name" }`))
	require.NoError(t, err)
	assert.False(t, add.Complete())
	db := smartctlDB(t).WithAdditions(add)
	assert.Equal(t, smartctlDB(t).Version(), db.Version())
	assert.Equal(t, smartctlDB(t).Len()+1, db.Len())
	p := db.LookupDrive("ST4000DM004-2CV104", "", 0)
	assert.Equal(t, "Local", p.Family)
	assert.Equal(t, "Local_Name", p.Def(188).Name)
	assert.Equal(t, "Raw_Read_Error_Rate", p.Def(1).Name, "the database's defaults")
	assert.Equal(t, "Seagate BarraCuda 3.5 (SMR)", lookup(t, "ST4000DM004-2CV104").Family)
}

// Without a database nothing is known and every attribute is Unknown_Attribute, as smartctl names
// an attribute no drivedb.h entry (DEFAULT included) defines; additions alone name what they add.
func TestNoDriveDB(t *testing.T) {
	var none *DriveDB
	assert.Zero(t, none.Len())
	assert.False(t, none.Complete())
	p := none.LookupDrive("ST4000DM004-2CV104", "", 7200)
	assert.False(t, p.Known)
	for id := 1; id <= 255; id++ {
		assert.Equal(t, AttrDef{Name: unknownName}, p.Def(uint8(id)), "attribute %d", id)
	}
	add, err := ParseDriveDB([]byte(`{ "Local", "ST4000DM004-2CV104", "", "", "-v 188,raw48,Local_Name" }`))
	require.NoError(t, err)
	p = none.WithAdditions(add).LookupDrive("ST4000DM004-2CV104", "", 7200)
	assert.Equal(t, "Local_Name", p.Def(188).Name)
	assert.Equal(t, unknownName, p.Def(1).Name)
}

func TestParseDriveDBErrors(t *testing.T) {
	entry := func(presets string) string {
		return `{ "DEFAULT", "-", "-", "", "-v 1,raw48,A" },` + "\n" + `{ "F", "M", "", "", "` + presets + `" }`
	}
	for _, tc := range []struct{ in, want string }{
		{`{ "F", "M", "", "" }`, `line 1: entry field 4: want ',' or '}', got '}'`},
		{`{ "F", "M", "", "", "", "" }`, `line 1: want '}' to close the entry, got a string`},
		{`{ "F", "M", "", "", "" } { "G"`, `line 1: want ',' after an entry, got '{'`},
		{`const drive_settings x[] = {`, `line 1: unexpected 'c'`},
		{"/* open", "line 1: comment not closed"},
		{"{ \"F\",\n \"M", "line 2: string not closed"},
		{"{ \"F\n\"", "line 1: string not closed on its line"},
		{`{ "F", "", "", "", "" }`, `line 1: entry "F": empty model expression`},
		{`{ "F", "M(", "", "", "" }`, `entry "F": model expression: error parsing regexp`},
		{`{ "F", "M", "[", "", "" }`, `entry "F": firmware expression`},
		{entry("-v 1,raw99,X"), `line 2: entry "F": -v 1,raw99,X: unknown raw value format "raw99"`},
		{entry("-v 0,raw48,X"), `attribute ID must be 1 to 255`},
		{entry("-v N,raw48,X"), `attribute ID must be 1 to 255`},
		{entry("-v 256,raw48,X"), `attribute ID must be 1 to 255`},
		{entry("-v 1,raw48:9,X"), `byte order "9"`},
		{entry("-v 1,raw48,X,NVME"), `flag "NVME"`},
		{entry("-v 1,raw48,A_Name_Far_Longer_Than_Thirty_Two_Bytes"), `name must be 1 to 32`},
		{entry("-v 1,raw48,"), `name must be 1 to 32`},
		{entry("-v 1"), `want ID,FORMAT`},
		{entry("-v"), `option -v without a value`},
		{entry("-F bogus"), `unknown firmware bug option`},
		{entry("-d sat"), `unknown option -d`},
		{"\xff", "not valid UTF-8"},
	} {
		_, err := ParseDriveDB([]byte(tc.in))
		require.ErrorContains(t, err, tc.want, tc.in)
	}
	_, err := ParseDriveDB(make([]byte, MaxDriveDBSize+1))
	require.ErrorContains(t, err, "more than")
}

// Debian's smartmontools ships the drivedb.h its smartctl was built with.
// Read by our parser, it names the fleet models' attributes exactly as that
// smartctl does when handed the same file (-B FILE): the same revision, the
// same names.
func TestParseDriveDBAgreesWithSmartctlOnItsFile(t *testing.T) {
	bin := smartctl(t)
	const file = "/usr/share/smartmontools/drivedb.h"
	b, err := os.ReadFile(file)
	require.NoError(t, err, "the smartmontools package installs %s", file)
	db, err := ParseDriveDB(b)
	require.NoError(t, err)
	require.True(t, db.Complete())
	var agree, total, known int
	for _, model := range fleetModels {
		out, _ := exec.Command(bin, "-B", file, "-P", "showall", model).CombinedOutput()
		require.Contains(t, string(out), "MODEL:", "%s: %s", model, out)
		sc := parseShowall(string(out))
		p := db.LookupDrive(model, "", 0)
		require.Equal(t, sc.known, p.Known, model)
		if !sc.known {
			continue
		}
		known++
		assert.Equal(t, sc.family, p.Family, model)
		assert.Equal(t, sc.entry, p.Entry, model)
		for id, name := range sc.attrs {
			total++
			if assert.Equal(t, name, p.Def(id).Name, "%s attribute %d", model, id) {
				agree++
			}
		}
	}
	t.Logf("drivedb.h %q (%d entries): %d/%d fleet models known to both; attribute names agreeing with smartctl -B: %d/%d",
		db.Version(), db.Len(), known, len(fleetModels), agree, total)
	assert.Positive(t, total)
}

// Parsing a whole drivedb.h is done once at start; its cost is bounded by the
// file size cap.
func BenchmarkParseDriveDB(b *testing.B) {
	src := testkit.DriveDBH(b)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		db, err := ParseDriveDB(src)
		if err != nil || !db.Complete() {
			b.Fatal(err)
		}
	}
}

// Reading the database and its first lookup, which compiles every expression: what a host with an ATA
// disk pays once, at its first SMART read (BenchmarkParseDriveDB is what every host pays at start).
func BenchmarkParseDriveDBFirstLookup(b *testing.B) {
	src := testkit.DriveDBH(b)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		db, err := ParseDriveDB(src)
		if err != nil {
			b.Fatal(err)
		}
		if p := db.LookupDrive(fleetModels[0], "", 7200); !p.Known {
			b.Fatal(fleetModels[0], " not found")
		}
	}
}

func FuzzParseDriveDB(f *testing.F) {
	f.Add([]byte(`{ "VERSION: x", "-", "-", "", "" }, { "DEFAULT", "-", "-", "", "-v 1,raw48,A -v 7,raw48,B,HDD" }, { "F", "M.*", "1", "", "-v 9,minutes -F samsung" },`))
	f.Add([]byte("/* c */ // d\n{ \"F\", \"A\" \"B\", \"\", \"\", \"-v 5,raw16(raw16):r543210,X\" }"))
	f.Add([]byte(`{ "USB: ", "0x1:0x2", "", "", "-d sat" }, { "$x", "y", "", "", "" }`))
	if b, err := os.ReadFile(filepath.Join("/usr/share/smartmontools", "drivedb.h")); err == nil && len(b) < 1<<20 {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		db, err := ParseDriveDB(b)
		if err != nil {
			return
		}
		for _, e := range db.entries {
			for id, d := range e.defs {
				if id == 0 || (d.Name != "" && !validAttrName(d.Name)) || d.Format >= numFormats || (d.ByteOrder != "" && !validByteOrder(d.ByteOrder)) {
					t.Fatalf("entry %q attribute %d: %+v", e.family, id, d)
				}
			}
			p := db.LookupDrive(e.family, "", 1)
			for id := 1; id <= 255; id++ {
				if n := p.Def(uint8(id)).Name; !validAttrName(n) {
					t.Fatalf("attribute %d named %q", id, n)
				}
			}
		}
		if len(db.Version()) > 128 {
			t.Fatalf("version of %d bytes", len(db.Version()))
		}
	})
}

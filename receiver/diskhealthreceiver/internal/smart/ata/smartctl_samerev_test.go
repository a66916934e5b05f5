package ata

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cString quotes s as a C string literal, as drivedb.h holds its strings.
func cString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// presetArgs writes a table's attribute definitions as smartctl's presets:
// "-v ID,FORMAT[:BYTEORDER][,NAME[,HDD|SSD]]", in ID order (only a default is restricted to a
// medium, and every default is named).
func presetArgs(defs map[uint8]AttrDef) string {
	ids := make([]int, 0, len(defs))
	for id := range defs {
		ids = append(ids, int(id))
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		d := defs[uint8(id)]
		format := d.Format.String()
		if d.ByteOrder != "" {
			format += ":" + d.ByteOrder
		}
		fmt.Fprintf(&b, "-v %d,%s", id, format)
		if d.Name != "" { // a format-only preset keeps the default name
			fmt.Fprintf(&b, ",%s", d.Name)
		}
		switch d.only {
		case hddOnly:
			b.WriteString(",HDD")
		case ssdOnly:
			b.WriteString(",SSD")
		}
		b.WriteString(" ")
	}
	return strings.TrimSpace(b.String())
}

// writeDriveDBH writes a parsed database back in drivedb.h syntax: its VERSION entry, the DEFAULT
// entry (the default names and formats, HDD/SSD flags included) and every family entry in order
// (first match wins in both). What the parser keeps carries no warnings and no firmware-bug presets
// (-F), so those fields are empty.
func writeDriveDBH(w io.Writer, db *DriveDB) error {
	entry := func(family, model, firmware, warning, presets string) error {
		_, err := fmt.Fprintf(w, "  { %s,\n    %s,\n    %s,\n    %s,\n    %s\n  },\n",
			cString(family), cString(model), cString(firmware), cString(warning), cString(presets))
		return err
	}
	if _, err := fmt.Fprintf(w, "/* written back by the diskhealth receiver's tests from the drive database they parsed (%s) */\n", db.Version()); err != nil {
		return err
	}
	if err := entry("VERSION: "+db.Version(), "-", "-", "Version information", ""); err != nil {
		return err
	}
	if err := entry("DEFAULT", "-", "-", "Default settings", presetArgs(db.defaults)); err != nil {
		return err
	}
	for _, e := range db.entries {
		if err := entry(e.family, e.dbEntry.model, e.dbEntry.firmware, "", presetArgs(e.defs)); err != nil {
			return err
		}
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func TestWriteDriveDBH(t *testing.T) {
	db := smartctlDB(t)
	var b strings.Builder
	require.NoError(t, writeDriveDBH(&b, db))
	out := b.String()
	assert.Contains(t, out, `"-v 1,raw48,Raw_Read_Error_Rate -v 2,raw48,Throughput_Performance -v 3,raw16(avg16),Spin_Up_Time`)
	assert.Contains(t, out, `-v 6,raw48,Read_Channel_Margin,HDD`)
	assert.Contains(t, out, `"INTEL SSDSC2[BC]W(060|120|180|240|480)A3[FL]?"`)
	assert.Contains(t, out, `-v 9,msec24hour32,Power_On_Hours_and_Msec`)
	assert.Equal(t, db.Len()+2, strings.Count(out, "\n  },\n"))
}

// The same comparison as TestDriveDBAgreesWithSmartctl, through smartctl's own reader: the
// database as we parsed it, written back as a drivedb.h, is handed to smartctl with -B, so
// smartctl's matching and naming run on what our parser kept (formats, byte orders, HDD/SSD flags,
// entry order). "-B +FILE" puts the file's entries before smartctl's own (first match wins: ours),
// "-B FILE" replaces them: both are measured.
func TestDriveDBAgreesWithSmartctlSameRevision(t *testing.T) {
	bin := smartctl(t)
	parsed := smartctlDB(t)
	db := filepath.Join(t.TempDir(), "drivedb.h")
	f, err := os.Create(db)
	require.NoError(t, err)
	require.NoError(t, writeDriveDBH(f, parsed))
	require.NoError(t, f.Close())

	// -P showall without a model checks and lists every entry: smartctl's regex engine and preset
	// parser accept all of ours (exit status 0, no "drivedb.h(LINE): ..." complaint).
	out, err := exec.Command(bin, "-B", db, "-P", "showall").CombinedOutput()
	require.NoError(t, err, "smartctl -B %s -P showall: %s", db, tail(string(out), 2000))
	require.Equal(t, parsed.Len()+2, strings.Count(string(out), "MODEL REGEXP:"), "smartctl lists every entry (VERSION, DEFAULT and the families)")
	t.Logf("smartctl accepts all %d entries of the generated drivedb.h (%s)", parsed.Len(), parsed.Version())

	for _, mode := range []struct{ name, arg string }{{"prepended (-B +FILE)", "+" + db}, {"replacing (-B FILE)", db}} {
		var agree, total, known, sameFamily, sameEntry, theirsKnown int
		var misses []string
		for _, model := range fleetModels {
			out, _ := exec.Command(bin, "-B", mode.arg, "-P", "showall", model).CombinedOutput()
			require.Contains(t, string(out), "MODEL:", "%s: %s", model, out)
			require.NotRegexp(t, `drivedb\.h\(\d+\)`, string(out), "smartctl refuses the generated drivedb.h")
			sc := parseShowall(string(out))
			p := lookup(t, model)
			if p.Known {
				known++
			}
			if !sc.known {
				if p.Known {
					misses = append(misses, model+": smartctl matches no entry, ours "+strconv.Quote(p.Entry))
				}
				continue
			}
			theirsKnown++
			if sc.family == p.Family {
				sameFamily++
			}
			if sc.entry == p.Entry {
				sameEntry++
			} else {
				misses = append(misses, fmt.Sprintf("%s: smartctl matches entry %q, ours %q", model, sc.entry, p.Entry))
			}
			for id, name := range sc.attrs {
				total++
				if got := p.Def(id).Name; got == name {
					agree++
				} else {
					misses = append(misses, fmt.Sprintf("%s: attribute %d smartctl %q, ours %q", model, id, name, got))
				}
			}
		}
		slices.Sort(misses)
		for _, m := range misses {
			t.Logf("%s: disagreement: %s", mode.name, m)
		}
		pct := 100 * float64(agree) / float64(max(total, 1))
		t.Logf("%s, drive database %s: families recognised ours %d/%d, smartctl %d/%d; same entry %d, same family %d; attribute names agreeing %d/%d (%.1f %%)",
			mode.name, parsed.Version(), known, len(fleetModels), theirsKnown, len(fleetModels), sameEntry, sameFamily, agree, total, pct)
		assert.GreaterOrEqual(t, pct, 95.0, mode.name)
	}
}

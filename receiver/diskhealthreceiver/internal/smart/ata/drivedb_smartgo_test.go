//go:build linux

package ata

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	smart "github.com/anatol/smart.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What is read through the linked table is what the pinned module's source says, field by field:
// the mirror types have smart.go's layout, and the numbering of formats and restrictions is its own.
// The source is read with go/parser from the module the go command resolves for this build.
func TestLinkedDriveDBIsTheModuleSource(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}|{{.Version}}", smartGoPath).Output()
	require.NoError(t, err)
	dir, version, ok := strings.Cut(strings.TrimSpace(string(out)), "|")
	require.True(t, ok && dir != "", "go list %s: %s", smartGoPath, out)
	assert.Equal(t, version, linkedVersion(t), "a binary's build information names the pinned version")
	defaults, entries, err := parseSmartGoSource(filepath.Join(dir, "ata_device_database.go"))
	require.NoError(t, err)
	assert.Equal(t, defaults, defaultDefs)
	require.Len(t, driveDB, len(entries))
	for i := range entries {
		require.Equal(t, entries[i], driveDB[i], "entry %d", i)
	}
}

// linkedVersion is the built-in database's version in a program built from this package: a main
// package laid over the module by -overlay (nothing is written into the tree), run by the go command.
func linkedVersion(t *testing.T) string {
	dir, err := filepath.Abs("versionprobe")
	require.NoError(t, err)
	src := filepath.Join(t.TempDir(), "main.go")
	require.NoError(t, os.WriteFile(src, []byte(`package main

import (
	"fmt"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
)

func main() { fmt.Print(ata.Builtin().Version) }
`), 0o644))
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(dir, "main.go"): src}})
	require.NoError(t, err)
	ov := filepath.Join(t.TempDir(), "overlay.json")
	require.NoError(t, os.WriteFile(ov, overlay, 0o644))
	out, err := exec.Command("go", "run", "-overlay", ov, "./versionprobe").Output()
	require.NoError(t, err, "%s", out)
	v, ok := strings.CutPrefix(string(out), "smart.go ")
	require.True(t, ok, "%q", out)
	return v
}

// parseSmartGoSource reads smart.go's ataDefaultAttributes and ataDevicesDatabase literals.
func parseSmartGoSource(file string) (map[uint8]AttrDef, []dbEntry, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	f, err := parser.ParseFile(gotoken.NewFileSet(), file, src, 0)
	if err != nil {
		return nil, nil, err
	}
	var defaults map[uint8]AttrDef
	var entries []dbEntry
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range gd.Specs {
			vs, ok := s.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 {
				continue
			}
			lit, ok := vs.Values[0].(*ast.CompositeLit)
			if !ok {
				continue
			}
			switch vs.Names[0].Name {
			case "ataDefaultAttributes":
				if defaults, err = sourceAttrs(lit); err != nil {
					return nil, nil, fmt.Errorf("defaults: %w", err)
				}
			case "ataDevicesDatabase":
				for i, el := range lit.Elts {
					e, err := sourceEntry(el)
					if err != nil {
						return nil, nil, fmt.Errorf("entry %d: %w", i, err)
					}
					entries = append(entries, e)
				}
			}
		}
	}
	if len(defaults) == 0 || len(entries) == 0 {
		return nil, nil, errors.New("no drive database in " + file)
	}
	return defaults, entries, nil
}

func sourceEntry(el ast.Expr) (dbEntry, error) {
	lit, ok := el.(*ast.CompositeLit)
	if !ok || len(lit.Elts) < 4 {
		return dbEntry{}, errors.New("not a drive entry literal")
	}
	var e dbEntry
	var err error
	for i, p := range []*string{&e.family, &e.model, &e.firmware} {
		if *p, err = sourceString(lit.Elts[i]); err != nil {
			return e, err
		}
	}
	if m, ok := lit.Elts[3].(*ast.CompositeLit); ok && len(m.Elts) > 0 {
		e.defs, err = sourceAttrs(m)
	}
	return e, err
}

// sourceMedia are smart.go's restrictions as its source spells them.
var sourceMedia = map[string]medium{"0": anyMedium, "ataDeviceAttributeRestrictionNone": anyMedium,
	"ataDeviceAttributeRestrictionHDDOnly": hddOnly, "ataDeviceAttributeRestrictionSSDOnly": ssdOnly}

type smartGoConst struct {
	n int
	f Format
}

// smartGoFormatConsts are smart.go's format constants by name: their value and our format.
var smartGoFormatConsts = map[string]smartGoConst{
	"AtaDeviceAttributeTypeRaw8": {smart.AtaDeviceAttributeTypeRaw8, FormatRaw8}, "AtaDeviceAttributeTypeRaw16": {smart.AtaDeviceAttributeTypeRaw16, FormatRaw16},
	"AtaDeviceAttributeTypeRaw48": {smart.AtaDeviceAttributeTypeRaw48, FormatRaw48}, "AtaDeviceAttributeTypeHex48": {smart.AtaDeviceAttributeTypeHex48, FormatHex48},
	"AtaDeviceAttributeTypeRaw56": {smart.AtaDeviceAttributeTypeRaw56, FormatRaw56}, "AtaDeviceAttributeTypeHex56": {smart.AtaDeviceAttributeTypeHex56, FormatHex56},
	"AtaDeviceAttributeTypeRaw64": {smart.AtaDeviceAttributeTypeRaw64, FormatRaw64}, "AtaDeviceAttributeTypeHex64": {smart.AtaDeviceAttributeTypeHex64, FormatHex64},
	"AtaDeviceAttributeTypeRaw16OptRaw16": {smart.AtaDeviceAttributeTypeRaw16OptRaw16, FormatRaw16OptRaw16},
	"AtaDeviceAttributeTypeRaw16OptAvg16": {smart.AtaDeviceAttributeTypeRaw16OptAvg16, FormatRaw16OptAvg16},
	"AtaDeviceAttributeTypeRaw24OptRaw8":  {smart.AtaDeviceAttributeTypeRaw24OptRaw8, FormatRaw24OptRaw8},
	"AtaDeviceAttributeTypeRaw24DivRaw24": {smart.AtaDeviceAttributeTypeRaw24DivRaw24, FormatRaw24DivRaw24},
	"AtaDeviceAttributeTypeRaw24DivRaw32": {smart.AtaDeviceAttributeTypeRaw24DivRaw32, FormatRaw24DivRaw32},
	"AtaDeviceAttributeTypeSec2Hour":      {smart.AtaDeviceAttributeTypeSec2Hour, FormatSec2Hour}, "AtaDeviceAttributeTypeMin2Hour": {smart.AtaDeviceAttributeTypeMin2Hour, FormatMin2Hour},
	"AtaDeviceAttributeTypeHalfMin2Hour": {smart.AtaDeviceAttributeTypeHalfMin2Hour, FormatHalfMin2Hour},
	"AtaDeviceAttributeTypeMsec24Hour32": {smart.AtaDeviceAttributeTypeMsec24Hour32, FormatMsec24Hour32},
	"AtaDeviceAttributeTypeTempMinMax":   {smart.AtaDeviceAttributeTypeTempMinMax, FormatTempMinMax},
	"AtaDeviceAttributeTypeTemp10X":      {smart.AtaDeviceAttributeTypeTemp10X, FormatTemp10X},
}

func sourceAttrs(m *ast.CompositeLit) (map[uint8]AttrDef, error) {
	out := map[uint8]AttrDef{}
	for _, el := range m.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			return nil, errors.New("attribute map element is not key: value")
		}
		k, ok := kv.Key.(*ast.BasicLit)
		if !ok {
			return nil, errors.New("attribute ID is not a literal")
		}
		id, err := strconv.Atoi(k.Value)
		if err != nil || id < 0 || id > 255 {
			return nil, fmt.Errorf("attribute ID %s", k.Value)
		}
		v, ok := kv.Value.(*ast.CompositeLit)
		if !ok || len(v.Elts) != 4 {
			return nil, fmt.Errorf("attribute %d: not a 4-field literal", id)
		}
		var a AttrDef
		if a.Name, err = sourceString(v.Elts[0]); err != nil {
			return nil, err
		}
		if a.ByteOrder, err = sourceString(v.Elts[2]); err != nil {
			return nil, err
		}
		c, ok := smartGoFormatConsts[fmt.Sprint(v.Elts[1])]
		if !ok {
			return nil, fmt.Errorf("attribute %d: format %v", id, v.Elts[1])
		}
		a.Format = c.f
		r := fmt.Sprint(v.Elts[3])
		if b, isLit := v.Elts[3].(*ast.BasicLit); isLit {
			r = b.Value
		}
		if a.only, ok = sourceMedia[r]; !ok {
			return nil, fmt.Errorf("attribute %d: restriction %s", id, r)
		}
		out[uint8(id)] = a
	}
	return out, nil
}

func sourceString(e ast.Expr) (string, error) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != gotoken.STRING {
		return "", fmt.Errorf("%v is not a string literal", e)
	}
	return strconv.Unquote(b.Value)
}

// Our formats in smart.go's numbering are its constants' values, and it has no format we do not
// decode.
func TestFormatsMatchSmartGo(t *testing.T) {
	for name, c := range smartGoFormatConsts {
		assert.Equal(t, c.f, smartGoFormats[c.n-1], name)
	}
	assert.Len(t, smartGoFormatConsts, int(numFormats))
	assert.Len(t, smartGoFormats, int(numFormats))
	assert.Len(t, smartGoFormats, smart.AtaDeviceAttributeTypeTemp10X, "smart.go's last format is the last we map")
}

//go:build linux

package ata

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	smart "github.com/anatol/smart.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The committed table is exactly what gendrivedb makes of the smart.go
// version pinned in go.mod: bumping the pin without `go generate` fails here.
func TestDriveDBIsGenerated(t *testing.T) {
	out := filepath.Join(t.TempDir(), "drivedb_gen.go")
	cmd := exec.Command("go", "run", "./internal/gendrivedb", "-o", out)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Run())
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	got, err := os.ReadFile("drivedb_gen.go")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "drivedb_gen.go is stale: run go generate ./receiver/diskhealthreceiver/internal/smart/ata")
}

// gendrivedb maps smart.go's format constants to ours by name; the numbering
// is the same too, so a renamed or inserted smart.go format shows up here.
func TestFormatsMatchSmartGo(t *testing.T) {
	for f, s := range map[Format]int{
		FormatRaw8: smart.AtaDeviceAttributeTypeRaw8, FormatRaw16: smart.AtaDeviceAttributeTypeRaw16,
		FormatRaw48: smart.AtaDeviceAttributeTypeRaw48, FormatHex48: smart.AtaDeviceAttributeTypeHex48,
		FormatRaw56: smart.AtaDeviceAttributeTypeRaw56, FormatHex56: smart.AtaDeviceAttributeTypeHex56,
		FormatRaw64: smart.AtaDeviceAttributeTypeRaw64, FormatHex64: smart.AtaDeviceAttributeTypeHex64,
		FormatRaw16OptRaw16: smart.AtaDeviceAttributeTypeRaw16OptRaw16, FormatRaw16OptAvg16: smart.AtaDeviceAttributeTypeRaw16OptAvg16,
		FormatRaw24OptRaw8: smart.AtaDeviceAttributeTypeRaw24OptRaw8, FormatRaw24DivRaw24: smart.AtaDeviceAttributeTypeRaw24DivRaw24,
		FormatRaw24DivRaw32: smart.AtaDeviceAttributeTypeRaw24DivRaw32, FormatSec2Hour: smart.AtaDeviceAttributeTypeSec2Hour,
		FormatMin2Hour: smart.AtaDeviceAttributeTypeMin2Hour, FormatHalfMin2Hour: smart.AtaDeviceAttributeTypeHalfMin2Hour,
		FormatMsec24Hour32: smart.AtaDeviceAttributeTypeMsec24Hour32, FormatTempMinMax: smart.AtaDeviceAttributeTypeTempMinMax,
		FormatTemp10X: smart.AtaDeviceAttributeTypeTemp10X,
	} {
		assert.Equal(t, s, smartGoType(f), f.String())
	}
	assert.Equal(t, smart.AtaDeviceAttributeTypeTemp10X, int(numFormats), "smart.go has a format we do not decode")
}

// smartGoType is smart.go's number for a format: ours start at raw48 = 0.
func smartGoType(f Format) int {
	order := []Format{FormatRaw8, FormatRaw16, FormatRaw48, FormatHex48, FormatRaw56, FormatHex56, FormatRaw64, FormatHex64,
		FormatRaw16OptRaw16, FormatRaw16OptAvg16, FormatRaw24OptRaw8, FormatRaw24DivRaw24, FormatRaw24DivRaw32,
		FormatSec2Hour, FormatMin2Hour, FormatHalfMin2Hour, FormatMsec24Hour32, FormatTempMinMax, FormatTemp10X}
	for i, o := range order {
		if o == f {
			return i + 1
		}
	}
	return 0
}

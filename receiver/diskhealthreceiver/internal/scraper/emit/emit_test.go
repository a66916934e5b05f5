package emit

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
)

func TestSetIfNotEmpty(t *testing.T) {
	var got []string
	set := func(v string) { got = append(got, v) }
	SetIfNotEmpty(set, "")
	SetIfNotEmpty(set, "sda")
	assert.Equal(t, []string{"sda"}, got)
}

func TestCountErrors(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	assert.Equal(t, 1, CountErrors(a))
	assert.Equal(t, 2, CountErrors(errors.Join(a, b)))
	assert.Equal(t, 3, CountErrors(fmt.Errorf("file: %w", errors.Join(a, b, a))))

	// A cgroup walk joins one error per cgroup; each parse error counts its bad lines, kept or not.
	var lines *parseerr.Lines
	for i := range 12 {
		lines = lines.Add(&parseerr.Line{File: "io.stat", Line: i + 1, Err: strconv.ErrSyntax})
	}
	assert.Equal(t, 13, CountErrors(errors.Join(fmt.Errorf("cgroup /a: %w", lines), fmt.Errorf("cgroup /b: %w", a))))
}

func TestInt(t *testing.T) {
	assert.Equal(t, int64(0), Int(0))
	assert.Equal(t, int64(math.MaxInt64), Int(math.MaxInt64))
	assert.Equal(t, int64(math.MaxInt64), Int(1<<63), "2^63 is clamped, not -9.22e18")
	assert.Equal(t, int64(math.MaxInt64), Int(math.MaxUint64))
}

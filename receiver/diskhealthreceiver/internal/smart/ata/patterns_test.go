package ata

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// hostileDriveDB is a drivedb.h within the byte and entry caps: a DEFAULT entry and
// maxDriveDBEntries family entries whose model expression is pattern, its "#" replaced by the
// entry's index (distinct expressions are not compiled once).
func hostileDriveDB(t testing.TB, pattern string) []byte {
	var b strings.Builder
	b.WriteString(`{ "DEFAULT", "-", "-", "", "-v 1,raw48,Raw_Read_Error_Rate" },` + "\n")
	for i := range maxDriveDBEntries {
		fmt.Fprintf(&b, `{ "F", "%s", "", "", "" },`+"\n", strings.ReplaceAll(pattern, "#", fmt.Sprintf("%05d", i)))
	}
	require.Less(t, b.Len(), MaxDriveDBSize)
	return []byte(b.String())
}

// allocated is what fn allocates on the heap, in bytes: deterministic for a given input, unlike
// the time it takes.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// maxParseAlloc bounds what reading any drivedb.h within the caps may allocate. The budget for
// compiled patterns allows ~10 times smartmontools' drivedb.h; reaching it costs ~100 MiB of
// short-lived allocation. Without the budget the first case below allocated 29 GiB, held 6.7 GiB
// and took three minutes.
const maxParseAlloc = 192 << 20

// A drive database within every byte and entry cap whose expressions would compile to gigabytes is
// refused, naming the budget, within a bounded allocation; one expression repeated in every entry
// is compiled once and loads.
func TestDriveDBPatternBudget(t *testing.T) {
	for _, tc := range []struct {
		name, pattern string
		loads         bool
	}{
		{"counted repeats", `[a-z]{1,1000}#`, false},
		{"unicode classes", `\\pL\\pL\\pL\\pL#`, false},
		{"one expression in every entry", `[a-z]{1,1000}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := hostileDriveDB(t, tc.pattern)
			var db *DriveDB
			var err error
			n := allocated(func() { db, err = ParseDriveDB(src) })
			t.Logf("%d bytes, %d entries: %d MiB allocated", len(src), maxDriveDBEntries, n>>20)
			assert.Less(t, n, uint64(maxParseAlloc))
			if tc.loads {
				require.NoError(t, err)
				assert.Equal(t, maxDriveDBEntries, db.Len())
				return
			}
			require.ErrorContains(t, err, "the budget for compiled patterns")
			assert.Nil(t, db)
		})
	}
}

// One expression longer than any drivedb.h holds is refused before it is parsed.
func TestDriveDBPatternTooLong(t *testing.T) {
	_, err := ParseDriveDB([]byte(`{ "F", "` + strings.Repeat("a|", maxPatternBytes/2+1) + `a", "", "", "" }`))
	require.ErrorContains(t, err, fmt.Sprintf("more than %d", maxPatternBytes))
}

// smartmontools' own drivedb.h loads whole, well inside the budget.
func TestDriveDBPatternBudgetFitsSmartmontools(t *testing.T) {
	src := testkit.DriveDBH(t)
	var db *DriveDB
	var err error
	n := allocated(func() { db, err = ParseDriveDB(src) })
	require.NoError(t, err)
	require.Greater(t, db.Len(), 500)
	var b patternBudget
	for _, e := range db.entries {
		_, err := b.compile(e.dbEntry.model)
		require.NoError(t, err)
		if e.dbEntry.firmware != "" {
			_, err = b.compile(e.dbEntry.firmware)
			require.NoError(t, err)
		}
	}
	t.Logf("%s: %d entries, %d distinct expressions, ~%d instructions (%.0f %% of the budget), %d runes (%.0f %%), %d KiB allocated",
		db.Version(), db.Len(), len(b.compiled), b.spent.insts, 100*float64(b.spent.insts)/maxPatternInsts,
		b.spent.runes, 100*float64(b.spent.runes)/maxPatternRunes, n>>10)
	assert.Less(t, b.spent.insts, int64(maxPatternInsts/4), "room for the database to grow fourfold")
	assert.Less(t, b.spent.runes, int64(maxPatternRunes/4), "room for the database to grow fourfold")
}

// Refusing the first hostile database above: what it costs (the budget bounds it; see
// TestDriveDBPatternBudget for the allocation bound).
func BenchmarkParseHostileDriveDB(b *testing.B) {
	src := hostileDriveDB(b, `[a-z]{1,1000}#`)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseDriveDB(src); err == nil {
			b.Fatal("loaded")
		}
	}
}

package ata

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
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
		err := b.check(e.dbEntry.model)
		require.NoError(t, err)
		if e.dbEntry.firmware != "" {
			err = b.check(e.dbEntry.firmware)
			require.NoError(t, err)
		}
	}
	t.Logf("%s: %d entries, %d distinct expressions, ~%d instructions (%.0f %% of the budget), %d runes (%.0f %%), %d KiB allocated",
		db.Version(), db.Len(), len(b.seen), b.spent.insts, 100*float64(b.spent.insts)/maxPatternInsts,
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

// live is the heap that stays reachable, in bytes, after a collection.
func live() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Reading smartmontools' drivedb.h checks its expressions but compiles none; the first lookup compiles
// them all, once, for every lookup that follows, including lookups running at the same time and a
// database with additions made from it. What the compiled expressions hold is what a host without an
// ATA disk no longer carries.
func TestDriveDBCompilesOnFirstLookup(t *testing.T) {
	src := testkit.DriveDBH(t)
	before := live()
	db, err := ParseDriveDB(src)
	require.NoError(t, err)
	read := live()
	for _, e := range db.entries {
		require.Nil(t, e.model, e.family)
		require.Nil(t, e.firmware, e.family)
	}
	extra, err := ParseDriveDB([]byte(`{ "Extra family", "EXTRA MODEL .*", "", "", "-v 9,msec24hour32" },`))
	require.NoError(t, err)
	merged := db.WithAdditions(extra)

	var wg sync.WaitGroup
	presets := make([]Preset, 8)
	for i := range presets {
		wg.Go(func() {
			if i%2 == 0 {
				presets[i] = db.LookupDrive(fleetModels[0], "", 7200)
			} else {
				presets[i] = merged.LookupDrive("EXTRA MODEL 1", "", 7200)
			}
		})
	}
	wg.Wait()
	compiled := live()
	runtime.KeepAlive(db)
	for i, p := range presets {
		require.True(t, p.Known, "lookup %d", i)
	}
	assert.Equal(t, "Extra family", presets[1].Family)
	for _, e := range db.entries {
		require.NotNil(t, e.model, e.family)
		require.Equal(t, e.dbEntry.firmware != "", e.firmware != nil, e.family)
	}
	t.Logf("%s: %d entries; held after reading %d KiB, after the first lookups %d KiB more (both databases)",
		db.Version(), db.Len(), (read-before)>>10, (compiled-read)>>10)
	assert.Less(t, read-before, compiled-read, "the compiled expressions are most of what the database holds")
}

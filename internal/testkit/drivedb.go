package testkit

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// debianDriveDBH is the drive database Debian's smartmontools package installs (its postinst copies
// it to /var/lib/smartmontools/drivedb/drivedb.h, where smartctl reads it).
const debianDriveDBH = "/usr/share/smartmontools/drivedb.h"

// DriveDBH returns the drivedb.h Debian's smartctl names ATA attributes from, installing
// smartmontools when it is missing: the tests that compare names with smartctl's feed the receiver
// the same data.
func DriveDBH(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(Tool(tb, debianDriveDBH, "smartmontools"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

var parsedDriveDB struct {
	sync.Once
	db  any
	err error
}

// ParsedDriveDBH is DriveDBH parsed by parse (the receiver's ata.ParseDriveDB, which the kit cannot
// import), once per test binary: the decoding tests name attributes from it.
func ParsedDriveDBH[T any](tb testing.TB, parse func([]byte) (T, error)) T {
	tb.Helper()
	b := DriveDBH(tb)
	parsedDriveDB.Do(func() { parsedDriveDB.db, parsedDriveDB.err = parse(b) })
	if parsedDriveDB.err != nil {
		tb.Fatal(fmt.Errorf("%s: %w", debianDriveDBH, parsedDriveDB.err))
	}
	return parsedDriveDB.db.(T)
}

//go:build !linux

package ata

// smart.go's NVMe code does not build for every other platform without cgo, and the receiver reads
// SMART only on Linux: elsewhere the built-in database is empty and a drivedb.h read at run time is
// the only one.
func smartGoDB() (map[uint8]AttrDef, []dbEntry, error) { return map[uint8]AttrDef{}, nil, nil }

func smartGoVersion() string { return "(not built in on this platform)" }

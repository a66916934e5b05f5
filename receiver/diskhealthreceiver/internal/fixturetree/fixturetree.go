// Package fixturetree gives tests a committed sysfs fixture tree under its real names. A Go module zip
// refuses any file whose path holds ':' (so would every user's `go get` of this module), while sysfs
// names are full of them (8:1, pci0000:00, target0:0:0); the trees are committed with each ':' written
// %3A and Copy restores them.
package fixturetree // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fixturetree"

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Encoded is how a ':' is written in a committed name.
const Encoded = "%3A"

// Name is a committed name under its real name.
func Name(s string) string { return strings.ReplaceAll(s, Encoded, ":") }

// Copy copies the tree at src (files, directories, symbolic links, whose targets are written with real
// names) into a new directory of tb's, under real names, and returns it.
func Copy(tb testing.TB, src string) string {
	tb.Helper()
	dst := tb.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, Name(rel))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(Name(target), to)
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, data, 0o644)
		}
	})
	if err != nil {
		tb.Fatalf("fixture tree %s: %v", src, err)
	}
	return dst
}

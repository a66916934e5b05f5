package mountstats

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: any input parses without panicking, every mount it returns has a mount point and a
// bounded number of operations and transports, and parsing is deterministic.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed fixtures: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mounts, _ := Parse(data)
		again, _ := Parse(data)
		if len(mounts) != len(again) {
			t.Fatalf("two parses of the same bytes differ: %d and %d mounts", len(mounts), len(again))
		}
		for i := range mounts {
			m := &mounts[i]
			if len(m.Ops) > MaxOps || m.Transports > MaxTransports {
				t.Fatalf("mount %q keeps %d ops and %d transports", m.MountPoint, len(m.Ops), m.Transports)
			}
			for _, o := range m.Ops {
				if !opName([]byte(o.Name)) {
					t.Fatalf("operation name %q kept", o.Name)
				}
			}
			total := m.Total()
			var sum uint64
			for _, c := range m.Classes() {
				sum = sat(sum, c.Ops)
			}
			if sum != total.Ops {
				t.Fatalf("classes sum to %d ops, the total is %d", sum, total.Ops)
			}
			if Reset(m, m) {
				t.Fatalf("a reading is a reset of itself")
			}
		}
	})
}

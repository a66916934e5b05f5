package fsusage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
)

// escapeField writes a value the way the kernel mangles it, plus commas
// (\054), which seq_show_option escapes in option values.
func escapeField(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\\', ',':
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// formatLine writes a Mount back as a mountinfo line that parses to it.
func formatLine(m *Mount) string {
	opts := "rw"
	if m.MountRO {
		opts = "ro"
	}
	super := "rw"
	if m.SuperRO && !m.EmergencyRO {
		super = "ro"
	}
	if m.EmergencyRO {
		super += ",emergency_ro"
	}
	if m.Shutdown {
		super += ",shutdown"
	}
	if m.subvolume {
		super += ",subvol=" + escapeField(m.Root)
	}
	return fmt.Sprintf("%d %d %d:%d %s %s %s shared:1 - %s %s %s", m.ID, m.ParentID, m.Major, m.Minor,
		escapeField(m.Root), escapeField(m.MountPoint), opts, escapeField(m.FSType), escapeField(m.Source), super)
}

func FuzzParseMountInfo(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "mountinfo", "*.txt"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed fixtures: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		// Single lines too, so the fuzzer mutates short inputs as well.
		for line := range bytes.SplitSeq(data, []byte{'\n'}) {
			if len(line) < 300 {
				f.Add(line)
			}
		}
	}
	for _, s := range []string{
		"",
		"1 0 8:1 / / rw - ext4 /dev/sda1 rw",
		"67 22 0:50 / /mnt/empty rw,relatime shared:46 - tmpfs  rw,size=1024k",
		`1 0 8:1 /a\040b /m\011n\012o\134p rw - ext4 x\040y rw,subvol=/a\040b`,
		"1 0 8:1 / /x rw - ext4 /dev/sda1 rw,emergency_ro",
		"1 0 8:1 / /x rw - - - -",
		"1 0 8:1 / /x rw - ext4",
		"garbage\n\n\x00\xff - - -",
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		mounts, err := ParseMountInfo(data)
		bad := 0
		if err != nil {
			var perr *parseerr.Lines
			if !errors.As(err, &perr) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if perr.Count == 0 || len(perr.Lines) == 0 || len(perr.Lines) > parseerr.MaxLines {
				t.Fatalf("inconsistent parseerr.Lines: %+v", perr)
			}
			bad = perr.Count
		}
		lines := 0
		for l := range bytes.SplitSeq(data, []byte{'\n'}) {
			if len(l) > 0 {
				lines++
			}
		}
		if len(mounts)+bad != lines {
			t.Fatalf("%d mounts + %d bad lines != %d lines", len(mounts), bad, lines)
		}
		for i := range mounts {
			m := &mounts[i]
			switch {
			case !strings.HasPrefix(m.MountPoint, "/"):
				t.Fatalf("mount point %q not absolute", m.MountPoint)
			case m.Root == "" || m.FSType == "":
				t.Fatalf("empty root or type: %+v", m)
			case m.Path != m.MountPoint:
				t.Fatalf("path %q != mount point %q", m.Path, m.MountPoint)
			case m.Class != Classify(m.FSType):
				t.Fatalf("class %s for %q", m.Class, m.FSType)
			case (m.EmergencyRO || m.SuperRO || m.MountRO) && !m.ReadOnly:
				t.Fatalf("mount or superblock read-only but mount not: %+v", m)
			case m.EmergencyRO && !m.SuperRO:
				t.Fatalf("emergency_ro but superblock not read-only: %+v", m)
			case m.ReadOnlyAfterErrors(0) && !m.EmergencyRO:
				t.Fatalf("no errors, no emergency, yet read-only after errors: %+v", m)
			case m.subvolume && m.FSType != "btrfs":
				t.Fatalf("subvolume on %q", m.FSType)
			}
			// Round trip: writing the mount back the kernel's way and
			// parsing it again gives the same mount.
			line := formatLine(m)
			again, err := ParseMountInfo([]byte(line))
			if err != nil || len(again) != 1 {
				t.Fatalf("re-parse of %q: %v (%d mounts)", line, err, len(again))
			}
			if again[0] != *m {
				t.Fatalf("round trip of %q:\n got %+v\nwant %+v", line, again[0], *m)
			}
		}

		// The whole pipeline keeps its promises on any input.
		for _, opts := range []SelectOptions{{}, {RootPath: "/hostfs", View: ViewSelf}, {RootPath: "/hostfs", Dedupe: DedupeKeepBinds}} {
			sel, _ := Select(data, opts)
			seen := map[string]bool{}
			roots := map[rootKey]bool{}
			for _, m := range sel {
				k := rootKey{m.Major, m.Minor, m.Root}
				if seen[m.MountPoint] || roots[k] {
					t.Fatalf("duplicate %q / %v in %+v", m.MountPoint, k, opts)
				}
				seen[m.MountPoint], roots[k] = true, true
				if m.Class != ClassLocal {
					t.Fatalf("%s kept by default", m.Class)
				}
				if opts.RootPath != "" && !hasPathPrefix(m.Path, "/hostfs") {
					t.Fatalf("path %q outside root_path", m.Path)
				}
			}
		}
	})
}

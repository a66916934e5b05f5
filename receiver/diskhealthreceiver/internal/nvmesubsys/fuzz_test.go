package nvmesubsys

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

// fixtureValues are the values of every file of the fixture trees: the fuzzers' seeds.
func fixtureValues(f *testing.F) []string {
	var out []string
	require.NoError(f, filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 || strings.HasSuffix(p, ".json") {
			return err
		}
		b, err := os.ReadFile(p)
		out = append(out, string(b))
		return err
	}))
	return out
}

func FuzzParsers(f *testing.F) {
	for _, v := range fixtureValues(f) {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := ParseState(b); err == nil {
			require.Less(t, s, NumStates)
		}
		if tr, err := ParseTransport(b); err == nil {
			require.Less(t, tr, NumTransports)
		}
		if a, err := ParseANAState(b); err == nil {
			require.NotEqual(t, ANANone, a, "none is no word the kernel writes")
			require.Less(t, a, NumANAStates)
		}
		_, _ = ParseANAGroup(b)
	})
}

// FuzzReadSubsystem puts any value in any file of the k6.1-ana tree: the read never panics, and what
// it returns is consistent (paths point at controllers it has) and bounded valid UTF-8.
func FuzzReadSubsystem(f *testing.F) {
	base := fstest.MapFS{}
	sysDir := filepath.Join("testdata", "k6.1-ana", "sys")
	var files []string
	require.NoError(f, filepath.WalkDir(sysDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(sysDir, p)
		rel = testkit.RealName(filepath.ToSlash(rel))
		// MapFS has no links: the class and subsystem entries are laid out where they resolve.
		rel = strings.Replace(rel, "devices/virtual/nvme-subsystem/", "class/nvme-subsystem/", 1)
		b, err := os.ReadFile(p)
		if err == nil {
			base[rel] = &fstest.MapFile{Data: b}
			files = append(files, rel)
		}
		return nil
	}))
	for i := range 3 {
		for rel, file := range base {
			if strings.HasPrefix(rel, "devices/virtual/nvme-fabrics/ctl/nvme"+string(rune('0'+i))+"/") {
				base["class/nvme-subsystem/nvme-subsys0/nvme"+string(rune('0'+i))+"/"+strings.SplitN(rel, "/", 6)[5]] = file
			}
		}
	}
	for _, v := range fixtureValues(f) {
		f.Add(uint(0), []byte(v))
	}
	f.Fuzz(func(t *testing.T, which uint, b []byte) {
		sys := fstest.MapFS{}
		var names []string
		for k, v := range base {
			sys[k] = v
			if strings.HasPrefix(k, "class/") {
				names = append(names, k)
			}
		}
		sys[names[int(which%uint(len(names)))]] = &fstest.MapFile{Data: b}
		s, err := ReadSubsystem(sys, "nvme-subsys0")
		if err != nil {
			return
		}
		for _, v := range []struct {
			s    string
			kind sanitize.Kind
		}{{s.NQN, sanitize.HWID}, {s.Model, sanitize.Model}, {s.Serial, sanitize.Serial}, {s.Firmware, sanitize.Firmware}, {s.IOPolicy, sanitize.Device}} {
			require.True(t, utf8.ValidString(v.s))
			require.LessOrEqual(t, len(v.s), sanitize.Cap(v.kind))
		}
		for _, c := range s.Controllers {
			require.True(t, utf8.ValidString(c.Address))
			require.LessOrEqual(t, len(c.Address), sanitize.Cap(sanitize.NVMeAddress))
		}
		for _, ns := range s.Namespaces {
			for _, p := range ns.Paths {
				require.Less(t, p.Controller, len(s.Controllers))
			}
		}
		_ = Count(&s)
		_ = Namespaces(&s)
	})
}

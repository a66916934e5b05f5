package sanitize

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		kind     Kind
		in, want string
	}{
		{Model, "Samsung SSD 980 PRO 1TB", "Samsung SSD 980 PRO 1TB"},
		{Model, "", ""},
		{Serial, "\xff\xfeS1", "\uFFFD\uFFFDS1"},
		{Firmware, "1.0\x01\x7f", `1.0\x01\x7f`},
		{Device, "sd\x00a", `sd\x00a`},
		{MountPoint, "/mnt/caf\u00e9", "/mnt/caf\u00e9"},
		{MountSource, "a\u0085b", `a\u0085b`},
		{FSType, strings.Repeat("x", 64), strings.Repeat("x", 64)},
		{FSType, strings.Repeat("x", 100), strings.Repeat("x", 47) + suffix(strings.Repeat("x", 100))},
		// A cut never splits a rune or an escape.
		{FSType, strings.Repeat("x", 46) + "\u00e9" + strings.Repeat("y", 20), strings.Repeat("x", 46) + suffix(strings.Repeat("x", 46)+"\u00e9"+strings.Repeat("y", 20))},
		{FSType, strings.Repeat("x", 45) + "\x01" + strings.Repeat("y", 20), strings.Repeat("x", 45) + suffix(strings.Repeat("x", 45)+"\x01"+strings.Repeat("y", 20))},
	} {
		got := String(tc.kind, tc.in)
		assert.Equal(t, tc.want, got, "%v %q", tc.kind, tc.in)
		assert.Equal(t, got, Bytes(tc.kind, []byte(tc.in)))
	}
}

// suffix is what ends a cut value: "~" and the FNV-1a hash of the whole value read.
func suffix(s string) string {
	h := fnv.New64a()
	h.Write([]byte(s))
	return fmt.Sprintf("~%016x", h.Sum64())
}

// TestCutNamesStayDistinct: two 300-byte device names sharing their first 64 bytes were one
// system.device (134 colliding points in 5 s of a hostile run); a cut value names the whole value.
func TestCutNamesStayDistinct(t *testing.T) {
	prefix := strings.Repeat("d", 64)
	a, b := prefix+strings.Repeat("a", 236), prefix+strings.Repeat("b", 236)
	ca, cb := String(Device, a), String(Device, b)
	assert.NotEqual(t, ca, cb)
	assert.Len(t, ca, Cap(Device))
	assert.True(t, strings.HasPrefix(ca, strings.Repeat("d", Cap(Device)-17)))
	assert.Equal(t, ca, String(Device, ca), "idempotent")
	// A real kernel name (a gendisk name, at most 31 bytes, and a partition number) is never cut.
	long := strings.Repeat("n", 31) + "p4294967295"
	assert.Equal(t, long, String(Device, long))
}

func TestCaps(t *testing.T) {
	for k := range NumKinds {
		assert.Positive(t, Cap(k), k.String())
		assert.NotEmpty(t, k.String())
		big := strings.Repeat("\xff", 3*Cap(k))
		assert.LessOrEqual(t, len(String(k, big)), Cap(k))
	}
	// The case: a 100 KB sysfs model.
	assert.Len(t, String(Model, strings.Repeat("M", 100<<10)), 128)
}

func TestPlainStringDoesNotAllocate(t *testing.T) {
	s := "nvme0n1"
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = String(Device, s) }))
}

func TestCountsAndNotes(t *testing.T) {
	before := Snapshot()
	String(Model, strings.Repeat("M", 200))
	String(Model, "bad\x01")
	String(Model, "fine")
	after := Snapshot()
	assert.Equal(t, before[Model].Cut+1, after[Model].Cut)
	assert.Equal(t, before[Model].Altered+1, after[Model].Altered)

	core, logs := observer.New(zapcore.DebugLevel)
	var n Notes
	n.Log(zap.New(core))
	warns := logs.FilterLevelExact(zapcore.WarnLevel)
	require.Positive(t, warns.Len())
	found := false
	for _, e := range warns.All() {
		if e.ContextMap()["kind"] == "hw.model" {
			found = true
			assert.EqualValues(t, 128, e.ContextMap()["cap_bytes"])
		}
	}
	assert.True(t, found)
	n.Log(zap.New(core))
	total := logs.Len()
	assert.Equal(t, total, logs.Len(), "nothing new: nothing logged")

	for range 50 {
		String(Model, strings.Repeat("M", 200))
		n.Log(zap.New(core))
	}
	assert.Equal(t, warns.Len(), logs.FilterLevelExact(zapcore.WarnLevel).Len(), "a kind warns once")
}

func check(t *testing.T, k Kind, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%v %q: invalid UTF-8 %q", k, in, out)
	}
	if len(out) > Cap(k) {
		t.Fatalf("%v %q: %d bytes, cap %d", k, in, len(out), Cap(k))
	}
	for _, r := range out {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			t.Fatalf("%v %q: control character %U in %q", k, in, r, out)
		}
	}
	if again := String(k, out); again != out {
		t.Fatalf("%v: not idempotent: %q -> %q", k, out, again)
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "sda", "\xff", "a\x00b", "caf\u00e9", "\u0085", strings.Repeat("\u00e9", 40)} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, s string, kind uint8) {
		k := Kind(kind % uint8(NumKinds))
		out := String(k, s)
		check(t, k, s, out)
		if out != Bytes(k, []byte(s)) {
			t.Fatalf("Bytes differs from String for %q", s)
		}
		if len(s) <= Cap(k) && utf8.ValidString(s) && plainASCII(s) && out != s {
			t.Fatalf("plain %q changed to %q", s, out)
		}
	})
}

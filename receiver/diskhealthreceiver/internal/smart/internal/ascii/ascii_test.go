package ascii

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestClean(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"QEMU HARDDISK                           ", "QEMU HARDDISK"},
		{"     WD-WCC4E1234567", "WD-WCC4E1234567"},
		{"abc\x00\x00\x00", "abc"},
		{"\x00 \x00", ""},
		{"a\x01b\xffc", "a?b?c"},
		{"", ""},
	} {
		assert.Equal(t, tc.want, Clean([]byte(tc.in)), "%q", tc.in)
	}
}

func FuzzClean(f *testing.F) {
	f.Add([]byte("  ST4000DM004-2CV104  "))
	f.Add([]byte{0, 0xff, ' ', 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		s := Clean(b)
		if !utf8.ValidString(s) || len(s) > len(b) {
			t.Fatalf("Clean(%q) = %q", b, s)
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] > 0x7e {
				t.Fatalf("non-printable byte in %q", s)
			}
		}
		if s != "" && (s[0] == ' ' || s[len(s)-1] == ' ') {
			t.Fatalf("untrimmed %q", s)
		}
		if Clean([]byte(s)) != s {
			t.Fatalf("not idempotent: %q", s)
		}
	})
}

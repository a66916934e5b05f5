package blockdev

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func FuzzParseVPDSerial(f *testing.F) {
	for _, seed := range []string{
		vpd80("QM00001             "), vpd80("  WD-WCC4E1234567  "), vpd80(""), vpd80("S5GXNF0R123456K"),
		"\x00\x80", "\x00\x83\x00\x04abcd", "\x00\x80\x00\x10abc", "\x00\x80\x00\x03a\x01b", "\x00\x80\x00\x02\xff\xfe",
		"\x00\x80\x00\x05 ab \x00trailing",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		serial, err := parseVPDSerial(b)
		if err != nil {
			require.Empty(t, serial)
			return
		}
		require.True(t, printable(serial), "%q", serial)
		require.Equal(t, strings.Trim(serial, " \x00"), serial, "trimmed")
		require.LessOrEqual(t, len(serial), len(b)-4)
		// What we return, re-encoded, decodes to itself.
		again, err := parseVPDSerial([]byte(vpd80(serial)))
		require.NoError(t, err)
		require.Equal(t, serial, again)
	})
}

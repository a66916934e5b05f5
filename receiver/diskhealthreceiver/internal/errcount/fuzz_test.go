package errcount

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func FuzzParsers(f *testing.F) {
	for _, s := range []string{
		"0x1f\n", "0xffffffff80000000\n", "0x100000000\n", "write_errs 0\nread_errs 2\nflush_errs 0\ncorruption_errs 14\ngeneration_errs 0\n", "invalid\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := ParseHexCounter(b); err == nil {
			c, err := ParseSCSICounter(b)
			if err == nil {
				require.Equal(t, uint32(v), c, "the low 32 bits")
			} else {
				require.Greater(t, v, uint64(math.MaxUint32), "a 32-bit value is a counter: %#x", v)
			}
		}
		_, _ = ParseBtrfsErrorStats(b)
		if fsid, _, err := ParseBtrfsSuperblock(b); err == nil {
			require.Len(t, fsid, 36)
		}
	})
}

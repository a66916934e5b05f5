package fuseconn

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestName(t *testing.T) {
	assert.Equal(t, "52", Name(0, 52))
	assert.Equal(t, "8388609", Name(8, 1)) // fuseblk on /dev/sda1
}

func TestParseWaiting(t *testing.T) {
	n, err := ParseWaiting([]byte("3\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(3), n)
	for _, bad := range []string{"", "\n", "-1\n", "x", "18446744073709551616"} {
		_, err := ParseWaiting([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}

// FuzzParseWaiting: any input parses or fails without panicking, and a count round-trips.
func FuzzParseWaiting(f *testing.F) {
	for _, s := range []string{"0\n", "17\n", "", "x\n", " 4 \n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseWaiting(b)
		if err != nil {
			return
		}
		again, err := ParseWaiting([]byte(strconv.FormatUint(n, 10) + "\n"))
		if err != nil || again != n {
			t.Fatalf("%d does not round-trip: %d, %v", n, again, err)
		}
	})
}

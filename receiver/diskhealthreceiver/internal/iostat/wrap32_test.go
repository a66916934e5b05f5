package iostat

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestCounter32Delta(t *testing.T) {
	const rate = 1 << 24
	for _, tc := range []struct {
		name      string
		prev, cur uint32
		dt        time.Duration
		want      uint64
		ok        bool
	}{
		{"forward", 5, 9, time.Second, 4, true},
		{"past 2^32 in 30 s", 0xfffffff0, 0x10, 30 * time.Second, 0x20, true},
		{"a wrap of 4e8 commands fits 30 s at 2^24 a second", 0xf0000000, 0x0c000000, 30 * time.Second, 0x1c000000, true},
		{"but not 1 s", 0xf0000000, 0x0c000000, time.Second, 0, false},
		{"a fall of 2 is a restart", 3, 1, time.Hour, 0, false},
		{"no clock, no wrap", 0xfffffff0, 0x10, 0, 0, false},
		{"never 2^31 or more", 0x80000000, 0x10, 1000 * time.Hour, 0, false},
	} {
		d, ok := Counter32Delta(tc.prev, tc.cur, tc.dt, rate)
		assert.Equal(t, tc.want, d, tc.name)
		assert.Equal(t, tc.ok, ok, tc.name)
	}
}

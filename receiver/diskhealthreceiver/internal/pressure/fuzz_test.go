package pressure

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParse checks that any input either fails or yields averages within 0–1, and that what Parse
// accepts survives a round trip through the kernel's own format (two decimals of percent).
func FuzzParse(f *testing.F) {
	f.Add([]byte("some avg10=0.05 avg60=0.52 avg300=0.58 total=23416991\nfull avg10=0.02 avg60=0.19 avg300=0.12 total=5117953\n"))
	f.Add([]byte("some avg10=100.00 avg60=0.00 avg300=0.00 total=0\n"))
	f.Add([]byte("full total=7 avg300=1.00 avg60=2.00 avg10=3.00 window=9\nsome avg10=0.00 avg60=0.00 avg300=0.00 total=1"))
	f.Add([]byte("some avg10=1e2 avg60=0x1p-2 avg300=Inf total=1\n"))
	f.Add([]byte("some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551616\n"))
	f.Add([]byte("\n\nsome  avg10=0.00\tavg60=0.00 avg300=0.00 total=1 \r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			return
		}
		lines := []Stall{p.Some}
		if p.HasFull {
			lines = append(lines, p.Full)
		}
		for _, s := range lines {
			for _, v := range []float64{s.Avg10, s.Avg60, s.Avg300} {
				require.False(t, math.IsNaN(v))
				require.GreaterOrEqual(t, v, 0.0)
				require.LessOrEqual(t, v, 1.0)
			}
		}
		again, err := Parse([]byte(format(p)))
		require.NoError(t, err, "re-parse of %q", format(p))
		require.Equal(t, p.HasFull, again.HasFull)
		for i, s := range []Stall{again.Some, again.Full} {
			orig := []Stall{p.Some, p.Full}[i]
			require.Equal(t, orig.TotalMicros, s.TotalMicros)
			// Two decimals of percent: within half a hundredth of a percent.
			require.InDelta(t, orig.Avg10, s.Avg10, 0.5e-4+1e-12)
			require.InDelta(t, orig.Avg60, s.Avg60, 0.5e-4+1e-12)
			require.InDelta(t, orig.Avg300, s.Avg300, 0.5e-4+1e-12)
		}
	})
}

// format prints p as the kernel does.
func format(p Pressure) string {
	line := func(kind string, s Stall) string {
		return fmt.Sprintf("%s avg10=%.2f avg60=%.2f avg300=%.2f total=%d\n", kind, s.Avg10*100, s.Avg60*100, s.Avg300*100, s.TotalMicros)
	}
	out := line("some", p.Some)
	if p.HasFull {
		out += line("full", p.Full)
	}
	return out
}

package diskstats

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
)

// appendLine formats s the way the kernel does (%4d %7d %s %lu ...), with
// exactly s.Fields fields.
func appendLine(b []byte, s *Stat) []byte {
	b = fmt.Appendf(b, "%4d %7d %s", s.MajorNumber, s.MinorNumber, s.DeviceName)
	v := s.IOStats
	vals := [...]uint64{
		v.ReadIOs, v.ReadMerges, v.ReadSectors, v.ReadTicks,
		v.WriteIOs, v.WriteMerges, v.WriteSectors, v.WriteTicks,
		v.IOsInProgress, v.IOsTotalTicks, v.WeightedIOTicks,
		v.DiscardIOs, v.DiscardMerges, v.DiscardSectors, v.DiscardTicks,
		v.FlushRequestsCompleted, v.TimeSpentFlushing,
	}
	for _, x := range vals[:s.Fields-3] {
		b = append(b, ' ')
		b = strconv.AppendUint(b, x, 10)
	}
	return append(b, '\n')
}

func formatStats(stats []Stat) []byte {
	var b []byte
	for i := range stats {
		b = appendLine(b, &stats[i])
	}
	return b
}

// synthetic returns n 20-field lines of NVMe-like devices with large
// counters, the worst case for the number parser.
func synthetic(n int) []byte {
	var b []byte
	for i := range n {
		s := Stat{Fields: 20}
		s.MajorNumber, s.MinorNumber = 259, uint32(i)
		s.DeviceName = fmt.Sprintf("nvme%dn1", i)
		x := uint64(i+1) * 1_000_003
		s.ReadIOs, s.ReadMerges, s.ReadSectors, s.ReadTicks = x*7, x, x*2048, x%(1<<32)
		s.WriteIOs, s.WriteMerges, s.WriteSectors, s.WriteTicks = x*11, x*3, x*4096, (x*5)%(1<<32)
		s.IOsInProgress, s.IOsTotalTicks, s.WeightedIOTicks = uint64(i%32), x%(1<<32), (x*9)%(1<<32)
		s.DiscardIOs, s.DiscardMerges, s.DiscardSectors, s.DiscardTicks = x/3, 0, x*8192, x%1000
		s.FlushRequestsCompleted, s.TimeSpentFlushing = x/5, x%7777
		b = appendLine(b, &s)
	}
	return b
}

// lineErrors unpacks Parse's error into its kept per-line errors, checking
// that each names the file, and returns the count of all bad lines.
func lineErrors(t testing.TB, err error) ([]*parseerr.Line, int) {
	t.Helper()
	if err == nil {
		return nil, 0
	}
	var lines *parseerr.Lines
	require.ErrorAs(t, err, &lines, "Parse error is not a *parseerr.Lines: %T", err)
	require.NotEmpty(t, lines.Lines)
	require.LessOrEqual(t, len(lines.Lines), parseerr.MaxLines)
	require.GreaterOrEqual(t, lines.Count, len(lines.Lines))
	for _, le := range lines.Lines {
		require.Equal(t, "diskstats", le.File, "%v", le)
	}
	return lines.Lines, lines.Count
}

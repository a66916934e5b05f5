package diskstats

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/diskstats/*.txt")
	require.NoError(f, err)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(data)
	}
	for _, seed := range []string{
		"",
		"\n\n",
		// 14, 18 and 20 fields, kernel widths
		"   8       0 sda 4457129 287709 124799612 1661138 5513870 1643615 88221920 3588832 2 1424023 1555149\n",
		" 259       0 nvme0n1 740468 123303 31840124 1592244 1147009 2582107 18352144 3595698 0 748589 616761 15602 88 126797454 55859\n",
		" 259       1 nvme0n1p1 3197133 110011 51154128 1472942 225096 2030098 3601536 3568718 0 1265765 178783 4372 50 2317160 17895 0 0\n",
		" 253       0 dm-0 484654 169431 12601004 1458151 3879460 2020093 62071360 3936660 0 1207863 2035815 17233 24 65554332 40375 295317 83563\n",
		"   9     127 md127 354965 91576 15618460 1719270 5679926 212572 90878816 952018 2 642710 793871 18710 57 176865630 70615 565247 57122\n",
		"   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		" 179       1 mmcblk0p1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n",
		" 104       0 cciss/c0d0 1 2 3 4 5 6 7 8 9 10 11\n",
		// odd but valid layouts
		"\t8\t0\tsda\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10\t11\r\n",
		"8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21",
		"4294967295 4294967295 x 18446744073709551615 0 0 4294967295 0 0 0 4294967295 4294967295 4294967295 4294967295\n",
		// malformed
		"8 16 sdb 1 2 3 x1 5 6 7 8 9 10 11\n",
		"8 16 sdb 1 2 3 4 5 6\n",
		"8 16\n",
		"4294967296 0 sda 1 2 3 4 5 6 7 8 9 10 11\n",
		"8 0 sda 1 2 3 4 5 6 7 8 9 10 18446744073709551616\n",
		"8 0 sda -1 2 3 4 5 6 7 8 9 10 11\n",
		"8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n8 0\x00 sdb 1 2 3 4 5 6 7 8 9 10 11\n",
	} {
		f.Add([]byte(seed))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		var p Parser
		stats, err := p.Parse(data, nil)

		for _, s := range stats {
			require.Contains(t, []int{14, 18, 20}, s.Fields)
			require.NotEmpty(t, s.DeviceName)
			require.False(t, strings.ContainsAny(s.DeviceName, " \t\r\n\v\f"), "name %q has whitespace", s.DeviceName)
		}

		nonBlank := 0
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			if len(bytes.Trim(line, " \t\r\v\f")) > 0 {
				nonBlank++
			}
		}
		bad, count := lineErrors(t, err)
		require.Equal(t, nonBlank, len(stats)+count, "every non-blank line is either a stat or a counted error")
		for _, le := range bad {
			require.GreaterOrEqual(t, le.Line, 1)
		}

		// Round trip: what we return, printed as the kernel would, parses
		// back to the same values. A fresh parser and a reused one agree.
		again, err := new(Parser).Parse(formatStats(stats), nil)
		require.NoError(t, err)
		requireSameStats(t, stats, again)
		again, err = p.Parse(formatStats(stats), again)
		require.NoError(t, err)
		requireSameStats(t, stats, again)
	})
}

// requireSameStats treats nil and empty alike: Parse returns either when
// nothing parsed.
func requireSameStats(t *testing.T, want, got []Stat) {
	t.Helper()
	if !slices.Equal(want, got) {
		require.Equal(t, want, got)
	}
}

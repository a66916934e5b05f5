package mdraid

import (
	"bytes"
	"math"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
)

func FuzzParseMdstat(f *testing.F) {
	for _, s := range []string{
		"md0 : active raid1 sdb1[1] sda1[0]\n      1047552 blocks super 1.2 [2/2] [UU]\n",
		"md0 : active raid1 sdc1[2] sda1[0]\n      1047552 blocks super 1.2 [2/1] [U_]\n      [==>....]  recovery = 50.0% (523776/1047552) finish=0.1min speed=65536K/sec\n",
		"md1 : active raid1 sdb3[1] sda3[0]\n      209664 blocks [2/2] [UU]\n      \tresync=DELAYED\n",
		"md127 : inactive sdb[0](S)\n", "md0 : active (auto-read-only) raid1 a[1](W)(F)\n", "x : \n", "[\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		as, _ := ParseMdstat(bytes.NewReader(b))
		for _, a := range as {
			require.False(t, math.IsNaN(a.Ratio))
			require.GreaterOrEqual(t, a.Ratio, 0.0)
			require.LessOrEqual(t, a.Ratio, 1.0)
			require.GreaterOrEqual(t, a.Finish, time.Duration(0))
		}
	})
}

func FuzzAttributes(f *testing.F) {
	for _, s := range []string{"none\n", "delayed\n", "10 / 20\n", "3F2C1A6B-9D0E-4F21-8A7B-6C5D4E3F2A1B\n", "00000000-0000-0000-0000-000000000000\n", "4 (3)\n", "in_sync,write_mostly\n", "65536\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := ParseSyncCompleted(b); err == nil && !p.Running {
			require.Zero(t, p.TotalSectors)
		}
		if n, before, err := ParseRaidDisks(b); err == nil {
			require.GreaterOrEqual(t, n, 0)
			require.GreaterOrEqual(t, before, 0)
		}
		if u, err := ParseUUID(b); err == nil && u != "" {
			again, err := ParseUUID([]byte(u))
			require.NoError(t, err)
			require.Equal(t, u, again, "a parsed uuid parses to itself")
		}
		_, _ = ParseSyncSpeed(b)
		_, _ = ParseSlot(b)
		flags, unknown := ParseMemberState(b)
		again, _ := ParseMemberState([]byte(flags.String()))
		require.Equal(t, flags, again, "flags survive a round trip")
		for _, u := range unknown {
			require.NotContains(t, u, ",")
		}
		// Any attribute value in any file: ReadArray never panics and
		// keeps its ranges.
		sys := fstest.MapFS{}
		for _, attr := range []string{"level", "array_state", "raid_disks", "degraded", "sync_action", "sync_completed", "sync_speed", "mismatch_cnt", "component_size", "layout", "uuid", "dev-sda/state", "dev-sda/slot", "dev-sda/errors"} {
			sys["block/md0/md/"+attr] = &fstest.MapFile{Data: b}
		}
		sys["block/md0/size"] = &fstest.MapFile{Data: b}
		a, _ := ReadArray(sys, "md0")
		require.False(t, math.IsNaN(a.Sync.Ratio))
		require.True(t, a.Sync.Ratio >= 0 && a.Sync.Ratio <= 1)
		require.GreaterOrEqual(t, a.Sync.ETA, time.Duration(0))
		require.GreaterOrEqual(t, a.Redundancy(), 0)
		require.NotContains(t, a.Name, "/")
	})
}

package mdraid

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type golden struct {
	Arrays     []Array
	Mdstat     []MdstatArray
	CrossCheck map[string][]string `json:",omitempty"`
}

// TestGolden reads each fixture tree (testdata/<scenario>/sys and its
// mdstat) and compares with testdata/<scenario>/golden.json. Every fixture's
// sysfs and mdstat must agree with each other.
func TestGolden(t *testing.T) {
	scenarios, err := filepath.Glob("testdata/*/sys")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(scenarios), 11)
	for _, sysDir := range scenarios {
		dir := filepath.Dir(sysDir)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			r := NewReader(os.DirFS(sysDir), time.Second)
			results, err := r.Read(context.Background())
			require.NoError(t, err)
			var got golden
			for _, res := range results {
				require.NoError(t, res.Err)
				got.Arrays = append(got.Arrays, res.Array)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "mdstat"))
			require.NoError(t, err)
			got.Mdstat, err = ParseMdstat(bytes.NewReader(raw))
			require.NoError(t, err)
			byName := map[string]MdstatArray{}
			for _, m := range got.Mdstat {
				byName[m.Name] = m
			}
			require.Len(t, byName, len(got.Arrays))
			for _, a := range got.Arrays {
				if d := CrossCheck(a, byName[a.Name], 0.002); d != nil {
					if got.CrossCheck == nil {
						got.CrossCheck = map[string][]string{}
					}
					got.CrossCheck[a.Name] = d
				}
			}
			assert.Empty(t, got.CrossCheck, "sysfs and mdstat of one fixture must agree")
			testkit.GoldenJSON(t, filepath.Join(dir, "golden.json"), got)
		})
	}
}

func readFixture(t *testing.T, scenario, name string) Array {
	t.Helper()
	a, err := ReadArray(os.DirFS(filepath.Join("testdata", scenario, "sys")), name)
	require.NoError(t, err)
	return a
}

// The facts each fixture exists to show, spelled out (the golden files
// hold everything else).
func TestFixtureFacts(t *testing.T) {
	clean := readFixture(t, "clean", "md0")
	assert.Equal(t, "raid1", clean.Level)
	assert.Equal(t, uint64(2095104*512), clean.SizeBytes)
	assert.Equal(t, 0, clean.Degraded)
	assert.Equal(t, 1, clean.Redundancy())
	assert.False(t, clean.Sync.Running)
	assert.Equal(t, []string{"sda1", "sdb1"}, []string{clean.Members[0].Name, clean.Members[1].Name})

	deg := readFixture(t, "degraded", "md1")
	assert.Equal(t, 1, deg.Degraded)
	assert.Equal(t, 1, deg.Redundancy())
	assert.Equal(t, uint64(3), deg.Members[1].CorrectedReadErrors)
	assert.Equal(t, "sdb", deg.Members[0].Name, "a whole-disk member")

	rs := readFixture(t, "resync", "md0")
	assert.Equal(t, ActionResync, rs.SyncAction)
	assert.InDelta(t, 0.25, rs.Sync.Ratio, 0.001)
	assert.Equal(t, uint64(51200*1024), rs.Sync.SpeedBytes)
	// (2095104-524288) sectors * 512 / 50 MiB/s = 15.34 s.
	assert.Equal(t, 15*time.Second, rs.Sync.ETA)

	rec := readFixture(t, "recover", "md0")
	assert.Equal(t, ActionRecover, rec.SyncAction)
	assert.Equal(t, 1, rec.Degraded)
	assert.True(t, rec.Members[1].Rebuilding())
	assert.InDelta(t, 0.5, rec.Sync.Ratio, 0.001)

	chk := readFixture(t, "check", "md2")
	assert.Equal(t, ActionCheck, chk.SyncAction)
	assert.Equal(t, uint64(128), chk.MismatchSectors)
	assert.Equal(t, 2, chk.Redundancy())

	rep := readFixture(t, "repair", "md3")
	assert.Equal(t, ActionRepair, rep.SyncAction)
	assert.Equal(t, uint64(8), rep.MismatchSectors)

	rsh := readFixture(t, "reshape", "md4")
	assert.Equal(t, ActionReshape, rsh.SyncAction)
	assert.Equal(t, [2]int{4, 3}, [2]int{rsh.RaidDisks, rsh.RaidDisksBefore})

	f := readFixture(t, "faulty", "md0")
	require.Len(t, f.Members, 3)
	bad := f.Members[2] // slotless members sort last
	assert.Equal(t, "sdb1", bad.Name)
	assert.Equal(t, Faulty|WriteError, bad.Flags)
	assert.Equal(t, -1, bad.Slot)
	assert.Equal(t, uint64(37), bad.CorrectedReadErrors)
	assert.Equal(t, InSync|Blocked, f.Members[1].Flags)
	assert.Equal(t, 2, f.Redundancy())

	sp := readFixture(t, "spare", "md0")
	assert.Equal(t, Spare, sp.Members[2].Flags)
	assert.False(t, sp.Members[2].Rebuilding())
	assert.Equal(t, InSync|WriteMostly, sp.Members[1].Flags)

	d := readFixture(t, "delayed", "md1")
	assert.True(t, d.Sync.Running)
	assert.True(t, d.Sync.Delayed)
	assert.Zero(t, d.Sync.ETA)

	r0 := readFixture(t, "raid0", "md5")
	assert.Equal(t, -1, r0.Degraded)
	assert.Equal(t, 0, r0.Redundancy())
	assert.Empty(t, r0.SyncAction)
}

func TestListArraysSkipsOtherDevices(t *testing.T) {
	names, err := ListArrays(os.DirFS("testdata/delayed/sys"))
	require.NoError(t, err)
	assert.Equal(t, []string{"md0", "md1"}, names)
}

func TestBadAttributeIsReportedAndTheRestFilled(t *testing.T) {
	sys := fstest.MapFS{
		"block/md0/size":              {Data: []byte("2048\n")},
		"block/md0/md/level":          {Data: []byte("raid1\n")},
		"block/md0/md/array_state":    {Data: []byte("clean\n")},
		"block/md0/md/raid_disks":     {Data: []byte("two\n")},
		"block/md0/md/degraded":       {Data: []byte("0\n")},
		"block/md0/md/sync_completed": {Data: []byte("12 of 40\n")},
		"block/md0/md/dev-sda/state":  {Data: []byte("in_sync,future_state\n")},
		"block/md0/md/dev-sda/slot":   {Data: []byte("0\n")},
		"block/md0/md/dev-sda/errors": {Data: []byte("x\n")},
		"block/md0/md/uuid":           {Data: []byte("3f2c1a6b:9d0e4f21:8a7b6c5d:4e3f2a1b\n")},
	}
	a, err := ReadArray(sys, "md0")
	require.Error(t, err)
	require.ErrorContains(t, err, "raid_disks")
	require.ErrorContains(t, err, "uuid")
	assert.Empty(t, a.UUID, "mdadm's form is not the kernel's")
	require.ErrorContains(t, err, "sync_completed")
	require.ErrorContains(t, err, "dev-sda/errors")
	assert.Equal(t, "clean", a.State)
	assert.Equal(t, uint64(2048*512), a.SizeBytes)
	require.Len(t, a.Members, 1)
	assert.Equal(t, "sda", a.Members[0].Name, "without a block link the directory names the member")
	assert.Equal(t, InSync, a.Members[0].Flags)
	assert.Equal(t, []string{"future_state"}, a.Members[0].UnknownFlags)

	_, err = ReadArray(sys, "../md0")
	require.Error(t, err)
	_, err = ReadArray(sys, "md9")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// blockingFS hangs every open of a path containing stuck until release closes.
type blockingFS struct {
	fs.FS
	stuck   string
	release chan struct{}
}

func (b blockingFS) Open(name string) (fs.File, error) {
	if filepath.Base(filepath.Dir(filepath.Dir(name))) == b.stuck && filepath.Base(name) == "array_state" {
		<-b.release
	}
	return b.FS.Open(name)
}

func (b blockingFS) ReadLink(name string) (string, error) { return fs.ReadLink(b.FS, name) }

func TestStuckArrayTimesOutAlone(t *testing.T) {
	release := make(chan struct{})
	sys := blockingFS{FS: os.DirFS("testdata/delayed/sys"), stuck: "md1", release: release}
	r := NewReader(sys, 50*time.Millisecond)
	res, err := r.Read(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 2)
	require.NoError(t, res[0].Err)
	assert.Equal(t, "raid1", res[0].Array.Level)
	require.ErrorIs(t, res[1].Err, bounded.ErrTimeout)
	assert.Equal(t, "md1", res[1].Array.Name)

	res, err = r.Read(context.Background())
	require.NoError(t, err)
	require.ErrorIs(t, res[1].Err, bounded.ErrInFlight, "no second goroutine piles up")

	close(release)
	r.Wait()
	res, err = r.Read(context.Background())
	require.NoError(t, err)
	assert.NoError(t, res[1].Err)
}

func TestParsers(t *testing.T) {
	p, err := ParseSyncCompleted([]byte("10 / 40\n"))
	require.NoError(t, err)
	assert.Equal(t, Progress{Running: true, DoneSectors: 10, TotalSectors: 40}, p)
	_, err = ParseSyncCompleted([]byte("10 / x"))
	require.Error(t, err)

	n, before, err := ParseRaidDisks([]byte("5 (4)\n"))
	require.NoError(t, err)
	assert.Equal(t, [2]int{5, 4}, [2]int{n, before})
	for _, bad := range []string{"x", "5 4", "5 (x)", "-1"} {
		_, _, err := ParseRaidDisks([]byte(bad))
		require.Error(t, err, bad)
	}
	v, err := ParseSyncSpeed([]byte("none\n"))
	require.NoError(t, err)
	assert.Zero(t, v)
	slot, err := ParseSlot([]byte("none\n"))
	require.NoError(t, err)
	assert.Equal(t, -1, slot)

	u, err := ParseUUID([]byte("3F2C1A6B-9D0E-4F21-8A7B-6C5D4E3F2A1B\n"))
	require.NoError(t, err)
	assert.Equal(t, "3f2c1a6b-9d0e-4f21-8a7b-6c5d4e3f2a1b", u)
	u, err = ParseUUID([]byte("00000000-0000-0000-0000-000000000000\n"))
	require.NoError(t, err)
	assert.Empty(t, u, "an array without a uuid")
	for _, bad := range []string{"", "3f2c1a6b-9d0e-4f21-8a7b", "3f2c1a6b-9d0e-4f21-8a7b-6c5d4e3f2a1g", "3f2c1a6b+9d0e-4f21-8a7b-6c5d4e3f2a1b"} {
		_, err := ParseUUID([]byte(bad))
		require.Error(t, err, bad)
	}

	flags, unknown := ParseMemberState([]byte("\n"))
	assert.Zero(t, flags)
	assert.Empty(t, unknown)
	flags, _ = ParseMemberState([]byte("faulty,in_sync,write_mostly,blocked,spare,write_error,want_replacement,replacement,journal,failfast,external_bbl\n"))
	assert.Equal(t, "faulty,in_sync,write_mostly,blocked,spare,write_error,want_replacement,replacement,journal,failfast,external_bbl", flags.String())
}

func TestMdstatForms(t *testing.T) {
	in := `Personalities : [raid1]
md127 : inactive sdb[0](S)
      1048576 blocks super 1.2

md0 : active (auto-read-only) raid1 sdb1[1](W)(F) sda1[0]
      1047552 blocks super 1.2 [2/1] [U_]
      	resync=PENDING
      bitmap: 0/1 pages [0KB], 65536KB chunk

unused devices: <none>
`
	as, err := ParseMdstat(bytes.NewReader([]byte(in)))
	require.NoError(t, err)
	require.Len(t, as, 2)
	assert.False(t, as[0].Active)
	assert.Equal(t, "S", as[0].Members[0].Flags)
	assert.Equal(t, "auto-read-only", as[1].ReadOnly)
	assert.Equal(t, "raid1", as[1].Level)
	assert.Equal(t, "WF", as[1].Members[0].Flags)
	assert.True(t, as[1].Pending)
	assert.Equal(t, "U_", as[1].Status)

	_, err = ParseMdstat(bytes.NewReader([]byte("md0 : exploded raid1\n")))
	require.ErrorContains(t, err, "line 1")
	_, err = ParseMdstat(bytes.NewReader([]byte("md0 : active raid1 sda\n")))
	assert.Error(t, err)
}

func TestCrossCheckFindsDisagreements(t *testing.T) {
	a := readFixture(t, "recover", "md0")
	m := MdstatArray{Name: "md0", Active: true, Level: "raid1", Blocks: 1047552, RaidDisks: 2, Working: 2,
		Action: "recovery", Ratio: 0.3, Members: []MdstatMember{{Name: "sda1"}, {Name: "sdd1"}}}
	d := CrossCheck(a, m, 0.01)
	assert.ElementsMatch(t, []string{
		"degraded: sysfs 1, mdstat 2 of 2 working",
		"progress: sysfs 0.5000, mdstat 0.3000",
		"member sdc1: in sysfs, not in mdstat",
		"member sdd1: in mdstat, not in sysfs",
	}, d)
}

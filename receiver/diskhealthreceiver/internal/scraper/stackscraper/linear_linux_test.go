package stackscraper

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/mdraid"
)

// bigArraySys is a sysfs with one raid6 array of n members (slots 0..n-3, two spares), each with its
// state, slot and corrected read errors, written under a temporary directory (fstest.MapFS would cost
// a scan of every file for each missing one).
func bigArraySys(t testing.TB, n int) fs.FS {
	md := "block/md0/md/"
	sys := fstest.MapFS{
		"block/md0/size":      {Data: []byte("1073741824\n")},
		md + "level":          {Data: []byte("raid6\n")},
		md + "array_state":    {Data: []byte("clean\n")},
		md + "raid_disks":     {Data: fmt.Appendf(nil, "%d\n", n-2)},
		md + "degraded":       {Data: []byte("0\n")},
		md + "sync_action":    {Data: []byte("idle\n")},
		md + "mismatch_cnt":   {Data: []byte("0\n")},
		md + "uuid":           {Data: []byte("8f882718-1df7-322d-2ddc-4f065da20a36\n")},
		md + "component_size": {Data: []byte("1048576\n")},
		md + "chunk_size":     {Data: []byte("524288\n")},
		md + "sync_completed": {Data: []byte("none\n")},
		md + "sync_speed":     {Data: []byte("none\n")},
		md + "layout":         {Data: []byte("2\n")},
	}
	for i := range n {
		dev := fmt.Sprintf("%sdev-sd%d/", md, i)
		state, slot := "in_sync\n", fmt.Sprintf("%d\n", i)
		if i >= n-2 {
			state, slot = "spare\n", "none\n"
		}
		sys[dev+"state"] = &fstest.MapFile{Data: []byte(state)}
		sys[dev+"slot"] = &fstest.MapFile{Data: []byte(slot)}
		sys[dev+"errors"] = &fstest.MapFile{Data: fmt.Appendf(nil, "%d\n", i%7)}
	}
	dir := t.TempDir()
	for name, f := range sys {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), f.Data, 0o644))
	}
	return os.DirFS(dir)
}

// arrayOnThisThread reads the arrays on the calling goroutine (mdraid.Reader reads each in its own), so
// that thread CPU counts the reading and parsing too.
type arrayOnThisThread struct{ sys fs.FS }

func (a arrayOnThisThread) Read(context.Context) ([]mdraid.Result, error) {
	arr, err := mdraid.ReadArray(a.sys, "md0")
	return []mdraid.Result{{Array: arr, Err: err}}, nil
}

// An md array costs the same per member at 100 members and at 1 000 (past the most md's v1 metadata
// holds): reading, parsing, sorting, the member series, the verdict and the points.
func TestScrapeLinearInMDMembers(t *testing.T) {
	testkit.RequireLinear(t, "md members per scrape", 100, testkit.ThreadCPU, func(n int) func() {
		sys := bigArraySys(t, n)
		rig := newRig(t, readers{sys: sys, md: arrayOnThisThread{sys}}, nil)
		scrape := func() {
			md := rig.scrape(t)
			v, ok := point(t, md, "disk_health.logical_disk.md.raid_disks", map[string]string{"hw.id": "md:8f882718-1df7-322d-2ddc-4f065da20a36"})
			require.True(t, ok)
			require.InDelta(t, float64(n-2), v, 0)
		}
		scrape() // every member's first series
		return scrape
	})
}

// BenchmarkScrapeMDMembers is one stack scrape of an array of 100 and of 1 000 members: the time per
// member stays flat.
func BenchmarkScrapeMDMembers(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			sys := bigArraySys(b, n)
			rig := newRig(&testing.T{}, readers{sys: sys, md: arrayOnThisThread{sys}}, nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rig.s.scrape(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/member")
		})
	}
}

package filesystemscraper

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage/fsusagetest"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	dhtest "github.com/diskhealth/diskhealth/internal/testkit"
)

// manyMounts is a mount table of n ext4 filesystems on distinct devices, all reported, with statfs
// answering each.
func manyMounts(root string, n int) (string, *fsusagetest.Statfs) {
	var sb strings.Builder
	f := &fsusagetest.Statfs{Answers: make(map[string]unix.Statfs_t, n)}
	for i := range n {
		mp := fmt.Sprintf("/m/%d", i)
		fmt.Fprintf(&sb, "%d 1 %d:%d / %s rw,relatime shared:%d - ext4 /dev/disk%d rw\n", i+2, 8+i>>8, i&255, mp, i, i)
		f.Answers[filepath.Join(root, mp)] = fsusagetest.Ext4(1_000_000, uint64(i), uint64(i), 65_536, 60_000)
	}
	return sb.String(), f
}

// A scrape costs the same per mount at 1 000 mounts and at 10 000: statfs bookkeeping, forecast and
// emit (fsusage's TestSelectLinearInMounts takes the table itself to 50 000; a scrape of 50 000 takes
// seconds under the race detector). Process CPU, because statfs runs on the prober's workers.
func TestScrapeLinearInMounts(t *testing.T) {
	dhtest.RequireLinear(t, "mounts per scrape", 1000, dhtest.ProcessCPU, func(n int) func() {
		root := t.TempDir()
		mountinfo, f := manyMounts(root, n)
		clock := t0
		s := newTestFSScraper(t, root, mountinfo, f, &clock)
		scrape := func() {
			clock = clock.Add(time.Minute)
			md, err := s.scrape(t.Context())
			require.NoError(t, err)
			require.Equal(t, n, md.ResourceMetrics().Len(), "one resource per mount")
		}
		scrape() // the table's first read and every mount's first statfs
		return scrape
	})
}

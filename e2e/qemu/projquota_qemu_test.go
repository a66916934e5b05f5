package qemu

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
)

// TestProjectQuotasQEMU (issue 21, "done when" 5): in the QEMU guest, whose Debian kernel has the XFS and
// ext4 project quotas the CI host's kernel is built without, a loop-mounted XFS (-o prjquota) and a
// loop-mounted ext4 (-O quota,project, -o prjquota) hold 1 000 project directories each, filled with
// different sizes (a file of 0–31 blocks and a tail; every fifth a subdirectory with a second file). The
// receiver, with project_quotas on and max_per_filesystem 1 000, reports every one; its usage equals GNU
// du -sB1 of the directory within one block, the limits set on every hundredth come back as set, the
// headroom is the hard limit's where one is set, and each carries its /etc/projid name and /etc/projects
// directory.
func TestProjectQuotasQEMU(t *testing.T) {
	_, run := bootGuest(t, "projquotaguest", 15*time.Minute, nil)
	var b vmproto.ProjQuotaBundle
	run.bundle(t, vmproto.MarkerProjQuota, &b)
	require.Len(t, b.Filesystems, 2)
	for _, f := range b.Filesystems {
		require.Len(t, f.Dirs, 1000, f.Type)
		require.Positive(t, f.Block, f.Type)
		worst, limited := int64(0), 0
		for name, d := range f.Dirs {
			diff := d.Usage - d.Du
			worst = max(worst, diff, -diff)
			assert.LessOrEqual(t, max(diff, -diff), f.Block, "%s %s: usage %d, du -sB1 %d", f.Type, name, d.Usage, d.Du)
			assert.Positive(t, d.Du, "%s %s: du saw the files", f.Type, name)
			assert.Equal(t, f.Type+"-"+name, d.Name, "%s %s: the projid name", f.Type, name)
			assert.Equal(t, d.SetHard, d.GotHard, "%s %s: hard limit", f.Type, name)
			assert.Equal(t, d.SetSoft, d.GotSoft, "%s %s: soft limit", f.Type, name)
			if d.SetHard > 0 {
				limited++
				assert.Equal(t, d.SetHard-d.Usage, d.Headroom, "%s %s: the hard limit binds the headroom", f.Type, name)
			}
		}
		assert.Equal(t, 10, limited, f.Type)
		t.Logf("%s: 1 000 project directories, usage − du -sB1 at most %d bytes (block %d)", f.Type, worst, f.Block)
	}
}

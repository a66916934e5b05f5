package qemu

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
)

// TestStackQEMU (issue 13, "done when" 1-3 and 2's privilege clause; issue 36, "done when" 1): in one
// boot of the QEMU guest, the stack source (run by e2e/internal/stackguest with only that source; the
// nvme part with the I/O and SMART sources beside it) against the kernel's own tools.
//
//   - md: a RAID1 over two scsi_debug disks. Level, size, raid disks, degraded count, member states and
//     hw.status equal `mdadm --detail` and /proc/mdstat when clean, after `mdadm --fail` of one member
//     (degraded, with exactly one state-change event naming the member and its hw.id) and after it was
//     removed and added back (recovery progress sampled rising to done, then ok again).
//   - thin: a dmsetup thin pool (64 MiB of data in 64 KiB blocks, error_if_no_space) and a 128 MiB thin
//     volume: data and metadata usage equal `dmsetup status` empty (ok), filled to 60 MiB (past the
//     0.9 threshold: degraded) and filled until the pool runs out of data space (failed).
//   - multipath: a dm-multipath map over two null_blk paths: two active paths and ok, then after
//     `dmsetup message mpath 0 fail_path` one active, one failed, degraded, with one event.
//   - nvme (issue 36): native NVMe multipath over the kernel's NVMe target: one subsystem (a namespace on
//     null_blk) exported on two NVMe/TCP ports of 127.0.0.1 (Debian's 6.1 kernel has no nvme-loop) and
//     connected through both with nvme-cli. disk_health.nvme.subsystem.paths by state, ANA state and
//     transport and the namespace's live and optimized paths equal `nvme list-subsys -o json` (with
//     the head: ANA states) with two live paths, after the target unlinked the subsystem from one port
//     (that controller connecting: live 2 → 1, live_max 2, exactly one paths_lost naming it) and after it
//     was linked again (the controller reconnects: exactly one paths_restored naming it). The head's
//     system.disk.io (I/O source) and the path series share its hw.id, and the smart source has a series
//     with it too (its read status is recorded only: nvmet's SMART log has a composite temperature of
//     0 K, which the smart source refuses). About 12 s of the boot under TCG.
//   - unprivileged: the guest program again as nobody (no CAP_SYS_ADMIN), with the I/O source too:
//     device_mapper's read status is permission_denied, logged once over four scrapes and the only
//     warning; md and the error counters read ok, md0's hw.status is root's, the I/O source exports.
func TestStackQEMU(t *testing.T) {
	_, run := bootGuest(t, "stackguest", 10*time.Minute, nil)
	var b vmproto.StackBundle
	run.bundle(t, vmproto.MarkerStack, &b)
	require.True(t, strings.HasPrefix(b.Kernel, "6.1."), "the guest runs Debian's 6.1 kernel, not %s", b.Kernel)

	for _, name := range []string{"md", "thin", "multipath", "nvme", "unprivileged"} {
		t.Run(name, func(t *testing.T) {
			p := b.Parts[name]
			require.NotNil(t, p, "the guest did not run the %s part", name)
			for _, l := range p.Logs {
				t.Logf("guest: %s", strings.TrimSpace(l))
			}
			steps := make([]string, 0, len(p.Tools))
			for s := range p.Tools {
				steps = append(steps, s)
			}
			slices.Sort(steps)
			for _, s := range steps {
				t.Logf("%s:\n%s", s, p.Tools[s])
			}
			series := make([]string, 0, len(p.Series))
			for s := range p.Series {
				series = append(series, s)
			}
			slices.Sort(series)
			for _, s := range series {
				t.Logf("%-40s %.4f", s, p.Series[s])
			}
			for _, c := range p.Checks {
				t.Logf("%-70s want %-12s got %s", c.What, c.Want, c.Got)
				assert.Equal(t, c.Want, c.Got, "%s", c.What)
			}
			require.NotEmpty(t, p.Checks, "no comparisons")
			require.Empty(t, p.Errors, "the %s part stopped", name)
		})
	}
}

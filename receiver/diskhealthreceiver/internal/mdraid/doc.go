// Package mdraid reads Linux software RAID (md) arrays from sysfs and
// /proc/mdstat. It needs no privileges and runs no program.
//
// For the scraper author:
//
//   - NewReader(sys, timeout) and Reader.Read(ctx) list every array under
//     <sys>/block/md*/md and return one Result per array. Each array is
//     read in its own goroutine through a bounded.Guard: md's sysfs
//     attributes take the array's reconfiguration lock, so an array stuck in
//     a reshape or a suspend can block a read; such an array reports
//     bounded.ErrTimeout (then bounded.ErrInFlight until the read returns)
//     and the others are unaffected. sys is an fs.FS rooted at /sys (or
//     <root_path>/sys), e.g. os.DirFS("/sys").
//   - ReadArray(sys, name) is the same read without a deadline, for tests
//     and tools.
//   - An Array carries what a logical-disk metric needs: UUID (md/uuid,
//     Linux 5.10+: the identity that survives reboots and renames), Level, State
//     (array_state), SizeBytes (hw.logical_disk.limit), RaidDisks, Degraded
//     (missing members; -1 for levels without redundancy), SyncAction and
//     Sync (Progress 0-1, SpeedBytes, ETA, valid while Sync.Running),
//     MismatchSectors, and Members. Each Member has its kernel Name (sda1,
//     from dev-*/block, the join key towards the physical disk's hw.id via
//     blockdev), Slot, Flags (in_sync, faulty, spare, write_mostly, blocked,
//     ...) and CorrectedReadErrors.
//   - Redundancy says how many members an array can lose; a verdict rule
//     compares it with Degraded (a degraded array vs. a failed one). The rules
//     themselves belong to the health engine, not here.
//   - ParseMdstat parses /proc/mdstat; CrossCheck compares it with an
//     Array and lists disagreements (useful in a debug log or an e2e test,
//     since mdstat is what administrators read and mdadm agrees with).
//
// Units: sizes in bytes, speeds in bytes per second (the kernel's sysfs
// values are sectors and KiB), mismatch counts in 512-byte sectors as the
// kernel counts them, progress as a ratio.
package mdraid // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/mdraid"

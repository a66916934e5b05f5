// Package dm reads device-mapper targets' health: LVM thin pools and thin
// volumes, multipath maps, through read-only ioctls on
// /dev/mapper/control, and names dm devices from sysfs.
//
// For the scraper author:
//
//   - NewReader(cfg).Read(ctx) returns every dm device (Device: Name, UUID,
//     Major:Minor, flags) with its targets (Target: Type, Start/Length in
//     sectors, Status and Table strings), in one bounded.Guard call with a
//     deadline. Status is the kernel's status line (`dmsetup status`
//     without the leading start/length/type), Table the table line
//     (`dmsetup table`).
//   - Decode a target with ParseThinPoolStatus + ParseThinPoolTable
//     (data/metadata used and total in blocks; DataBlockBytes and
//     MetadataBlockBytes turn them into bytes; Mode ro/out_of_data_space,
//     NeedsCheck, Fail), ParseThinStatus (mapped bytes of a thin volume) and
//     ParseMultipathStatus (groups and paths; Counts gives total / active /
//     failed). All parsers are pure and fuzzed.
//   - Names: ReadSysfsName gives dm/name and dm/uuid without privileges
//     (the same two the ioctl returns); SplitLVMName turns "vg-lv" into VG
//     and LV (with the "--" escaping LVM uses), ParseUUID says whose device
//     it is ("LVM-", "mpath-", "CRYPT-", ...) and its LVM layer ("-tpool").
//   - Privilege: the kernel answers device-mapper ioctls only with
//     CAP_SYS_ADMIN (and the control node is root's, mode 0600). Any EACCES
//     or EPERM is returned as a *PermissionError (errors.Is(err,
//     ErrPermission)): report permission_denied once and keep the other
//     sources running. Elsewhere than Linux every call returns
//     ErrUnsupported.
//
// # Read-only guarantee
//
// Every ioctl goes through Allowed first (allowlist.go): only DM_VERSION,
// DM_LIST_DEVICES and DM_TABLE_STATUS are sent, and DM_TABLE_STATUS only
// with DM_NOFLUSH_FLAG. That flag matters: without it the thin-pool (and
// cache, clone) status handler commits the pool's metadata before
// answering, which is a write to the metadata device; with it the kernel
// reports the last committed state (what `dmsetup status --noflush` and
// LVM's monitoring show). Nothing here creates, loads, suspends, renames,
// removes, messages or waits on a device, and no program runs.
package dm // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/dm"

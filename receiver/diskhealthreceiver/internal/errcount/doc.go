// Package errcount reads the kernel's own error counters below and inside
// filesystems: SCSI disks' I/O counters, ext4's recorded errors and the
// read-only remount they cause, and btrfs per-device error statistics.
// Everything comes from sysfs and mountinfo (plus, for btrfs with more
// than one device, the device's superblock to learn its devid); nothing is
// written and no program runs.
//
// For the scraper author:
//
//   - ReadSCSI(sys, "sda") → SCSICounters{Requests, Done, Errors,
//     Timeouts} from device/{iorequest_cnt,iodone_cnt,ioerr_cnt,iotmo_cnt}
//     (hex in sysfs, 32-bit counters the kernel prints sign-extended from
//     2^31 on: ParseSCSICounter). fs.ErrNotExist means "not a SCSI-driven
//     disk" (NVMe, virtio): skip it. These are hw.errors on the physical
//     disk; they count pass-through commands too, so they are no count of
//     I/O errors (an ATA command sent with CK_COND counts in ioerr_cnt).
//   - ReadExt4(sys) → one Ext4Errors per mounted ext4 (Device is the
//     kernel name, /sys/fs/ext4/<dev>): Count (when HasCount) and first/last error times
//     and codes. The mount table is the filesystem source's parser's
//     (fsusage.ParseMountInfo; Mount.ReadOnlyAfterErrors tells a filesystem
//     the kernel switched to read-only after errors from one an
//     administrator mounted ro). DeviceName(sys, major, minor) joins
//     mountinfo's major:minor to the kernel name.
//   - BtrfsReader.Read(ctx) → one BtrfsDeviceErrors per btrfs device
//     (FSID, DevID, Device name, Write/Read/Flush/Corruption/Generation).
//     sysfs lists devids (devinfo/<id>) and device names (devices/<name>)
//     but does not pair them; with one device the pair is obvious, with
//     more the reader opens /dev/<name> read-only and reads the devid from
//     the btrfs superblock (64 KiB in; needs read access to the device
//     node, bounded by a deadline per device). An unpaired devid keeps
//     Device "" and the error says why.
//
// All counters are cumulative since mount (ext4 and btrfs persist theirs
// on disk across mounts; SCSI's restart at boot).
package errcount // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/errcount"

// Package device is the SMART source's contact with the machine: it finds the
// physical disks in sysfs (Discover), talks to them through read-only ioctls
// (SG_IO with ATA PASS-THROUGH or plain SCSI commands, NVMe admin
// passthrough), and reads every disk in its own goroutine with a deadline
// (Reader). What it reads is decoded by the pure packages ata, nvme and scsi
// and handed back as a per-disk Snapshot for the health engine and the
// metrics.
//
// ATA IDENTIFY, SMART data and thresholds and the NVMe SMART / health log
// are read through github.com/anatol/smart.go (Library, on Linux); every
// other command goes through Conn, which asks smart.Allowed before each
// ioctl, and the allowlist refuses the commands smart.go sends, so they have
// one way to a disk. A Transport (the ioctl layer, or a test double) only
// ever sees commands the allowlist let through. Nothing here runs a program
// or sends a command that writes to a disk.
package device // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"

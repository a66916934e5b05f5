// Package smart reads drive health through read-only SMART, NVMe and SCSI
// commands. Decoding lives in the subpackages (ata, nvme, scsi) and the
// verdict in health; this package holds what the device layer must obey,
// starting with the allowlist of commands it may ever send (Allowed).
package smart // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart"

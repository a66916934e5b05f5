// Package stackscraper is the stack source of the disk_health receiver: md RAID arrays and device-mapper
// thin pools, thin volumes and multipath maps as logical disks with one health verdict each (and log
// events when it changes), native NVMe multipath and NVMe over Fabrics paths per subsystem and namespace
// (and log events when a namespace loses or regains paths), and the kernel's and filesystems' own error
// counters (SCSI, ext4, btrfs), which it also posts on the signs board for the physical disks' SMART
// verdict.
//
//go:generate go tool -modfile=../../../../../internal/tools/go.mod mdatagen metadata.yaml
package stackscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"

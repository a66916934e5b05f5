// Package smartscraper is the SMART source of the disk_health receiver: every physical disk's SMART,
// NVMe or SCSI health read with read-only ioctls on its own interval, a health verdict per disk, and
// log events when it changes.
//
//go:generate go tool -modfile=../../../../../internal/tools/go.mod mdatagen metadata.yaml
package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

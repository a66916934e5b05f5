// Package pressurescraper is the pressure source of the disk_health receiver: the host's I/O pressure
// stall information from /proc/pressure/io.
//
//go:generate go tool -modfile=../../../../../internal/tools/go.mod mdatagen metadata.yaml
package pressurescraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/pressurescraper"

// Package cgroupsscraper is the cgroups source of the disk_health receiver: the busiest cgroups' I/O
// per device (cgroup v2 io.stat and io.pressure, v1 blkio), attributed to containers, pods and units.
//
//go:generate go tool -modfile=../../../../../internal/tools/go.mod mdatagen metadata.yaml
//go:generate go run -C ../../../../../internal/tools ./emitgen ../../receiver/diskhealthreceiver/internal/scraper/cgroupsscraper
package cgroupsscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/cgroupsscraper"

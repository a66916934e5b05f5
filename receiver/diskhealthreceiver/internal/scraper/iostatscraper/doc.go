// Package iostatscraper is the iostat source of the disk_health receiver: per-device counters from
// /proc/diskstats, the iostat -x gauges computed as sysstat does, and device identity from sysfs.
//
//go:generate sh -c "go tool -modfile=../../../../../internal/tools/go.mod mdatagen hostmetrics.yaml && mv documentation.md documentation-hostmetrics.md"
//go:generate go tool -modfile=../../../../../internal/tools/go.mod mdatagen metadata.yaml
//go:generate go run -C ../../../../../internal/tools ./emitgen ../../receiver/diskhealthreceiver/internal/scraper/iostatscraper
package iostatscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper"

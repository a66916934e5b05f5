// Package filesystemscraper is the filesystem source of the disk_health receiver: df and df -i of the
// host's mounts, with a deadline on every statfs, stuck-mount status and a time-to-full forecast.
//
//go:generate sh -c "go tool -modfile=../../../../../internal/tools/go.mod mdatagen hostmetrics.yaml && mv documentation.md documentation-hostmetrics.md"
//go:generate go tool -modfile=../../../../../internal/tools/go.mod mdatagen metadata.yaml
//go:generate go run -C ../../../../../internal/tools ./emitgen ../../receiver/diskhealthreceiver/internal/scraper/filesystemscraper
package filesystemscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"

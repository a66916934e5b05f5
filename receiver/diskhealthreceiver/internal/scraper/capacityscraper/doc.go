// Package capacityscraper is the capacity source of the disk_health receiver: what can still be written
// where a training job writes. Per capacity domain (a filesystem, once whatever the number of its mounts)
// the binding limit among free blocks and the kubelet's eviction thresholds, each pod's /dev/shm against
// its memory limit, project quotas, and the checkpoint learner with its writers. It reads the receiver's
// one mount snapshot, which the filesystem source reads too, so a mount is statfs'd once per tick.
//
//go:generate go tool -modfile=../../../../../internal/tools/go.mod mdatagen metadata.yaml
//go:generate go run -C ../../../../../internal/tools ./emitgen ../../receiver/diskhealthreceiver/internal/scraper/capacityscraper
package capacityscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/capacityscraper"

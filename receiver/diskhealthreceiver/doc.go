// Package diskhealthreceiver implements the disk_health receiver: per-device I/O with iostat -x gauges
// computed as sysstat does, read from /proc/diskstats and sysfs, and filesystem usage with statfs
// deadlines, all under root_path. Each source runs in its own scraper controller.
//
//go:generate go tool -modfile=../../internal/tools/go.mod mdatagen metadata.yaml
package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

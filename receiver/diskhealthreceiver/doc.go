// Package diskhealthreceiver implements the disk_health receiver: per-device I/O with iostat -x gauges
// computed as sysstat does, read from /proc/diskstats and sysfs under root_path.
//
//go:generate go tool -modfile=../../internal/tools/go.mod mdatagen metadata.yaml
package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

// Package diskhealthreceiver implements the disk_health receiver. Each source is one folder,
// internal/scraper/<source>scraper, declared once in the registry (registry.go); its config section is
// the key of its name, and it runs in its own scraper controller, so a slow source never delays another.
// The sources (TestDocsNameEverySource keeps this list complete):
//
//   - iostat: per-device I/O from /proc/diskstats, the iostat -x gauges computed as sysstat does.
//   - filesystem: df and df -i of the mounts, a deadline on every statfs, a time-to-full forecast,
//     capacity domains and whether the next checkpoint save fits.
//   - smart: SMART / NVMe / SCSI health with read-only ioctls on its own interval, a verdict, events.
//   - pressure: the host's I/O pressure stall information (/proc/pressure/io).
//   - cgroups: the busiest cgroups' I/O, attributed to containers, pods and systemd units.
//   - latency: per-device block request latency histograms and kernel-seen I/O errors (eBPF).
//   - stack: md RAID, device-mapper thin pools and multipath as logical disks; SCSI, ext4, btrfs errors.
//
// Everything is read under root_path when the collector runs in a container.
//
//go:generate go tool -modfile=../../internal/tools/go.mod mdatagen metadata.yaml
package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

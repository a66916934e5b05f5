// Package noisy is the noisy-neighbour verdict: per (cgroup, device) it learns the cgroup's own
// latency baseline and opens an episode when the cgroup's latency (or, on cgroup v2, its I/O
// pressure stall) rises to k times that baseline while another cgroup holds at least a share x of the
// same device's queue occupancy. It takes one interval's values and its timestamp, reads no clock and
// no file, and keeps state only for the cgroups and devices it has seen recently.
package noisy // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/noisy"

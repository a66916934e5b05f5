// Package fsusage measures filesystem usage the way df does, without ever
// letting a hung filesystem stall a scrape, and forecasts time to full.
//
// The pieces, from pure to system-facing:
//
//   - ParseMountInfo parses /proc/<pid>/mountinfo bytes; Select adds
//     DropShadowed, Translate (root_path), Filter and Dedupe.
//   - UsageFromStatfs turns a statfs result into used/free/reserved bytes
//     and inodes; Forecaster fits free space over time.
//   - MountTable keeps the selected mounts and re-reads the file only when
//     the kernel signals a change; Prober runs statfs with deadlines and
//     stuck-mount tracking; Collector ties them together.
//
// UsageFromStatfs, MountTable, Prober and Collector are Linux-only;
// elsewhere NewCollector fails with an error saying so.
//
// # root_path
//
// In a container with the host's / mounted at root_path (say /hostfs), the
// table is <root_path>/proc/1/mountinfo, the host init's view, whose mount
// points are host paths: a mount is reported at its host path and statfs'd
// at root_path+path. If that file cannot be read (hidepid), the fallback
// is <root_path>/proc/self/mountinfo, the collector's own view: host
// mounts appear there below root_path, so they are reported with the
// prefix removed and statfs'd as listed, and the container's own mounts
// are dropped. Either way the same host paths are reported and filters
// see them. See Translate for how this relates to hostmetrics.
//
// A statfs under root_path measures whatever is mounted there in the
// collector's namespace. A host mount made after the container started
// reaches the container only with mount propagation (Kubernetes
// mountPropagation: HostToContainer, Docker rslave); without it the
// statfs silently measures the parent filesystem. This package cannot
// tell the two apart cheaply, so deployments should enable propagation.
package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

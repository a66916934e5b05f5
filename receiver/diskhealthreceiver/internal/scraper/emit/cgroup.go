package emit // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/cgroupio"
)

// The identity of a per-cgroup point, written once for the hand-built histograms (PutCgroupIdentity)
// and the generated builders' options (CgroupOptions), so that every source's per-cgroup series carry
// the same attributes: cgroup.path always (the one identity every cgroup has, and what keeps two
// series apart where a backend drops resource attributes), and the pod and container its path names.

// PutCgroupIdentity puts cgroup.path and the k8s.pod.uid and container.id that path names on attrs.
func PutCgroupIdentity(attrs pcommon.Map, path string) {
	attrs.PutStr("cgroup.path", path)
	a := cgroupio.Attribute(path)
	if a.PodUID != "" {
		attrs.PutStr("k8s.pod.uid", a.PodUID)
	}
	if a.ContainerID != "" {
		attrs.PutStr("container.id", a.ContainerID)
	}
}

// CgroupOptions are a generated builder's options for the k8s.pod.uid and container.id that a
// cgroup's path names (cgroup.path itself is a required argument of the record call).
func CgroupOptions[O any](path string, podUID, containerID func(string) O) []O {
	var o []O
	a := cgroupio.Attribute(path)
	if a.PodUID != "" {
		o = append(o, podUID(a.PodUID))
	}
	if a.ContainerID != "" {
		o = append(o, containerID(a.ContainerID))
	}
	return o
}

package cgroupio

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const (
	id64   = "06ea17a8981d25b0315ff17bd1ebad3d95c15a3f8b764eaadb93612d9b61a54e"
	uid    = "3f6c1f2e-8b1a-4c55-9a59-1d2f0e6b7a01"
	uidSys = "3f6c1f2e_8b1a_4c55_9a59_1d2f0e6b7a01"
)

func TestAttribute(t *testing.T) {
	for _, tc := range []struct {
		path string
		want Attribution
	}{
		// kubelet systemd driver, containerd, each QoS class.
		{"/kubepods.slice/kubepods-pod" + uidSys + ".slice/cri-containerd-" + id64 + ".scope",
			Attribution{ContainerID: id64, Runtime: "containerd", PodUID: uid, QoSClass: QoSGuaranteed}},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidSys + ".slice/cri-containerd-" + id64 + ".scope",
			Attribution{ContainerID: id64, Runtime: "containerd", PodUID: uid, QoSClass: QoSBurstable}},
		{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidSys + ".slice/cri-containerd-" + id64 + ".scope",
			Attribution{ContainerID: id64, Runtime: "containerd", PodUID: uid, QoSClass: QoSBestEffort}},
		// CRI-O: the container, and conmon, which belongs to the pod only.
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidSys + ".slice/crio-" + id64 + ".scope",
			Attribution{ContainerID: id64, Runtime: "cri-o", PodUID: uid, QoSClass: QoSBurstable}},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidSys + ".slice/crio-conmon-" + id64 + ".scope",
			Attribution{PodUID: uid, QoSClass: QoSBurstable}},
		// cri-dockerd (Docker under the kubelet, systemd driver).
		{"/kubepods.slice/kubepods-pod" + uidSys + ".slice/docker-" + id64 + ".scope",
			Attribution{ContainerID: id64, Runtime: "docker", PodUID: uid, QoSClass: QoSGuaranteed}},
		// kubelet cgroupfs driver: bare ids (runtime unknown), CRI-O's crio- prefix.
		{"/kubepods/burstable/pod" + uid + "/" + id64, Attribution{ContainerID: id64, PodUID: uid, QoSClass: QoSBurstable}},
		{"/kubepods/besteffort/pod" + uid + "/crio-" + id64, Attribution{ContainerID: id64, Runtime: "cri-o", PodUID: uid, QoSClass: QoSBestEffort}},
		{"/kubepods/pod" + uid + "/" + id64, Attribution{ContainerID: id64, PodUID: uid, QoSClass: QoSGuaranteed}},
		// Levels above the container, reported when max_depth stops there.
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidSys + ".slice", Attribution{PodUID: uid, QoSClass: QoSBurstable}},
		{"/kubepods.slice/kubepods-besteffort.slice", Attribution{QoSClass: QoSBestEffort}},
		{"/kubepods.slice", Attribution{}},
		{"/kubepods/burstable", Attribution{QoSClass: QoSBurstable}},
		// kind and other --cgroup-root setups prefix every name.
		{"/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + uidSys + ".slice/cri-containerd-" + id64 + ".scope",
			Attribution{ContainerID: id64, Runtime: "containerd", PodUID: uid, QoSClass: QoSBestEffort}},
		// A container that runs systemd: the container's scope names it, whatever is below.
		{"/kubepods.slice/kubepods-pod" + uidSys + ".slice/cri-containerd-" + id64 + ".scope/init.scope",
			Attribution{ContainerID: id64, Runtime: "containerd", PodUID: uid, QoSClass: QoSGuaranteed}},
		// Docker and podman without Kubernetes.
		{"/system.slice/docker-" + id64 + ".scope", Attribution{ContainerID: id64, Runtime: "docker"}},
		{"/docker/" + id64, Attribution{ContainerID: id64, Runtime: "docker"}},
		{"/machine.slice/libpod-" + id64 + ".scope", Attribution{ContainerID: id64, Runtime: "podman"}},
		{"/machine.slice/libpod-conmon-" + id64 + ".scope", Attribution{SystemdUnit: "libpod-conmon-" + id64 + ".scope"}},
		// Host services and sessions.
		{"/system.slice/kubelet.service", Attribution{SystemdUnit: "kubelet.service"}},
		{"/system.slice/docker.service", Attribution{SystemdUnit: "docker.service"}},
		{"/system.slice/system-getty.slice/getty@tty1.service", Attribution{SystemdUnit: "getty@tty1.service"}},
		{"/user.slice/user-1000.slice/session-3.scope", Attribution{SystemdUnit: "session-3.scope"}},
		{"system.slice/dev-disk-by\\x2duuid-0a1b.swap", Attribution{SystemdUnit: "dev-disk-by\\x2duuid-0a1b.swap"}},
		{"/system.slice", Attribution{SystemdUnit: "system.slice"}},
		// Nothing recognisable.
		{"/", Attribution{}},
		{"/mygroup/sub", Attribution{}},
		{"/" + id64, Attribution{}}, // a bare id outside Kubernetes and Docker
		{"/kubepods/podnot-a-uid/" + id64, Attribution{ContainerID: id64}}, // inside kubepods, pod unknown
		{"/system.slice/docker-" + id64[:63] + ".scope", Attribution{SystemdUnit: "docker-" + id64[:63] + ".scope"}},
		{"/system.slice/docker-" + id64[:63] + "G.scope", Attribution{SystemdUnit: "docker-" + id64[:63] + "G.scope"}},
		{"/kubepods.slice/kubepods-pod" + uidSys[:35] + ".slice", Attribution{}},
		{"/.service", Attribution{}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			assert.Equal(t, tc.want, Attribute(tc.path))
		})
	}
}

package cgroupio

import "strings"

// Attribution is what a cgroup's path says about whose I/O it is. Empty fields are unknown.
type Attribution struct {
	// ContainerID is the 64-hex-digit id of the container (docker, containerd, CRI-O, podman).
	ContainerID string
	// Runtime is the container runtime the path names: containerd, cri-o, docker or podman. Empty when
	// the path has a container id without a runtime prefix (the cgroupfs driver's bare ids).
	Runtime string
	// PodUID is the Kubernetes pod UID, in its canonical dashed form.
	PodUID string
	// QoSClass is the pod's Kubernetes QoS class: guaranteed, burstable or besteffort.
	QoSClass string
	// SystemdUnit is the systemd unit (service, scope, slice …) of a cgroup that is not a Kubernetes pod or
	// container: a host service such as kubelet.service or a login session.
	SystemdUnit string
}

// Kubernetes QoS classes as the attribute values.
const (
	QoSGuaranteed = "guaranteed"
	QoSBurstable  = "burstable"
	QoSBestEffort = "besteffort"
)

// containerPrefixes maps the systemd scope prefixes of container runtimes (and CRI-O's cgroupfs
// directory prefix) to the runtime.
var containerPrefixes = []struct{ prefix, runtime string }{
	{"cri-containerd-", "containerd"},
	{"crio-", "cri-o"},
	{"docker-", "docker"},
	{"libpod-", "podman"},
}

// Attribute parses a cgroup path relative to the hierarchy's root ("/kubepods.slice/…"). It knows the
// kubelet's systemd and cgroupfs drivers (all QoS classes), containerd, CRI-O (conmon scopes belong to
// the pod, not to a container), Docker and podman, and systemd units. Pure: no file is read.
//
//	/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope
//	/kubepods.slice/kubepods-pod<uid_>.slice/crio-<id>.scope             (guaranteed)
//	/kubepods/besteffort/pod<uid>/<id>                                    (cgroupfs driver)
//	/system.slice/docker-<id>.scope    /docker/<id>                       (Docker without Kubernetes)
//	/system.slice/kubelet.service      /user.slice/user-1000.slice/session-3.scope
func Attribute(path string) Attribution {
	var a Attribution
	inKube := false
	unit := ""
	prev := ""
	for comp := range strings.SplitSeq(strings.Trim(path, "/"), "/") {
		switch {
		case comp == "":
		case isKubepods(comp):
			inKube = true
			if qos := qosOfSlice(comp); qos != "" {
				a.QoSClass = qos
			}
		case inKube && (comp == QoSBurstable || comp == QoSBestEffort):
			a.QoSClass = comp // cgroupfs driver
		case inKube && a.PodUID == "" && strings.HasPrefix(comp, "pod") && isUUID(comp[3:]):
			a.PodUID = comp[3:] // cgroupfs driver
			if a.QoSClass == "" {
				a.QoSClass = QoSGuaranteed
			}
		default:
			if id, rt, ok := containerOf(comp, prev, inKube); ok {
				a.ContainerID, a.Runtime = id, rt
			} else if isUnit(comp) {
				unit = comp
			}
		}
		if inKube && strings.HasSuffix(comp, ".slice") && a.PodUID == "" {
			if uid, ok := podOfSlice(comp); ok {
				a.PodUID = uid
				if a.QoSClass == "" {
					a.QoSClass = QoSGuaranteed
				}
			}
		}
		prev = comp
	}
	if a.ContainerID == "" && a.PodUID == "" && a.QoSClass == "" && !inKube {
		a.SystemdUnit = unit
	}
	return a
}

// isKubepods matches the kubelet's top-level and QoS cgroups: "kubepods" (cgroupfs), "kubepods.slice",
// "kubepods-burstable.slice", and the same under a --cgroup-root prefix such as kind's
// "kubelet-kubepods.slice". Pod slices also contain "kubepods" and are told apart by podOfSlice.
func isKubepods(comp string) bool {
	if comp == "kubepods" {
		return true
	}
	name, ok := strings.CutSuffix(comp, ".slice")
	if !ok {
		return false
	}
	return strings.HasSuffix(name, "kubepods") || strings.HasSuffix(name, "kubepods-"+QoSBurstable) ||
		strings.HasSuffix(name, "kubepods-"+QoSBestEffort)
}

func qosOfSlice(comp string) string {
	name := strings.TrimSuffix(comp, ".slice")
	switch {
	case strings.HasSuffix(name, "-"+QoSBurstable):
		return QoSBurstable
	case strings.HasSuffix(name, "-"+QoSBestEffort):
		return QoSBestEffort
	}
	return ""
}

// podOfSlice reads a systemd-driver pod slice, "kubepods-burstable-pod<uid with _>.slice" or
// "kubepods-pod<uid>.slice", and returns the UID with dashes (systemd turns them into "_").
func podOfSlice(comp string) (string, bool) {
	name := strings.TrimSuffix(comp, ".slice")
	i := strings.LastIndex(name, "-pod")
	if i < 0 || !strings.Contains(name[:i], "kubepods") {
		return "", false
	}
	uid := strings.ReplaceAll(name[i+len("-pod"):], "_", "-")
	return uid, isUUID(uid)
}

// containerOf recognises a container cgroup: a runtime's systemd scope ("docker-<id>.scope"), CRI-O's
// cgroupfs directory ("crio-<id>"), a bare id inside a pod (containerd with the cgroupfs driver) or
// below "docker" (Docker's cgroupfs driver). Conmon scopes ("crio-conmon-<id>.scope") are not containers.
func containerOf(comp, parent string, inKube bool) (id, runtime string, ok bool) {
	name := strings.TrimSuffix(comp, ".scope")
	for _, p := range containerPrefixes {
		rest, found := strings.CutPrefix(name, p.prefix)
		if found && isContainerID(rest) {
			return rest, p.runtime, true
		}
	}
	if name == comp && isContainerID(comp) {
		switch {
		case parent == "docker":
			return comp, "docker", true
		case inKube:
			return comp, "", true
		}
	}
	return "", "", false
}

func isUnit(comp string) bool {
	for _, suffix := range []string{".service", ".scope", ".slice", ".socket", ".mount", ".swap"} {
		if strings.HasSuffix(comp, suffix) && len(comp) > len(suffix) {
			return true
		}
	}
	return false
}

// isContainerID accepts the 64 lower-case hex digits every OCI runtime here uses.
func isContainerID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// isUUID accepts the 8-4-4-4-12 hex form of a pod UID.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isHex(s[i]) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

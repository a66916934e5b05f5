// Package podshm finds the memory-backed shared memory of Kubernetes pods (emptyDir volumes with
// medium: Memory, the usual way to give a pod a /dev/shm larger than 64 MiB) and how much more can be
// written there: the least of what the tmpfs has free and what the pod's memory cgroup still allows,
// since tmpfs pages count against the pod's memory limit. It is pure: paths and file contents in,
// values out.
package podshm // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/podshm"

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// EmptyDir returns the pod UID and volume name of the memory emptyDir mounted at mountPoint (a host
// path), which the kubelet mounts at <kubeletRoot>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>.
func EmptyDir(mountPoint, kubeletRoot string) (uid, volume string, ok bool) {
	rest, found := strings.CutPrefix(mountPoint, path.Clean(kubeletRoot)+"/pods/")
	if !found {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[1] != "volumes" || parts[2] != "kubernetes.io~empty-dir" || !validUID(parts[0]) || parts[3] == "" {
		return "", "", false
	}
	return parts[0], parts[3], true
}

// validUID accepts a pod UID as the kubelet writes it: hex digits and dashes, 36 characters.
func validUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for _, c := range s {
		if c != '-' && (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// CgroupDirs are the directories, relative to the cgroup mount, where the kubelet puts pod uid's
// cgroup, for the cgroupfs and systemd drivers and every QoS class; a pod has one of them.
func CgroupDirs(uid string) []string {
	u := strings.ReplaceAll(uid, "-", "_")
	return []string{
		"kubepods/pod" + uid,
		"kubepods/burstable/pod" + uid,
		"kubepods/besteffort/pod" + uid,
		"kubepods.slice/kubepods-pod" + u + ".slice",
		"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + u + ".slice",
		"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + u + ".slice",
	}
}

// Memory is a cgroup's memory limit and use.
type Memory struct {
	Limit, Usage uint64
	// Unlimited: no limit (v2 "max", v1 the page-rounded maximum).
	Unlimited bool
}

// v1Unlimited: cgroup v1 shows "no limit" as the largest page multiple of int64; anything that large
// is no limit.
const v1Unlimited = 1 << 62

var errValue = errors.New("not a byte count")

// ParseV2 reads memory.max and memory.current of a cgroup v2 directory.
func ParseV2(max, current []byte) (Memory, error) {
	usage, err := parseBytes(current)
	if err != nil {
		return Memory{}, fmt.Errorf("memory.current: %w", err)
	}
	if strings.TrimSpace(string(max)) == "max" {
		return Memory{Usage: usage, Unlimited: true}, nil
	}
	limit, err := parseBytes(max)
	if err != nil {
		return Memory{}, fmt.Errorf("memory.max: %w", err)
	}
	return Memory{Limit: limit, Usage: usage}, nil
}

// ParseV1 reads memory.limit_in_bytes and memory.usage_in_bytes of a cgroup v1 memory directory.
func ParseV1(limit, usage []byte) (Memory, error) {
	u, err := parseBytes(usage)
	if err != nil {
		return Memory{}, fmt.Errorf("memory.usage_in_bytes: %w", err)
	}
	l, err := parseBytes(limit)
	if err != nil {
		return Memory{}, fmt.Errorf("memory.limit_in_bytes: %w", err)
	}
	if l >= v1Unlimited {
		return Memory{Usage: u, Unlimited: true}, nil
	}
	return Memory{Limit: l, Usage: u}, nil
}

func parseBytes(b []byte) (uint64, error) {
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", errValue, truncate(b))
	}
	return v, nil
}

func truncate(b []byte) string {
	if len(b) > 32 {
		b = b[:32]
	}
	return string(b)
}

// Bound is what limits writing to a pod's shared memory first.
type Bound uint8

const (
	// BoundTmpfs means: the tmpfs's size (ENOSPC).
	BoundTmpfs Bound = iota
	// BoundCgroup means: the pod's memory limit (the OOM killer, or reclaim of the pod's other memory).
	BoundCgroup
)

func (b Bound) String() string {
	if b == BoundCgroup {
		return "cgroup_memory"
	}
	return "tmpfs"
}

// Headroom is min(tmpfs free, limit − usage): what can still be written before ENOSPC or the pod's
// memory limit, and which bites first (the tmpfs when equal). A cgroup already over its limit has 0.
func Headroom(tmpfsFree uint64, m Memory, haveCgroup bool) (uint64, Bound) {
	if !haveCgroup || m.Unlimited {
		return tmpfsFree, BoundTmpfs
	}
	left := uint64(0)
	if m.Limit > m.Usage {
		left = m.Limit - m.Usage
	}
	if left < tmpfsFree {
		return left, BoundCgroup
	}
	return tmpfsFree, BoundTmpfs
}

package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"errors"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
)

// FilterConfig selects mounts. Every pattern is a Go regexp matched against
// the whole value (it is anchored: "/data" does not match "/data2"). A
// mount is kept when it passes all three dimensions; in each, it must match
// the include list when that list is non-empty and must not match the
// exclude list.
//
// Filesystem classes (see Classify) add a default on top of the fs-type
// lists: local filesystems are kept, memory ones only with IncludeMemory,
// remote ones only with IncludeRemote, virtual ones never. A non-empty
// FSTypes.Include replaces that default: naming a type there opts it in,
// whatever its class, so filesystem.fs_types.include: [nfs4] reports NFS.
type FilterConfig struct {
	MountPoints   match.Config // host-view mount points (Mount.MountPoint)
	FSTypes       match.Config
	Devices       match.Config // mount sources (Mount.Source)
	IncludeMemory bool         // tmpfs, ramfs
	IncludeRemote bool         // nfs, cifs, fuse.*, ...
}

// DefaultExcludeMountPoints lists container, kubelet and kernel trees whose
// mounts are per-container views or duplicates of host filesystems. A
// persistent volume stays visible at its kubelet plugin mount (CSI
// globalmount) even though its per-pod mounts are excluded.
func DefaultExcludeMountPoints() []string {
	return []string{
		`/(proc|sys)(/.*)?`,
		`/run/credentials/.+`,
		`/var/lib/docker/.+`,
		`/var/lib/containers/storage/.+`,
		`/run/containers/storage/.+`,
		`/var/lib/containerd/.+`,
		`/run/containerd/.+`,
		`/run/k3s/containerd/.+`,
		`/var/lib/rancher/k3s/agent/containerd/.+`,
		`/var/lib/kubelet/pods/.+`,
		`/home/kubernetes/containerized_mounter/.+`,
	}
}

// DefaultFilterConfig is the filter used when nothing is configured.
func DefaultFilterConfig() FilterConfig {
	return FilterConfig{MountPoints: match.Config{Exclude: DefaultExcludeMountPoints()}}
}

// Filter is a compiled FilterConfig. It is safe for concurrent use.
type Filter struct {
	mountPoints, fsTypes, devices *match.Matcher
	memory, remote                bool
}

// NewFilter compiles cfg. key is the config section ("filesystem"): an error names the list and the
// pattern as the user wrote them (filesystem.mount_points.exclude[0]).
func NewFilter(key string, cfg FilterConfig) (*Filter, error) {
	mp, mpErr := cfg.MountPoints.Compile(key + ".mount_points")
	fs, fsErr := cfg.FSTypes.Compile(key + ".fs_types")
	dev, devErr := cfg.Devices.Compile(key + ".devices")
	if err := errors.Join(mpErr, fsErr, devErr); err != nil {
		return nil, err
	}
	return &Filter{mountPoints: mp, fsTypes: fs, devices: dev, memory: cfg.IncludeMemory, remote: cfg.IncludeRemote}, nil
}

// Match reports whether the mount is kept.
func (f *Filter) Match(m *Mount) bool {
	if f.fsTypes.HasInclude() {
		if !f.fsTypes.Included(m.FSType) {
			return false
		}
	} else {
		switch m.Class {
		case ClassVirtual:
			return false
		case ClassMemory:
			if !f.memory {
				return false
			}
		case ClassRemote:
			if !f.remote {
				return false
			}
		}
	}
	return f.fsTypes.Match(m.FSType) && f.mountPoints.Match(m.MountPoint) && f.devices.Match(m.Source)
}

package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"fmt"
	"regexp"
	"strings"
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
// IncludeFSTypes replaces that default: naming a type there opts it in,
// whatever its class, so include_fs_types: [nfs4] reports NFS.
type FilterConfig struct {
	IncludeMountPoints []string // host-view mount points (Mount.MountPoint)
	ExcludeMountPoints []string
	IncludeFSTypes     []string
	ExcludeFSTypes     []string
	IncludeDevices     []string // mount sources (Mount.Source)
	ExcludeDevices     []string
	IncludeMemory      bool // tmpfs, ramfs
	IncludeRemote      bool // nfs, cifs, fuse.*, ...
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
	return FilterConfig{ExcludeMountPoints: DefaultExcludeMountPoints()}
}

// Filter is a compiled FilterConfig. It is safe for concurrent use.
type Filter struct {
	mpInclude, mpExclude   *regexp.Regexp
	fsInclude, fsExclude   *regexp.Regexp
	devInclude, devExclude *regexp.Regexp
	memory, remote         bool
}

// NewFilter compiles cfg. An error names the list and the bad pattern.
func NewFilter(cfg FilterConfig) (*Filter, error) {
	f := &Filter{memory: cfg.IncludeMemory, remote: cfg.IncludeRemote}
	for _, l := range []struct {
		name     string
		patterns []string
		dst      **regexp.Regexp
	}{
		{"include_mount_points", cfg.IncludeMountPoints, &f.mpInclude},
		{"exclude_mount_points", cfg.ExcludeMountPoints, &f.mpExclude},
		{"include_fs_types", cfg.IncludeFSTypes, &f.fsInclude},
		{"exclude_fs_types", cfg.ExcludeFSTypes, &f.fsExclude},
		{"include_devices", cfg.IncludeDevices, &f.devInclude},
		{"exclude_devices", cfg.ExcludeDevices, &f.devExclude},
	} {
		re, err := compileList(l.name, l.patterns)
		if err != nil {
			return nil, err
		}
		*l.dst = re
	}
	return f, nil
}

// compileList joins the patterns into one anchored alternation, so a mount
// costs one regexp run per list. (?s) lets "." match a newline, which a
// mount point may contain once unescaped.
func compileList(name string, patterns []string) (*regexp.Regexp, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	parts := make([]string, len(patterns))
	for i, p := range patterns {
		// Compile each alone first so the error names the culprit.
		if _, err := regexp.Compile(p); err != nil {
			return nil, fmt.Errorf("%s[%d] %q: %w", name, i, p, err)
		}
		parts[i] = "(?:" + p + ")"
	}
	return regexp.Compile(`(?s)^(?:` + strings.Join(parts, "|") + `)$`)
}

// Match reports whether the mount is kept.
func (f *Filter) Match(m *Mount) bool {
	if f.fsInclude != nil {
		if !f.fsInclude.MatchString(m.FSType) {
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
	return pass(f.fsExclude, nil, m.FSType) &&
		pass(f.mpExclude, f.mpInclude, m.MountPoint) &&
		pass(f.devExclude, f.devInclude, m.Source)
}

func pass(exclude, include *regexp.Regexp, s string) bool {
	if include != nil && !include.MatchString(s) {
		return false
	}
	return exclude == nil || !exclude.MatchString(s)
}

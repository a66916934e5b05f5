package fsusage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
)

func TestFilter(t *testing.T) {
	mk := func(mp, fsType, src string) Mount {
		return Mount{MountPoint: mp, FSType: fsType, Source: src, Class: Classify(fsType)}
	}
	var (
		root     = mk("/", "ext4", "/dev/sda1")
		data     = mk("/data", "xfs", "/dev/sdb1")
		data2    = mk("/data2", "xfs", "/dev/sdb2")
		shm      = mk("/dev/shm", "tmpfs", "tmpfs")
		nfs      = mk("/mnt/nas", "nfs4", "nas:/export")
		sshfs    = mk("/home/a/r", "fuse.sshfs", "a@h:/")
		usb      = mk("/media/usb", "fuseblk", "/dev/sdc1")
		proc     = mk("/proc", "proc", "proc")
		overlay  = mk("/var/lib/docker/overlay2/abc/merged", "overlay", "overlay")
		kubelet  = mk("/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/pvc/mount", "ext4", "/dev/sdd")
		csi      = mk("/var/lib/kubelet/plugins/kubernetes.io/csi/x/globalmount", "ext4", "/dev/sdd")
		loop     = mk("/mnt/img", "ext4", "/dev/loop3")
		newline  = mk("/var/lib/docker/a\nb", "ext4", "/dev/sde")
		sysmount = mk("/sys/fs/cgroup", "tmpfs", "tmpfs")
	)
	all := []Mount{root, data, data2, shm, nfs, sshfs, usb, proc, overlay, kubelet, csi, loop, newline, sysmount}
	tests := []struct {
		name string
		cfg  FilterConfig
		want []string
	}{
		{"defaults", DefaultFilterConfig(), []string{"/", "/data", "/data2", "/media/usb", csi.MountPoint, "/mnt/img"}},
		{"no config at all keeps local filesystems only", FilterConfig{},
			[]string{"/", "/data", "/data2", "/media/usb", kubelet.MountPoint, csi.MountPoint, "/mnt/img", newline.MountPoint}},
		{"memory opt-in", FilterConfig{MountPoints: match.Config{Exclude: DefaultExcludeMountPoints()}, IncludeMemory: true},
			[]string{"/", "/data", "/data2", "/dev/shm", "/media/usb", csi.MountPoint, "/mnt/img"}},
		{"remote opt-in", FilterConfig{MountPoints: match.Config{Exclude: DefaultExcludeMountPoints()}, IncludeRemote: true},
			[]string{"/", "/data", "/data2", "/mnt/nas", "/home/a/r", "/media/usb", csi.MountPoint, "/mnt/img"}},
		{"include fs types replaces the class default", FilterConfig{FSTypes: match.Config{Include: []string{"nfs4", "proc", "xfs"}}},
			[]string{"/data", "/data2", "/mnt/nas", "/proc"}},
		{"include fs types is a full match", FilterConfig{FSTypes: match.Config{Include: []string{"fuse"}}}, nil},
		{"include fs types with a pattern", FilterConfig{FSTypes: match.Config{Include: []string{`fuse\..*`}}}, []string{"/home/a/r"}},
		{"exclude fs types", FilterConfig{FSTypes: match.Config{Exclude: []string{"xfs", "fuseblk"}}},
			[]string{"/", kubelet.MountPoint, csi.MountPoint, "/mnt/img", newline.MountPoint}},
		{"include mount points is a full match", FilterConfig{MountPoints: match.Config{Include: []string{"/data"}}}, []string{"/data"}},
		{"include and exclude mount points", FilterConfig{MountPoints: match.Config{Include: []string{"/data.*"}, Exclude: []string{"/data2"}}},
			[]string{"/data"}},
		{"exclude devices", FilterConfig{Devices: match.Config{Exclude: []string{`/dev/loop\d+`, "/dev/sdb.*"}}},
			[]string{"/", "/media/usb", kubelet.MountPoint, csi.MountPoint, newline.MountPoint}},
		{"include devices", FilterConfig{Devices: match.Config{Include: []string{"/dev/sd[ab]1"}}}, []string{"/", "/data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewFilter("filesystem", tt.cfg)
			require.NoError(t, err)
			var got []string
			for i := range all {
				if f.Match(&all[i]) {
					got = append(got, all[i].MountPoint)
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFilterBadPattern(t *testing.T) {
	_, err := NewFilter("filesystem", FilterConfig{FSTypes: match.Config{Exclude: []string{"ok", "bad("}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `filesystem.fs_types.exclude[1]: invalid regular expression "bad("`)
}

func TestDefaultFilterCompiles(t *testing.T) {
	_, err := NewFilter("filesystem", DefaultFilterConfig())
	require.NoError(t, err)
	assert.NotNil(t, defaultFilter())
}

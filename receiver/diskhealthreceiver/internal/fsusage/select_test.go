package fsusage

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "mountinfo", name))
	require.NoError(t, err)
	return data
}

// formatMounts renders mounts one per line for golden files; %q keeps
// escapes and non-UTF-8 bytes visible.
func formatMounts(mounts []Mount) string {
	var b strings.Builder
	for _, m := range mounts {
		fmt.Fprintf(&b, "mountpoint=%q path=%q dev=%s root=%q type=%s source=%q mode=%s class=%s\n",
			m.MountPoint, m.Path, m.MajorMinor(), m.Root, m.FSType, m.Source, m.Mode(), m.Class)
	}
	return b.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	testkit.GoldenBytes(t, filepath.Join("testdata", "golden", name), []byte(got))
}

func TestSelectGolden(t *testing.T) {
	withMemory, err := NewFilter("filesystem", FilterConfig{MountPoints: match.Config{Exclude: DefaultExcludeMountPoints()}, IncludeMemory: true, IncludeRemote: true})
	require.NoError(t, err)
	noPathExcludes, err := NewFilter("filesystem", FilterConfig{})
	require.NoError(t, err)
	tests := []struct {
		golden, fixture string
		opts            SelectOptions
	}{
		{"k8s_node.golden", "k8s_node.txt", SelectOptions{}},
		{"k8s_node_dedupe_root.golden", "k8s_node.txt", SelectOptions{Dedupe: DedupeKeepBinds}},
		// Dedupe alone, without the default path excludes, already folds
		// the pod mounts of each volume into its staging mount.
		{"k8s_node_no_path_excludes.golden", "k8s_node.txt", SelectOptions{Filter: noPathExcludes}},
		{"docker_host_init.golden", "docker_host_init.txt", SelectOptions{RootPath: "/hostfs", View: ViewInit}},
		{"docker_host_init_all_classes.golden", "docker_host_init.txt", SelectOptions{RootPath: "/hostfs", View: ViewInit, Filter: withMemory}},
		{"docker_host_self.golden", "docker_host_self.txt", SelectOptions{RootPath: "/hostfs", View: ViewSelf}},
		{"escaped.golden", "escaped.txt", SelectOptions{}},
		{"btrfs.golden", "btrfs.txt", SelectOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			got, err := Select(readFixture(t, tt.fixture), tt.opts)
			require.NoError(t, err)
			checkGolden(t, tt.golden, formatMounts(got))
			assertSelectInvariants(t, got, tt.opts)
		})
	}
}

// assertSelectInvariants checks what must hold for any selection, so the
// golden files cannot silently bless a duplicate or a pseudo filesystem.
func assertSelectInvariants(t *testing.T, mounts []Mount, opts SelectOptions) {
	t.Helper()
	require.NotEmpty(t, mounts)
	excluded := regexp.MustCompile(`^(?:` + strings.Join(DefaultExcludeMountPoints(), "|") + `)$`)
	mps := map[string]bool{}
	roots := map[rootKey]bool{}
	for _, m := range mounts {
		assert.False(t, mps[m.MountPoint], "mount point %q twice", m.MountPoint)
		mps[m.MountPoint] = true
		k := rootKey{m.Major, m.Minor, m.Root}
		if opts.Dedupe != DedupeKeep {
			assert.False(t, roots[k], "%s %q twice", m.MajorMinor(), m.Root)
		}
		roots[k] = true
		assert.NotEqual(t, ClassVirtual, m.Class, "virtual filesystem %s at %q", m.FSType, m.MountPoint)
		if opts.Filter == nil {
			assert.Equal(t, ClassLocal, m.Class, "%s at %q is not kept by default", m.FSType, m.MountPoint)
		}
		if opts.Filter == nil || !opts.Filter.mountPoints.Match("/proc") { // a filter with the default excludes
			assert.False(t, excluded.MatchString(m.MountPoint), "%q is excluded by default", m.MountPoint)
		}
		root := filepath.Clean("/" + opts.RootPath)
		if root == "/" {
			assert.Equal(t, m.MountPoint, m.Path)
		} else {
			assert.True(t, hasPathPrefix(m.Path, root), "path %q outside root_path", m.Path)
			assert.Equal(t, filepath.Join(root, m.MountPoint), m.Path)
		}
	}
}

func TestSelectKubernetesNode(t *testing.T) {
	data := readFixture(t, "k8s_node.txt")
	all, err := ParseMountInfo(data)
	require.NoError(t, err)
	require.Greater(t, len(all), 700, "a node with hundreds of pod mounts")

	got, err := Select(data, SelectOptions{})
	require.NoError(t, err)
	var mps []string
	for _, m := range got {
		mps = append(mps, m.MountPoint)
	}
	// The root disk once, the data disk once (not again as its binds at
	// /var/lib/containerd and /var/lib/kubelet), each persistent volume
	// once at its CSI staging path, not at the pod paths.
	assert.Subset(t, mps, []string{"/", "/boot/efi", "/mnt/data"})
	assert.NotContains(t, mps, "/var/lib/kubelet")
	assert.NotContains(t, mps, "/var/lib/containerd")
	assert.NotContains(t, mps, "/home/kubernetes/containerized_mounter/rootfs")
	assert.Len(t, got, 3+12)
	for _, m := range got[3:] {
		assert.Regexp(t, `^/var/lib/kubelet/plugins/kubernetes.io/csi/ebs.csi.aws.com/[0-9a-f]{64}/globalmount$`, m.MountPoint)
	}
}

func TestSelectDockerViewsAgree(t *testing.T) {
	init, err := Select(readFixture(t, "docker_host_init.txt"), SelectOptions{RootPath: "/hostfs", View: ViewInit})
	require.NoError(t, err)
	self, err := Select(readFixture(t, "docker_host_self.txt"), SelectOptions{RootPath: "/hostfs", View: ViewSelf})
	require.NoError(t, err)
	require.Len(t, self, len(init))
	for i := range init {
		a, b := init[i], self[i]
		assert.Equal(t, a.MountPoint, b.MountPoint)
		assert.Equal(t, a.Path, b.Path)
		assert.Equal(t, a.MajorMinor(), b.MajorMinor())
		assert.Equal(t, a.Source, b.Source)
		// The container binds everything read-only; the host mounts are rw.
		assert.Equal(t, a.ReadOnly, b.ReadOnly, a.MountPoint)
	}
	assert.Equal(t, "/", init[0].MountPoint)
	assert.Equal(t, "/hostfs", init[0].Path)
}

func TestTranslate(t *testing.T) {
	mk := func(mp string) Mount { return Mount{MountPoint: mp, Path: mp} }
	tests := []struct {
		name     string
		root     string
		view     View
		in       []Mount
		wantMP   []string
		wantPath []string
	}{
		{"no root path", "", ViewInit, []Mount{mk("/"), mk("/a")}, []string{"/", "/a"}, []string{"/", "/a"}},
		{"root path slash", "/", ViewSelf, []Mount{mk("/"), mk("/a")}, []string{"/", "/a"}, []string{"/", "/a"}},
		{
			"init view joins", "/hostfs/", ViewInit,
			[]Mount{mk("/"), mk("/boot"), mk("/hostfs/x"), mk("/hostfsx")},
			[]string{"/", "/boot", "/hostfs/x", "/hostfsx"},
			// hostmetrics: a mount point already under root_path is used as is.
			[]string{"/hostfs", "/hostfs/boot", "/hostfs/x", "/hostfs/hostfsx"},
		},
		{
			"self view strips and drops the container's own", "/hostfs", ViewSelf,
			[]Mount{mk("/"), mk("/etc/hosts"), mk("/hostfs"), mk("/hostfs/boot"), mk("/hostfsx")},
			[]string{"/", "/boot"},
			[]string{"/hostfs", "/hostfs/boot"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Translate(tt.in, tt.root, tt.view)
			var mps, paths []string
			for _, m := range got {
				mps = append(mps, m.MountPoint)
				paths = append(paths, m.Path)
			}
			assert.Equal(t, tt.wantMP, mps)
			assert.Equal(t, tt.wantPath, paths)
		})
	}
}

func TestTranslateSelfViewReadOnly(t *testing.T) {
	// The container's :ro bind makes the mount flag ro; only the
	// superblock says whether the host filesystem is.
	data := "1 0 8:1 / /hostfs ro - ext4 /dev/sda1 rw\n" +
		"2 1 8:2 / /hostfs/ro ro - ext4 /dev/sda2 ro\n" +
		"3 1 8:3 / /hostfs/err ro - ext4 /dev/sda3 rw,emergency_ro\n"
	got, err := Select([]byte(data), SelectOptions{RootPath: "/hostfs", View: ViewSelf})
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.False(t, got[0].ReadOnly)
	assert.True(t, got[1].ReadOnly)
	assert.True(t, got[2].ReadOnly)
	assert.True(t, got[2].EmergencyRO)

	// In init's view the mount flag is the host's own.
	initData := "1 0 8:1 / / ro - ext4 /dev/sda1 rw\n" +
		"2 1 8:2 / /ro rw - ext4 /dev/sda2 ro\n" +
		"3 1 8:3 / /err rw - ext4 /dev/sda3 rw,emergency_ro\n"
	got, err = Select([]byte(initData), SelectOptions{RootPath: "/hostfs", View: ViewInit})
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.True(t, got[0].ReadOnly)
	assert.True(t, got[1].ReadOnly)
	assert.True(t, got[2].ReadOnly)
}

func TestDropShadowed(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []int // IDs kept
	}{
		{
			"child on top, in file order",
			"25 26 0:23 / /dev/pts rw - devpts devpts rw\n" +
				"28 25 0:25 / /dev/pts rw - devpts devpts rw\n",
			[]int{28},
		},
		{
			"child on top, listed first",
			"28 25 0:25 / /dev/pts rw - devpts devpts rw\n" +
				"25 26 0:23 / /dev/pts rw - devpts devpts rw\n",
			[]int{28},
		},
		{
			"chain of three in any order",
			"30 29 8:3 / /x rw - ext4 /dev/c rw\n" +
				"28 1 8:1 / /x rw - ext4 /dev/a rw\n" +
				"29 28 8:2 / /x rw - ext4 /dev/b rw\n",
			[]int{30},
		},
		{
			"unrelated IDs: the last wins",
			"40 1 8:1 / /y rw - ext4 /dev/a rw\n" +
				"41 1 8:2 / /y rw - ext4 /dev/b rw\n" +
				"42 1 8:3 / /z rw - ext4 /dev/c rw\n",
			[]int{41, 42},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mounts, err := ParseMountInfo([]byte(tt.data))
			require.NoError(t, err)
			var ids []int
			for _, m := range DropShadowed(mounts) {
				ids = append(ids, m.ID)
			}
			assert.Equal(t, tt.want, ids)
		})
	}
}

func TestDedupe(t *testing.T) {
	data := "" +
		"1 0 8:1 / /var/lib/kubelet/pods/x/mount rw - ext4 /dev/sda1 rw\n" + // same (dev, root) as /, longer
		"2 0 8:1 / / rw - ext4 /dev/sda1 rw\n" +
		"3 0 8:1 /srv /srv rw - ext4 /dev/sda1 rw\n" + // bind of a directory of /
		"4 0 8:1 /srv/a /b rw - ext4 /dev/sda1 rw\n" + // deeper bind
		"5 0 8:2 /data /data rw - ext4 /dev/sdb rw\n" + // bind, but nothing above it is mounted
		"6 0 8:2 /data/x /x rw - ext4 /dev/sdb rw\n" + // bind below the previous
		"7 0 8:3 / /m2 rw - ext4 /dev/sdc rw\n" + // same length: lexicographic
		"8 0 8:3 / /m1 rw - ext4 /dev/sdc rw\n"
	tests := []struct {
		mode DedupeMode
		want []string
	}{
		{DedupeDrop, []string{"/", "/data", "/m1"}},
		{DedupeKeepBinds, []string{"/", "/srv", "/b", "/data", "/x", "/m1"}},
		{DedupeKeep, []string{"/var/lib/kubelet/pods/x/mount", "/", "/srv", "/b", "/data", "/x", "/m2", "/m1"}},
	}
	for _, tt := range tests {
		mounts, err := ParseMountInfo([]byte(data))
		require.NoError(t, err)
		var mps []string
		for _, m := range Dedupe(mounts, tt.mode) {
			mps = append(mps, m.MountPoint)
		}
		assert.Equal(t, tt.want, mps, "mode %d", tt.mode)
	}
}

func TestDedupeBtrfsSubvolumes(t *testing.T) {
	got, err := Select(readFixture(t, "btrfs.txt"), SelectOptions{})
	require.NoError(t, err)
	var mps []string
	for _, m := range got {
		mps = append(mps, m.MountPoint)
	}
	// Every subvolume once, even with the top level mounted too; the
	// second mount of @home and the bind of @var/www are not repeated.
	assert.Equal(t, []string{"/", "/home", "/var", "/.snapshots", "/opt", "/boot/efi", "/mnt/pool", "/data", "/scratch"}, mps)
}

func TestSelectFilterBeforeDedupe(t *testing.T) {
	data := "1 0 8:1 / /a rw - ext4 /dev/sda1 rw\n" +
		"2 0 8:1 / /longer/b rw - ext4 /dev/sda1 rw\n"
	f, err := NewFilter("filesystem", FilterConfig{MountPoints: match.Config{Exclude: []string{"/a"}}})
	require.NoError(t, err)
	got, err := Select([]byte(data), SelectOptions{Filter: f})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "/longer/b", got[0].MountPoint)
}

func TestSelectReportsBadLines(t *testing.T) {
	got, err := Select([]byte("1 0 8:1 / / rw - ext4 /dev/sda1 rw\nbroken\n"), SelectOptions{})
	require.Len(t, got, 1)
	var perr *parseerr.Lines
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, 2, perr.Lines[0].Line)
}

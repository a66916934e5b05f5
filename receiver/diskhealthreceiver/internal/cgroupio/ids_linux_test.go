package cgroupio

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// IDs names every directory of a tree by its inode number, relative to the root, and skips files.
func TestIDsMapsInodesToPaths(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"kubepods.slice/kubepods-pod1.slice/cri-containerd-a.scope", "system.slice/kubelet.service"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "system.slice", "io.stat"), nil, 0o644))
	ino := func(rel string) uint64 {
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(filepath.Join(root, rel), &st))
		return st.Ino
	}
	ids, err := IDs(root)
	require.NoError(t, err)
	require.Equal(t, map[uint64]string{
		ino("."):              "/",
		ino("kubepods.slice"): "/kubepods.slice",
		ino("kubepods.slice/kubepods-pod1.slice"):                        "/kubepods.slice/kubepods-pod1.slice",
		ino("kubepods.slice/kubepods-pod1.slice/cri-containerd-a.scope"): "/kubepods.slice/kubepods-pod1.slice/cri-containerd-a.scope",
		ino("system.slice"):                 "/system.slice",
		ino("system.slice/kubelet.service"): "/system.slice/kubelet.service",
	}, ids)

	_, err = IDs(filepath.Join(root, "missing"))
	require.Error(t, err)
}

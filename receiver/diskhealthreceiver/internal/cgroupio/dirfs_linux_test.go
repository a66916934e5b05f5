package cgroupio

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
)

func TestAppendDirs(t *testing.T) {
	// Three linux_dirent64 records: a directory, a file, and one of unknown type that is a directory.
	rec := func(name string, typ byte) []byte {
		n := direntName + len(name) + 1
		n = (n + 7) &^ 7
		b := make([]byte, n)
		b[direntReclen] = byte(n)
		b[direntType] = typ
		copy(b[direntName:], name)
		return b
	}
	buf := append(rec("kubepods.slice", dtDir), rec("io.stat", 8)...)
	buf = append(buf, rec(".", dtDir)...)
	buf = append(buf, rec("mystery", dtUnknown)...)
	buf = append(buf, rec("plain", dtUnknown)...)
	asked := []string{}
	got := appendDirs(buf, nil, func(name string) bool {
		asked = append(asked, name)
		return name == "mystery"
	})
	assert.Equal(t, []string{"kubepods.slice", "mystery"}, got)
	assert.Equal(t, []string{"mystery", "plain"}, asked)

	// A truncated record ends the listing instead of reading past the buffer.
	assert.Empty(t, appendDirs(rec("kubepods.slice", dtDir)[:20], nil, nil))
}

// deepBranch makes a chain of depth cgroups of 250-byte names below dir, with the whole path past
// PATH_MAX, and returns a function that writes every io.stat of the chain with k bytes written (a
// hierarchical counter: each ancestor has what the leaf has). The files are made with openat, as no
// path-based call reaches them.
func deepBranch(t *testing.T, dir string, depth int) (write func(k uint64), leaf string) {
	t.Helper()
	names := make([]string, depth)
	for i := range names {
		names[i] = fmt.Sprintf("%02d.", i) + strings.Repeat("x", 246) + ".scope"
	}
	leaf = "/" + strings.Join(names, "/")
	require.Greater(t, len(dir)+len(leaf), pathMax)
	walk := func(each func(fd int)) {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		for _, name := range names {
			if err := unix.Mkdirat(fd, name, 0o755); err != nil {
				require.ErrorIs(t, err, unix.EEXIST)
			}
			next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			require.NoError(t, err)
			require.NoError(t, unix.Close(fd))
			fd = next
			each(fd)
		}
		require.NoError(t, unix.Close(fd))
	}
	walk(func(int) {})
	write = func(k uint64) {
		walk(func(fd int) {
			f, err := unix.Openat(fd, "io.stat", unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
			require.NoError(t, err)
			_, err = unix.Write(f, fmt.Appendf(nil, "8:0 rbytes=0 wbytes=%d rios=0 wios=%d dbytes=0 dios=0\n", k, k>>12))
			require.NoError(t, err)
			require.NoError(t, unix.Close(f))
		})
	}
	return write, leaf
}

// A cgroup whose path is longer than PATH_MAX (max_depth allows 32 levels of 255-byte names) is read
// like any other, through openat from a directory opened piece by piece, not lost to ENAMETOOLONG.
func TestBranchPastPathMax(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "io.stat"), nil, 0o644))
	write, leaf := deepBranch(t, root, 20)
	c, err := NewCollector(NewDirFS(root), Config{Version: V2, TopN: 10, MaxDepth: 32, Start: t1})
	require.NoError(t, err)
	write(1 << 20)
	_, err = c.Collect(t1)
	require.NoError(t, err)
	write(3 << 20)
	res, err := c.Collect(t1.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, res.Cgroups, 1)
	assert.Equal(t, sanitize.String(sanitize.CgroupPath, leaf), res.Cgroups[0].Path, "the path past 4096 bytes, cut and made unique")
	assert.Equal(t, uint64(2<<20), res.Cgroups[0].Bytes)
}

package mountstats

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/prometheus/procfs"
	"github.com/stretchr/testify/require"
)

// node is the mountstats of a GPU node with n NFSv4.2 mounts (each the nconnect=4 fixture's block
// under its own mount point) between local mounts.
func node(t testing.TB, n int) []byte {
	data, err := os.ReadFile(filepath.Join("testdata", "k6.8-v4.2-nconnect4.txt"))
	require.NoError(t, err)
	start := bytes.Index(data, []byte("device nas03"))
	end := bytes.Index(data, []byte("device tmpfs"))
	block := data[start:end]
	var b bytes.Buffer
	b.WriteString("device /dev/nvme0n1p2 mounted on / with fstype ext4\n")
	for i := range n {
		b.Write(bytes.Replace(block, []byte("/mnt/train\\040set"), []byte("/mnt/data"+strconv.Itoa(i)), 1))
		b.WriteString("device tmpfs mounted on /run/user/" + strconv.Itoa(i) + " with fstype tmpfs\n")
	}
	return b.Bytes()
}

// BenchmarkParse16Mounts is one scrape's parse on a node with 16 NFS mounts of ~60 operations and 4
// transports each.
func BenchmarkParse16Mounts(b *testing.B) {
	data := node(b, 16)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		mounts, err := Parse(data)
		if err != nil || len(mounts) != 16 {
			b.Fatalf("%d mounts, %v", len(mounts), err)
		}
	}
}

// BenchmarkProcfs16Mounts is the same file through prometheus/procfs's parser (which opens the file
// itself), for comparison.
func BenchmarkProcfs16Mounts(b *testing.B) {
	dir := b.TempDir()
	require.NoError(b, os.MkdirAll(filepath.Join(dir, "1"), 0o755))
	data := node(b, 16)
	require.NoError(b, os.WriteFile(filepath.Join(dir, "1", "mountstats"), data, 0o644))
	fs, err := procfs.NewFS(dir)
	require.NoError(b, err)
	p, err := fs.Proc(1)
	require.NoError(b, err)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		mounts, err := p.MountStats()
		if err != nil || len(mounts) != 33 {
			b.Fatalf("%d mounts, %v", len(mounts), err)
		}
	}
}

package diskstats

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/prometheus/procfs/blockdevice"
	"github.com/stretchr/testify/require"
)

// BenchmarkParse is the steady state of a scrape: names already interned,
// dst reused. It must report 0 allocs/op.
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run("devices="+strconv.Itoa(n), func(b *testing.B) {
			data := synthetic(n)
			var p Parser
			dst, err := p.Parse(data, nil)
			require.NoError(b, err)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = p.Parse(data, dst)
			}
			require.Len(b, dst, n)
		})
	}
}

// BenchmarkReadAndParse1000 and BenchmarkProcfsProcDiskstats1000 read the
// same 1000-device file from disk, for the record: procfs is what
// node_exporter uses.
func BenchmarkReadAndParse1000(b *testing.B) {
	path := filepath.Join(writeSynthetic(b, 1000), "diskstats")
	var r FileReader
	b.Cleanup(func() { _ = r.Close() })
	var p Parser
	data, err := r.Read(path)
	require.NoError(b, err)
	dst, err := p.Parse(data, nil) // intern the names, size dst
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		data, err := r.Read(path)
		if err != nil {
			b.Fatal(err)
		}
		dst, _ = p.Parse(data, dst)
	}
	require.Len(b, dst, 1000)
}

func BenchmarkProcfsProcDiskstats1000(b *testing.B) {
	path := writeSynthetic(b, 1000)
	fs, err := blockdevice.NewFS(path, b.TempDir())
	require.NoError(b, err)
	var got []blockdevice.Diskstats
	b.ReportAllocs()
	for b.Loop() {
		if got, err = fs.ProcDiskstats(); err != nil {
			b.Fatal(err)
		}
	}
	require.Len(b, got, 1000)
}

func writeSynthetic(b *testing.B, n int) string {
	dir := b.TempDir()
	require.NoError(b, os.WriteFile(filepath.Join(dir, "diskstats"), synthetic(n), 0o600))
	return dir
}

package filelat

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
)

// entry is a files map entry: slot 80 of the histogram is bucket -80, which holds 1 ms.
func entry(mountID uint32, op Op, slot80, bytes, pages, added uint64) (k, v []byte) {
	key := fileKey(mountID, op)
	v = make([]byte, valSize)
	binary.LittleEndian.PutUint64(v[8*80:], slot80)
	binary.LittleEndian.PutUint64(v[biolat.HistSize-8:], slot80*1_000_000) // sum_ns
	binary.LittleEndian.PutUint64(v[biolat.HistSize:], bytes)
	binary.LittleEndian.PutUint64(v[biolat.HistSize+8:], pages)
	binary.LittleEndian.PutUint64(v[biolat.HistSize+16:], added)
	return key[:], v
}

func TestDecodeSeries(t *testing.T) {
	s, err := decodeSeries(entry(4242, Read, 3, 12288, 3, 2))
	require.NoError(t, err)
	require.Equal(t, Series{
		MountID: 4242, Op: Read,
		Histogram: biolat.Histogram{Offset: -80, Buckets: []uint64{3}, Count: 3, Sum: 0.003},
		Bytes:     12288, Pages: 3, PagesAdded: 2,
	}, s)
	for _, op := range []Op{0, maxOp + 1} {
		_, err := decodeSeries(entry(1, op, 0, 0, 0, 0))
		require.ErrorIs(t, err, errBadKey, "op %d", op)
	}
	k, v := entry(1, Read, 0, 0, 0, 0)
	_, err = decodeSeries(k[:4], v)
	require.ErrorIs(t, err, errBadKey)
	_, err = decodeSeries(k, v[:biolat.HistSize])
	require.ErrorIs(t, err, errBadKey)
}

func TestCachePages(t *testing.T) {
	for _, c := range []struct {
		pages, added, hits, misses uint64
	}{
		{pages: 100, added: 0, hits: 100, misses: 0},
		{pages: 100, added: 100, hits: 0, misses: 100},
		{pages: 100, added: 25, hits: 75, misses: 25},
		// A 1-byte read that triggered readahead of 32 pages: one page read, one missed.
		{pages: 1, added: 32, hits: 0, misses: 1},
	} {
		hits, misses := Series{Pages: c.pages, PagesAdded: c.added}.CachePages()
		require.Equal(t, [2]uint64{c.hits, c.misses}, [2]uint64{hits, misses}, "%+v", c)
	}
}

func TestResolve(t *testing.T) {
	mounts, err := fsusage.ParseMountInfo([]byte(
		"27 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n" +
			"45 27 0:40 / /data rw,relatime shared:2 - fuse.s3fs s3fs rw,user_id=0\n"))
	require.NoError(t, err)
	series := []Series{{MountID: 27, Op: Read}, {MountID: 27, Op: Write}, {MountID: 31, Op: Read}, {MountID: 31, Op: Fsync}, {MountID: 45, Op: Read}}
	resolved, gone := Resolve(series, mounts)
	require.Equal(t, []uint32{31}, gone)
	var got []string
	for _, r := range resolved {
		got = append(got, r.Mount.MountPoint+" "+r.Mount.FSType+" "+r.Op.String())
	}
	require.Equal(t, []string{"/ ext4 read", "/ ext4 write", "/data fuse.s3fs read"}, got)
}

func TestSortSeries(t *testing.T) {
	s := []Series{{MountID: 9, Op: Read}, {MountID: 3, Op: Fsync}, {MountID: 3, Op: Read}}
	sortSeries(s)
	require.Equal(t, []Series{{MountID: 3, Op: Read}, {MountID: 3, Op: Fsync}, {MountID: 9, Op: Read}}, s)
}

func FuzzDecodeSeries(f *testing.F) {
	k, v := entry(7, Write, 1, 2, 3, 4)
	f.Add(k, v)
	f.Add(k[:3], v[:10])
	f.Fuzz(func(t *testing.T, k, v []byte) {
		s, err := decodeSeries(k, v)
		if err != nil {
			require.ErrorIs(t, err, errBadKey)
			return
		}
		require.True(t, s.Op >= Read && s.Op <= maxOp)
		require.Equal(t, binary.LittleEndian.Uint32(k), s.MountID)
		hits, misses := s.CachePages()
		require.Equal(t, s.Pages, hits+misses)
		require.LessOrEqual(t, misses, s.PagesAdded)
		back := fileKey(s.MountID, s.Op)
		require.Equal(t, k[:5], back[:5])
	})
}

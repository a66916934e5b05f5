package nfslog

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kmsg holds records as Linux 6.1 printed them in the QEMU NFS guest (e2e TestNFSClientQEMU), one
// with its dictionary, a soft mount's line and a process's imitation.
const kmsg = "6,433,8785183,-;RPC: Registered named UNIX socket transport module.\n" +
	"6,359,4718901,-;nvme nvme0: pci function 0000:00:02.0\n SUBSYSTEM=nvme\n DEVICE=c246:0\n" +
	"5,450,83944807,-;nfs: server 127.0.0.1 not responding, still trying\n" +
	"5,451,83945521,-;nfs: server 127.0.0.2 not responding, still trying\n" +
	"5,452,85000000,c;nfs: server nas02.example.com not responding, timed out\n" +
	"13,453,85000001,-;nfs: server 127.0.0.1 OK\n" +
	"5,455,90054308,-;nfs: server 127.0.0.1 OK\n"

func TestParse(t *testing.T) {
	var got []Line
	bad, err := Parse([]byte(kmsg), func(l Line) { got = append(got, l) })
	require.NoError(t, err)
	assert.Zero(t, bad)
	assert.Equal(t, []Line{
		{Kind: NotResponding, Server: "127.0.0.1", Text: "nfs: server 127.0.0.1 not responding, still trying", Seq: 450, Usec: 83944807},
		{Kind: NotResponding, Server: "127.0.0.2", Text: "nfs: server 127.0.0.2 not responding, still trying", Seq: 451, Usec: 83945521},
		{Kind: NotResponding, Server: "nas02.example.com", Text: "nfs: server nas02.example.com not responding, timed out", Seq: 452, Usec: 85000000},
		// 453 is facility user (13 = 1<<3 | 5): written to /dev/kmsg by a process, not the kernel's.
		{Kind: OK, Server: "127.0.0.1", Text: "nfs: server 127.0.0.1 OK", Seq: 455, Usec: 90054308},
	}, got)
}

func TestParseMalformed(t *testing.T) {
	for name, rec := range map[string]string{
		"no header end":    "5,450,83944807,- nfs: server a OK\n",
		"short header":     "5,450;nfs: server a OK\n",
		"bad priority":     "x,450,1,-;nfs: server a OK\n",
		"bad sequence":     "5,-1,1,-;nfs: server a OK\n",
		"bad time":         "5,450,x,-;nfs: server a OK\n",
		"empty server":     "5,450,1,-;nfs: server  OK\n",
		"server has space": "5,450,1,-;nfs: server a b not responding, still trying\n",
		"control byte":     "5,450,1,-;nfs: server a\x01 OK\n",
		"long server":      "5,450,1,-;nfs: server " + string(make([]byte, 300)) + " OK\n",
	} {
		n := 0
		bad, err := Parse([]byte(rec+"5,451,2,-;nfs: server b OK\n"), func(Line) { n++ })
		require.Error(t, err, name)
		assert.Equal(t, 1, bad, name)
		assert.Equal(t, 1, n, "%s: the next record still counts", name)
	}
	n := 0
	bad, err := Parse([]byte("5,1,1,-;nfs: server a is fine\n5,2,1,-;NFS: server a OK\n"), func(Line) { n++ })
	require.NoError(t, err)
	assert.Zero(t, bad+n, "other lines are no NFS server lines and no error")
}

func TestServer(t *testing.T) {
	for src, want := range map[string]string{
		"127.0.0.1:/srv/nfs/v3": "127.0.0.1",
		"nas02:/ckpt":           "nas02",
		"[fe80::1]:/export":     "fe80::1",
		"[broken:/x":            "[broken",
		"noexport":              "noexport",
	} {
		assert.Equal(t, want, Server(src), src)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(kmsg))
	f.Add([]byte("5,450,1,-;nfs: server a OK"))
	f.Add([]byte("5,450,1,-;nfs: server  not responding, timed out\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		bad, err := Parse(data, func(l Line) {
			require.NotEmpty(t, l.Server)
			require.LessOrEqual(t, len(l.Server), maxServer)
			require.Contains(t, l.Text, l.Server)
			require.Contains(t, []Kind{NotResponding, OK}, l.Kind)
		})
		require.Equal(t, bad > 0, err != nil)
	})
}

package podshm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const uid = "6f1c0e52-0000-4000-8000-000000000001"

func TestEmptyDir(t *testing.T) {
	u, v, ok := EmptyDir("/var/lib/kubelet/pods/"+uid+"/volumes/kubernetes.io~empty-dir/dshm", "/var/lib/kubelet")
	require.True(t, ok)
	assert.Equal(t, uid, u)
	assert.Equal(t, "dshm", v)
	_, _, ok = EmptyDir("/data/kubelet/pods/"+uid+"/volumes/kubernetes.io~empty-dir/dshm", "/data/kubelet/")
	assert.True(t, ok, "another kubelet root, with a trailing slash")
	for _, mp := range []string{
		"/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~secret/token",
		"/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~empty-dir/",
		"/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~empty-dir/dshm/sub",
		"/var/lib/kubelet/pods/not-a-uid/volumes/kubernetes.io~empty-dir/dshm",
		"/run/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/shm",
		"/var/lib/kubeletx/pods/" + uid + "/volumes/kubernetes.io~empty-dir/dshm",
	} {
		_, _, ok := EmptyDir(mp, "/var/lib/kubelet")
		assert.False(t, ok, mp)
	}
}

func TestCgroupDirs(t *testing.T) {
	dirs := CgroupDirs(uid)
	assert.Contains(t, dirs, "kubepods/burstable/pod"+uid)
	assert.Contains(t, dirs, "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod6f1c0e52_0000_4000_8000_000000000001.slice")
}

func TestParse(t *testing.T) {
	m, err := ParseV2([]byte("1073741824\n"), []byte("536870912\n"))
	require.NoError(t, err)
	assert.Equal(t, Memory{Limit: 1 << 30, Usage: 1 << 29}, m)
	m, err = ParseV2([]byte("max\n"), []byte("4096\n"))
	require.NoError(t, err)
	assert.Equal(t, Memory{Usage: 4096, Unlimited: true}, m)
	m, err = ParseV1([]byte("9223372036854771712\n"), []byte("8192\n"))
	require.NoError(t, err)
	assert.Equal(t, Memory{Usage: 8192, Unlimited: true}, m)
	m, err = ParseV1([]byte("268435456\n"), []byte("8192\n"))
	require.NoError(t, err)
	assert.Equal(t, Memory{Limit: 1 << 28, Usage: 8192}, m)
	_, err = ParseV2([]byte("lots"), []byte("1"))
	require.ErrorContains(t, err, "memory.max")
	_, err = ParseV1([]byte("1"), []byte("-1"))
	assert.ErrorContains(t, err, "memory.usage_in_bytes")
}

func TestHeadroom(t *testing.T) {
	h, b := Headroom(100, Memory{Limit: 1000, Usage: 950}, true)
	assert.Equal(t, uint64(50), h)
	assert.Equal(t, BoundCgroup, b)
	h, b = Headroom(100, Memory{Limit: 1000, Usage: 100}, true)
	assert.Equal(t, uint64(100), h)
	assert.Equal(t, BoundTmpfs, b)
	h, b = Headroom(100, Memory{Limit: 1000, Usage: 2000}, true)
	assert.Equal(t, uint64(0), h, "over the limit")
	assert.Equal(t, BoundCgroup, b)
	h, _ = Headroom(100, Memory{Unlimited: true}, true)
	assert.Equal(t, uint64(100), h)
	h, b = Headroom(100, Memory{}, false)
	assert.Equal(t, uint64(100), h)
	assert.Equal(t, "tmpfs", b.String())
	assert.Equal(t, "cgroup_memory", BoundCgroup.String())
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("max\n"), []byte("4096\n"))
	f.Add([]byte("9223372036854771712\n"), []byte("1\n"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		for _, parse := range []func(a, b []byte) (Memory, error){ParseV1, ParseV2} {
			m, err := parse(a, b)
			if err == nil && !m.Unlimited {
				h, _ := Headroom(1<<20, m, true)
				require.LessOrEqual(t, h, uint64(1<<20))
			}
		}
	})
}

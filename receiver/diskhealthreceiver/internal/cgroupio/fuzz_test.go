package cgroupio

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParseIOStat: whatever the input, the devices returned are unique and print back (in the kernel's
// format) to text that parses to the same values without error.
func FuzzParseIOStat(f *testing.F) {
	f.Add([]byte("259:0 rbytes=90112 wbytes=4096 rios=22 wios=1 dbytes=512 dios=1 cost.vrate=100.00\n8:0 rbytes=1 wbytes=2 rios=3 wios=4\n"))
	f.Add([]byte("8:0 rbytes=x\n8-0 rbytes=1\n8:0 rbytes\n\n253:0 dios=18446744073709551615"))
	f.Add([]byte("8:0 rbytes=1\n8:0 rbytes=2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, _ := ParseIOStat(data, nil)
		var out strings.Builder
		for i, st := range got {
			require.Equal(t, -1, (&deviceIndex{}).find(got[:i], st.Major, st.Minor), "device %d:%d twice", st.Major, st.Minor)
			out.WriteString(formatIOStat(st))
		}
		again, err := ParseIOStat([]byte(out.String()), nil)
		require.NoError(t, err)
		require.Len(t, again, len(got))
		for i := range got {
			require.Equal(t, got[i].Counters, again[i].Counters)
		}
	})
}

// FuzzParseBlkio: the same round trip for the v1 pair of files.
func FuzzParseBlkio(f *testing.F) {
	f.Add([]byte("7:0 Read 0\n7:0 Write 67108864\n7:0 Sync 67108864\n7:0 Async 0\n7:0 Discard 0\n7:0 Total 67108864\nTotal 67108864\n"),
		[]byte("7:0 Read 0\n7:0 Write 128\n7:0 Total 128\nTotal 128\n"))
	f.Add([]byte("8:0 Read\nsda Read 1\n8:0 Read 1 2\n8:0 Write -1\n"), []byte("259:0 Read 7\n"))
	f.Add([]byte("Total 0\n"), []byte(nil))
	f.Fuzz(func(t *testing.T, bytesIn, opsIn []byte) {
		got, _ := ParseBlkio(bytesIn, opsIn, nil)
		for i, st := range got {
			require.Equal(t, -1, (&deviceIndex{}).find(got[:i], st.Major, st.Minor))
		}
		b, o := formatBlkio(got)
		again, err := ParseBlkio([]byte(b), []byte(o), nil)
		require.NoError(t, err)
		require.Equal(t, got, again)
	})
}

// FuzzAttribute: every attribute found is well-formed and really in the path, and the attribution
// kinds do not mix (a unit only for what is no container and no pod).
func FuzzAttribute(f *testing.F) {
	for _, p := range []string{
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidSys + ".slice/cri-containerd-" + id64 + ".scope",
		"/kubepods/besteffort/pod" + uid + "/crio-" + id64,
		"/docker/" + id64,
		"/system.slice/kubelet.service",
		"/user.slice/user-1000.slice/session-3.scope",
		"kubepods-pod.slice//-pod.slice",
	} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		a := Attribute(path)
		if a.ContainerID != "" {
			require.True(t, isContainerID(a.ContainerID))
			require.Contains(t, path, a.ContainerID)
		}
		if a.PodUID != "" {
			require.True(t, isUUID(a.PodUID))
			require.True(t, strings.Contains(path, a.PodUID) || strings.Contains(path, strings.ReplaceAll(a.PodUID, "-", "_")))
			require.NotEmpty(t, a.QoSClass)
		}
		require.Contains(t, []string{"", QoSGuaranteed, QoSBurstable, QoSBestEffort}, a.QoSClass)
		require.Contains(t, []string{"", "containerd", "cri-o", "docker", "podman"}, a.Runtime)
		if a.Runtime != "" {
			require.NotEmpty(t, a.ContainerID)
		}
		if a.SystemdUnit != "" {
			require.True(t, slices.Contains(strings.Split(path, "/"), a.SystemdUnit))
			require.Empty(t, a.ContainerID)
			require.Empty(t, a.PodUID)
		}
	})
}

package biolat

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStatusTables(t *testing.T) {
	names := func(kv kernelVersion) []string {
		tab := statusTable(kv)
		var out []string
		for code := range uint8(21) {
			out = append(out, statusName(tab, code))
		}
		return out
	}
	common := []string{"status_0", "notsupp", "timeout", "nospc", "transport", "target", "resv_conflict",
		"medium", "protection", "resource", "ioerr", "dm_requeue", "again", "dev_resource"}
	// Debian 12's 6.1 (the QEMU guest).
	require.Equal(t, append(append([]string{}, common...), "zone_resource", "zone_open_resource",
		"zone_active_resource", "offline", "status_18", "status_19", "status_20"), names(kernelVersion{6, 1}))
	require.Equal(t, append(append([]string{}, common...), "zone_resource", "zone_open_resource",
		"zone_active_resource", "offline", "duration_limit", "status_19", "status_20"), names(kernelVersion{6, 6}))
	require.Equal(t, append(append([]string{}, common...), "zone_open_resource", "zone_active_resource",
		"offline", "duration_limit", "status_18", "status_19", "status_20"), names(kernelVersion{6, 10}))
	// This machine's 6.18.
	require.Equal(t, append(append([]string{}, common...), "zone_open_resource", "zone_active_resource",
		"offline", "duration_limit", "inval", "inval", "status_20"), names(kernelVersion{6, 18}))
	require.Equal(t, "ioerr", statusName(statusTable(kernelVersion{7, 0}), 10))
}

func TestParseKernelRelease(t *testing.T) {
	for in, want := range map[string]kernelVersion{
		"6.18.44-fc-v669": {6, 18}, "5.10.0-28-amd64": {5, 10}, "6.1.0-57-cloud-amd64": {6, 1},
		"4.19": {4, 19}, "6.5-rc1": {6, 5}, "10.0+": {10, 0},
	} {
		got, err := parseKernelRelease(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "6", "x.1", "6.x"} {
		_, err := parseKernelRelease(in)
		require.Error(t, err, in)
	}
	require.True(t, kernelVersion{6, 5}.atLeast(kernelVersion{6, 5}))
	require.True(t, kernelVersion{7, 0}.atLeast(kernelVersion{6, 11}))
	require.False(t, kernelVersion{6, 4}.atLeast(kernelVersion{6, 5}))
	require.Equal(t, "6.18", kernelVersion{6, 18}.String())
}

func FuzzParseKernelRelease(f *testing.F) {
	f.Add("6.18.44-fc-v669")
	f.Add("5.10")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseKernelRelease(s)
		if err == nil {
			require.GreaterOrEqual(t, v.major, 0)
			require.GreaterOrEqual(t, v.minor, 0)
		}
	})
}

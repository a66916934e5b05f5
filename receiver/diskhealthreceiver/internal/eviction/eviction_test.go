package eviction

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseThreshold(t *testing.T) {
	for in, want := range map[string]Threshold{
		"10%":    {Percent: 0.10},
		"7.5%":   {Percent: 0.075},
		"100.0%": {Percent: 1},
		"100Mi":  {Quantity: 100 << 20},
		"1.5Gi":  {Quantity: 3 << 29},
		"500M":   {Quantity: 500_000_000},
		"2e9":    {Quantity: 2_000_000_000},
		"1024":   {Quantity: 1024},
		"1Ki\n":  {Quantity: 1024},
	} {
		got, err := ParseThreshold(in)
		require.NoError(t, err, in)
		require.NotNil(t, got, in)
		assert.Equal(t, want, *got, in)
	}
	// The kubelet's way to switch a signal off.
	for _, off := range []string{"0%", "100%"} {
		got, err := ParseThreshold(off)
		require.NoError(t, err, off)
		assert.Nil(t, got, off)
	}
	for _, bad := range []string{"", "%", "101%", "-1%", "NaN%", "Inf%", "ten", "10Xi", "-5Gi", "0", "Gi", "0x10", "1e30Gi", "1e400"} {
		_, err := ParseThreshold(bad)
		assert.Error(t, err, bad)
	}
}

func TestParse(t *testing.T) {
	var r Reader
	// No evictionHard: the kubelet's defaults.
	th, err := r.Parse([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"))
	require.NoError(t, err)
	assert.Equal(t, Defaults().Hard, th.Hard)
	assert.Empty(t, th.Soft)

	// evictionHard names its signals only; soft thresholds are read too; a bad value keeps the
	// default of its signal, "0%" switches one off.
	th, err = r.Parse([]byte(`kind: KubeletConfiguration
evictionHard:
  nodefs.available: "5Gi"
  imagefs.available: "20%"
  nodefs.inodesFree: "lots"
  memory.available: "0%"
evictionSoft:
  nodefs.available: "15%"
`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `evictionHard["nodefs.inodesFree"]`)
	assert.Equal(t, map[string]Threshold{NodeFSAvailable: {Quantity: 5 << 30}, ImageFSAvailable: {Percent: 0.2}, NodeFSInodesFree: {Percent: 0.05}}, th.Hard)
	assert.Equal(t, map[string]Threshold{NodeFSAvailable: {Percent: 0.15}}, th.Soft)

	// mergeDefaultEvictionSettings keeps the defaults of the signals not named.
	th, err = r.Parse([]byte(`{"kind":"KubeletConfiguration","mergeDefaultEvictionSettings":true,"evictionHard":{"nodefs.available":"1Gi"}}`))
	require.NoError(t, err)
	assert.Equal(t, Threshold{Quantity: 1 << 30}, th.Hard[NodeFSAvailable])
	assert.Equal(t, Threshold{Percent: 0.15}, th.Hard[ImageFSAvailable])

	th, err = r.Parse([]byte("evictionHard: [not, a, map]"))
	require.Error(t, err)
	assert.Nil(t, th.Hard, "no configuration: no thresholds")
}

// TestReaderFallback: a refused value keeps, per set and signal, the last value accepted — a
// threshold, or a signal switched off — and else the kubelet's default (a soft threshold has none).
func TestReaderFallback(t *testing.T) {
	var r Reader
	th, err := r.Parse([]byte("evictionHard: {nodefs.available: 200%, imagefs.available: 1e30Gi, memory.available: 0x10, nodefs.inodesFree: NaN%}\nevictionSoft: {nodefs.available: -5%}\n"))
	require.Error(t, err)
	assert.Equal(t, Defaults().Hard, th.Hard, "never a good one: the defaults")
	assert.Empty(t, th.Soft, "no default soft threshold")

	_, err = r.Parse([]byte("evictionHard: {nodefs.available: 1Gi, imagefs.available: 100%}\nevictionSoft: {nodefs.available: 30%}\n"))
	require.NoError(t, err)
	th, err = r.Parse([]byte("evictionHard: {nodefs.available: 200%, imagefs.available: '', memory.available: abc}\nevictionSoft: {nodefs.available: '%'}\n"))
	require.Error(t, err)
	assert.Equal(t, map[string]Threshold{NodeFSAvailable: {Quantity: 1 << 30}, MemoryAvailable: {Quantity: 100 << 20}}, th.Hard,
		"nodefs: the last good; imagefs: still off; memory: never good, its default")
	assert.Equal(t, map[string]Threshold{NodeFSAvailable: {Percent: 0.3}}, th.Soft)
}

func TestThresholdOf(t *testing.T) {
	assert.Equal(t, uint64(100), Threshold{Percent: 0.1}.Of(1000))
	assert.Equal(t, uint64(5), Threshold{Quantity: 5}.Of(1000))
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("evictionHard:\n  nodefs.available: 10%\n  memory.available: 100Mi\n"))
	f.Add([]byte(`{"evictionSoft":{"imagefs.available":"1.5Gi"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Reader
		th, _ := r.Parse(data)
		for _, set := range []map[string]Threshold{th.Hard, th.Soft} {
			for _, v := range set {
				require.True(t, v.Percent >= 0 && v.Percent <= 1, "%+v", v)
			}
		}
	})
}

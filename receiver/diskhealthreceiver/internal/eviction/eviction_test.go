package eviction

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseThreshold(t *testing.T) {
	for in, want := range map[string]Threshold{
		"10%":   {Percent: 0.10},
		"7.5%":  {Percent: 0.075},
		"100Mi": {Quantity: 100 << 20},
		"1.5Gi": {Quantity: 3 << 29},
		"500M":  {Quantity: 500_000_000},
		"2e9":   {Quantity: 2_000_000_000},
		"1024":  {Quantity: 1024},
		"1Ki\n": {Quantity: 1024},
	} {
		got, err := ParseThreshold(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "%", "101%", "-1%", "ten", "10Xi", "-5Gi", "Gi", "1e400"} {
		_, err := ParseThreshold(bad)
		assert.Error(t, err, bad)
	}
}

func TestParse(t *testing.T) {
	// No evictionHard: the kubelet's defaults.
	th, err := Parse([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"))
	require.NoError(t, err)
	assert.Equal(t, Defaults().Hard, th.Hard)
	assert.Empty(t, th.Soft)

	// evictionHard names its signals only; soft thresholds are read too; a bad value costs itself.
	th, err = Parse([]byte(`kind: KubeletConfiguration
evictionHard:
  nodefs.available: "5Gi"
  imagefs.available: "20%"
  nodefs.inodesFree: "lots"
evictionSoft:
  nodefs.available: "15%"
`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `evictionHard["nodefs.inodesFree"]`)
	assert.Equal(t, map[string]Threshold{NodeFSAvailable: {Quantity: 5 << 30}, ImageFSAvailable: {Percent: 0.2}}, th.Hard)
	assert.Equal(t, map[string]Threshold{NodeFSAvailable: {Percent: 0.15}}, th.Soft)

	// mergeDefaultEvictionSettings keeps the defaults of the signals not named.
	th, err = Parse([]byte(`{"kind":"KubeletConfiguration","mergeDefaultEvictionSettings":true,"evictionHard":{"nodefs.available":"1Gi"}}`))
	require.NoError(t, err)
	assert.Equal(t, Threshold{Quantity: 1 << 30}, th.Hard[NodeFSAvailable])
	assert.Equal(t, Threshold{Percent: 0.15}, th.Hard[ImageFSAvailable])

	th, err = Parse([]byte("evictionHard: [not, a, map]"))
	require.Error(t, err)
	assert.Nil(t, th.Hard, "no configuration: no thresholds")
}

func TestThresholdOf(t *testing.T) {
	assert.Equal(t, uint64(100), Threshold{Percent: 0.1}.Of(1000))
	assert.Equal(t, uint64(5), Threshold{Quantity: 5}.Of(1000))
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("evictionHard:\n  nodefs.available: 10%\n  memory.available: 100Mi\n"))
	f.Add([]byte(`{"evictionSoft":{"imagefs.available":"1.5Gi"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		th, _ := Parse(data)
		for _, set := range []map[string]Threshold{th.Hard, th.Soft} {
			for _, v := range set {
				require.True(t, v.Percent >= 0 && v.Percent <= 1, "%+v", v)
			}
		}
	})
}

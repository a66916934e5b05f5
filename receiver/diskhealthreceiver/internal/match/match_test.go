package match

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFullMatch(t *testing.T) {
	m, err := Config{Include: []string{"sd.", `nvme\d+n\d+`, "a|b"}, Exclude: []string{"sdz"}}.Compile("iostat.devices")
	require.NoError(t, err)
	for name, want := range map[string]bool{
		"sda": true, "sda1": false, "xsda": false, // anchored at both ends
		"nvme0n1": true, "nvme0n1p1": false,
		"a": true, "b": true, "ab": false, // alternation is grouped before anchoring
		"sdz": false, // exclude wins
	} {
		assert.Equal(t, want, m.Match(name), name)
	}
	assert.True(t, m.HasInclude())
	assert.True(t, m.Included("sdz"), "Included ignores exclude")
}

func TestEmptyConfigKeepsEverything(t *testing.T) {
	m, err := Config{}.Compile("x")
	require.NoError(t, err)
	assert.True(t, m.Match(""))
	assert.True(t, m.Match("anything"))
	assert.False(t, m.HasInclude())
	assert.False(t, m.Included("anything"))
	var nilMatcher *Matcher
	assert.True(t, nilMatcher.Match("sda"))
}

func TestNewlineInValue(t *testing.T) {
	m, err := Config{Include: []string{"/data/.*"}}.Compile("filesystem.mount_points")
	require.NoError(t, err)
	assert.True(t, m.Match("/data/a\nb"))
}

func TestErrorsNameTheKeyAsWritten(t *testing.T) {
	_, err := Config{Include: []string{"sda", "sd[a"}, Exclude: []string{"ok", "", "a)|(b"}}.Compile("filesystem.mount_points")
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, `filesystem.mount_points.include[1]: invalid regular expression "sd[a"`)
	assert.Contains(t, msg, "filesystem.mount_points.exclude[1]: empty pattern")
	assert.Contains(t, msg, `filesystem.mount_points.exclude[2]: invalid regular expression "a)|(b"`)
	assert.NotContains(t, msg, "include[0]")
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{"sd.", "(", "", "a|b", `(?s).*`, "\x00"} {
		f.Add(s, "sda")
	}
	f.Fuzz(func(t *testing.T, pattern, value string) {
		m, err := Config{Include: []string{pattern}}.Compile("k")
		if err != nil {
			assert.Contains(t, err.Error(), "k.include[0]: ")
			return
		}
		_ = m.Match(value)
	})
}

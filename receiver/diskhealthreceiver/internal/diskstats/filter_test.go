package diskstats

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompileFullMatch(t *testing.T) {
	res, err := CompileFullMatch([]string{"sd.", "nvme\\d+n\\d+", "a|b"})
	require.NoError(t, err)
	require.Len(t, res, 3)
	tests := []struct {
		re    int
		name  string
		match bool
	}{
		{0, "sda", true},
		{0, "sda1", false}, // anchored at the end
		{0, "xsda", false}, // and at the start
		{1, "nvme0n1", true},
		{1, "nvme0n1p1", false},
		{2, "a", true}, // alternation is grouped before anchoring
		{2, "b", true},
		{2, "ab", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.match, res[tt.re].MatchString(tt.name), "%s ~ %s", res[tt.re], tt.name)
	}

	none, err := CompileFullMatch(nil)
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestCompileFullMatchErrorsNameTheExpression(t *testing.T) {
	for _, bad := range []string{"sd[a", "(?P<x", "a)|(b", "*"} {
		_, err := CompileFullMatch([]string{"sda", bad})
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), `"`+bad+`"`)
	}
}

func TestNewFilterErrors(t *testing.T) {
	_, err := NewFilter([]string{"("}, nil, DefaultClasses)
	assert.ErrorContains(t, err, `include: invalid regular expression "("`)
	_, err = NewFilter(nil, []string{"["}, DefaultClasses)
	assert.ErrorContains(t, err, `exclude: invalid regular expression "["`)
	_, err = NewFilter(nil, nil, []Class{"disk", "partitions"})
	assert.ErrorContains(t, err, `unknown device class "partitions"`)
}

func TestFilterMatch(t *testing.T) {
	disk := &Identity{Name: "sda", Class: ClassDisk}
	part := &Identity{Name: "sda1", Class: ClassPartition, Parent: "sda"}
	nvme := &Identity{Name: "nvme0n1", Class: ClassDisk}
	dm := &Identity{Name: "dm-0", Class: ClassDM, DMName: "vg0-root"}
	loop := &Identity{Name: "loop0", Class: ClassLoop}

	tests := []struct {
		name             string
		include, exclude []string
		classes          []Class
		want             map[*Identity]bool
	}{
		{"defaults", nil, nil, DefaultClasses,
			map[*Identity]bool{disk: true, part: false, nvme: true, dm: true, loop: false}},
		{"include narrows within classes", []string{"nvme.*"}, nil, DefaultClasses,
			map[*Identity]bool{disk: false, part: false, nvme: true, dm: false, loop: false}},
		{"include cannot bring back an unselected class", []string{"loop0", "sda1"}, nil, DefaultClasses,
			map[*Identity]bool{disk: false, part: false, nvme: false, dm: false, loop: false}},
		{"exclude wins over include", []string{"sd.", "nvme0n1"}, []string{"sda"}, DefaultClasses,
			map[*Identity]bool{disk: false, part: false, nvme: true, dm: false, loop: false}},
		{"exclude is a full match", nil, []string{"sd"}, DefaultClasses,
			map[*Identity]bool{disk: true, part: false, nvme: true, dm: true, loop: false}},
		{"partitions only", nil, nil, []Class{ClassPartition},
			map[*Identity]bool{disk: false, part: true, nvme: false, dm: false, loop: false}},
		{"no classes keeps nothing", nil, nil, []Class{},
			map[*Identity]bool{disk: false, part: false, nvme: false, dm: false, loop: false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewFilter(tt.include, tt.exclude, tt.classes)
			require.NoError(t, err)
			for id, want := range tt.want {
				assert.Equal(t, want, f.Match(id), id.Name)
			}
		})
	}
}

func TestDefaultFilterNeverKeepsAPartitionAndItsDisk(t *testing.T) {
	s := buildHost(t)
	var c IdentityCache
	stats := hostStats()
	require.NoError(t, c.Refresh(s.root, stats))
	f, err := NewFilter(nil, nil, DefaultClasses)
	require.NoError(t, err)

	kept := map[string]bool{}
	for _, st := range stats {
		id, ok := c.Get(st.DeviceName)
		require.True(t, ok)
		if f.Match(id) {
			kept[id.Name] = true
		}
	}
	for name := range kept {
		id, _ := c.Get(name)
		if id.Class == ClassPartition {
			assert.False(t, kept[id.Parent], "both %s and its disk %s kept", name, id.Parent)
		}
	}
	assert.Equal(t, map[string]bool{
		"sda": true, "sdb": true, "nvme0n1": true, "dm-0": true, "md0": true,
		"vda": true, "vdb": true, "cciss/c0d0": true,
	}, kept)
}

func TestClassValid(t *testing.T) {
	for _, c := range AllClasses {
		assert.True(t, c.Valid(), c)
	}
	assert.False(t, Class("Disk").Valid())
	assert.False(t, Class("").Valid())
}

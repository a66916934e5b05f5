package blockdev

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
)

func TestNewFilterErrors(t *testing.T) {
	_, err := NewFilter("iostat", match.Config{Include: []string{"("}}, DefaultClasses)
	require.ErrorContains(t, err, `iostat.devices.include[0]: invalid regular expression "("`)
	_, err = NewFilter("iostat", match.Config{Exclude: []string{"sda", "["}}, DefaultClasses)
	require.ErrorContains(t, err, `iostat.devices.exclude[1]: invalid regular expression "["`)
	_, err = NewFilter("iostat", match.Config{}, []Class{"disk", "partitions"})
	require.ErrorContains(t, err, `iostat.device_classes[1]: unknown device class "partitions"`)
	// Every problem is reported at once, each with its full key.
	_, err = NewFilter("iostat", match.Config{Include: []string{"("}}, []Class{"floppy"})
	require.ErrorContains(t, err, "iostat.devices.include[0]")
	assert.ErrorContains(t, err, "iostat.device_classes[0]")
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
			f, err := NewFilter("iostat", match.Config{Include: tt.include, Exclude: tt.exclude}, tt.classes)
			require.NoError(t, err)
			for id, want := range tt.want {
				assert.Equal(t, want, f.Match(id), id.Name)
			}
		})
	}
}

func TestDefaultFilterNeverKeepsAPartitionAndItsDisk(t *testing.T) {
	s := buildHost(t)
	var c Cache
	stats := hostDevs()
	require.NoError(t, c.Refresh(s.root, stats))
	f, err := NewFilter("iostat", match.Config{}, DefaultClasses)
	require.NoError(t, err)

	kept := map[string]bool{}
	for _, st := range stats {
		id, ok := c.Get(st.Name)
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

package cgroupio

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAppendDirs(t *testing.T) {
	// Three linux_dirent64 records: a directory, a file, and one of unknown type that is a directory.
	rec := func(name string, typ byte) []byte {
		n := direntName + len(name) + 1
		n = (n + 7) &^ 7
		b := make([]byte, n)
		b[direntReclen] = byte(n)
		b[direntType] = typ
		copy(b[direntName:], name)
		return b
	}
	buf := append(rec("kubepods.slice", dtDir), rec("io.stat", 8)...)
	buf = append(buf, rec(".", dtDir)...)
	buf = append(buf, rec("mystery", dtUnknown)...)
	buf = append(buf, rec("plain", dtUnknown)...)
	asked := []string{}
	got := appendDirs(buf, nil, func(name string) bool {
		asked = append(asked, name)
		return name == "mystery"
	})
	assert.Equal(t, []string{"kubepods.slice", "mystery"}, got)
	assert.Equal(t, []string{"mystery", "plain"}, asked)

	// A truncated record ends the listing instead of reading past the buffer.
	assert.Empty(t, appendDirs(rec("kubepods.slice", dtDir)[:20], nil, nil))
}

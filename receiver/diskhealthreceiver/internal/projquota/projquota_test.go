package projquota

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseProjects(t *testing.T) {
	got, err := ParseProjects([]byte("# id:directory\n10:/data/run-a\n\n 11 : /data/run:b \nbad line\nx:/y\n12:\n10:/data/run-a2\n"))
	assert.Equal(t, map[uint32]string{10: "/data/run-a2", 11: "/data/run:b"}, got, "the first colon splits; the last line of an ID wins")
	require.EqualError(t, err, `3 bad lines: projects line 5 "bad line": no colon; projects line 6 "x:/y": project ID is not a number from 0 to 4294967295; projects line 7 "12:": empty name or directory`)
}

func TestParseProjID(t *testing.T) {
	got, err := ParseProjID([]byte("run-a:10\nteam:b:11\nrun-c:4294967296\n"))
	assert.Equal(t, map[uint32]string{10: "run-a", 11: "team:b"}, got, "the last colon splits")
	require.EqualError(t, err, `projid line 3 "run-c:4294967296": project ID is not a number from 0 to 4294967295`)
}

func TestParseBounded(t *testing.T) {
	var b strings.Builder
	for i := range MaxNames + 5 {
		fmt.Fprintf(&b, "p%d:%d\n", i, i)
	}
	got, err := ParseProjID([]byte(b.String()))
	assert.Len(t, got, MaxNames)
	require.ErrorIs(t, err, errTooMany)
}

func TestTop(t *testing.T) {
	ps := []Project{{ID: 1, Used: 5}, {ID: 2, Used: 50}, {ID: 3, Used: 7}, {ID: 4, Used: 50}, {ID: 5, Used: 1}}
	assert.Equal(t, []Project{{ID: 2, Used: 50}, {ID: 3, Used: 7}, {ID: 4, Used: 50}}, Top(ps, 3), "the 3 largest, by ID")
	assert.Equal(t, []Project{{ID: 1}, {ID: 2}}, Top([]Project{{ID: 2}, {ID: 1}}, 5), "all when under the cap, by ID")
	assert.Empty(t, Top([]Project{{ID: 1}}, 0))
}

func FuzzParseProjects(f *testing.F) {
	f.Add([]byte("10:/data/run-a\n# c\n11:/x:y\n"))
	f.Add([]byte("run:10\n:\n\xff:1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte) (map[uint32]string, error){ParseProjects, ParseProjID} {
			got, err := parse(data)
			assert.LessOrEqual(t, len(got), MaxNames)
			for _, v := range got {
				assert.NotEmpty(t, v)
				assert.LessOrEqual(t, len(v), len(data))
			}
			if err != nil {
				assert.True(t, utf8.ValidString(err.Error()) || !utf8.Valid(data), "an error of valid input is valid UTF-8")
			}
		}
	})
}

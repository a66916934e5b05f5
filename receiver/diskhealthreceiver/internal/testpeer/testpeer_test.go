package testpeer

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// recorder is a testing.TB that records how a test ended instead of ending this one.
type recorder struct {
	testing.TB
	how string
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.how = "fatal"; panic(r) }
func (r *recorder) Skipf(string, ...any)  { r.how = "skip"; panic(r) }
func (r *recorder) ended(fn func()) (how string) {
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		how = r.how
	}()
	fn()
	return r.how
}

// TestUnavailableFailsInCI: with CI=true a peer that cannot be had fails the test; elsewhere it skips.
func TestUnavailableFailsInCI(t *testing.T) {
	defer func(v bool) { InCI = v }(InCI)
	InCI = true
	r := &recorder{TB: t}
	assert.Equal(t, "fatal", r.ended(func() { Unavailable(r, "no %s", "fio") }))
	InCI = false
	r = &recorder{TB: t}
	assert.Equal(t, "skip", r.ended(func() { Unavailable(r, "no %s", "fio") }))
}

func TestToolFindsWhatIsThere(t *testing.T) {
	p := Tool(t, "coreutils", "true")
	assert.NotEmpty(t, p)
	assert.Equal(t, "/proc/self", Tool(t, "none", "/proc/self"))
}

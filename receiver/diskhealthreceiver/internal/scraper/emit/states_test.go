package emit

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// points runs one scrape of calls on t and returns what they recorded, as "key state=value".
func points(t *States[string, string], calls func(emit func(key string, onChange bool, states ...string))) []string {
	var out []string
	calls(func(key string, onChange bool, states ...string) {
		rec := func(s string, v int64) { out = append(out, fmt.Sprintf("%s %s=%d", key, s, v)) }
		if onChange {
			t.EmitOnChange(key, rec, states...)
		} else {
			t.Emit(key, rec, states...)
		}
	})
	t.EndScrape()
	return out
}

// TestStatesCurrentAndLeft: a key costs one point per current state; the scrape that leaves a state
// says 0 for it once.
func TestStatesCurrentAndLeft(t *testing.T) {
	s := NewStates[string, string]()
	one := func(state string) func(func(string, bool, ...string)) {
		return func(e func(string, bool, ...string)) { e("md", false, state) }
	}
	assert.Equal(t, []string{"md ok=1"}, points(s, one("ok")))
	assert.Equal(t, []string{"md ok=1"}, points(s, one("ok")))
	assert.Equal(t, []string{"md error=1", "md ok=0"}, points(s, one("error")))
	assert.Equal(t, []string{"md error=1"}, points(s, one("error")), "the 0 is said once")
	assert.Equal(t, []string{"md ok=1", "md error=0"}, points(s, one("ok")))
}

// TestStatesSet: several states at once (an md member's flags); a flag cleared gets its 0 once, and a
// key with no state left costs nothing after that.
func TestStatesSet(t *testing.T) {
	s := NewStates[string, string]()
	set := func(states ...string) func(func(string, bool, ...string)) {
		return func(e func(string, bool, ...string)) { e("sdb1", false, states...) }
	}
	assert.Equal(t, []string{"sdb1 in_sync=1", "sdb1 write_mostly=1"}, points(s, set("in_sync", "write_mostly")))
	assert.Equal(t, []string{"sdb1 faulty=1", "sdb1 in_sync=0", "sdb1 write_mostly=0"}, points(s, set("faulty")))
	assert.Equal(t, []string{"sdb1 faulty=0"}, points(s, set()))
	assert.Empty(t, points(s, set()))
}

// TestStatesOnChange: a part the host does not have is said at the first scrape and at a change only;
// the quiet state is still the one left (0) when the part appears.
func TestStatesOnChange(t *testing.T) {
	s := NewStates[string, string]()
	scrape := func(onChange bool, state string) func(func(string, bool, ...string)) {
		return func(e func(string, bool, ...string)) { e("dm", onChange, state) }
	}
	assert.Equal(t, []string{"dm unsupported=1"}, points(s, scrape(true, "unsupported")))
	assert.Empty(t, points(s, scrape(true, "unsupported")))
	assert.Empty(t, points(s, scrape(true, "unsupported")))
	assert.Equal(t, []string{"dm ok=1", "dm unsupported=0"}, points(s, scrape(false, "ok")))
	assert.Equal(t, []string{"dm unsupported=1", "dm ok=0"}, points(s, scrape(true, "unsupported")))
	assert.Empty(t, points(s, scrape(true, "unsupported")))
}

// TestStatesForget: a key not emitted in a scrape is forgotten (what the tracker keeps is bounded by
// the keys of the last scrape); emitted again, it starts afresh, with no 0 for a state of before.
func TestStatesForget(t *testing.T) {
	s := NewStates[string, string]()
	assert.Equal(t, []string{"a ok=1", "b error=1"}, points(s, func(e func(string, bool, ...string)) {
		e("a", false, "ok")
		e("b", false, "error")
	}))
	assert.Equal(t, []string{"a ok=1"}, points(s, func(e func(string, bool, ...string)) { e("a", false, "ok") }))
	assert.Len(t, s.keys, 1)
	assert.Equal(t, []string{"b ok=1"}, points(s, func(e func(string, bool, ...string)) { e("b", false, "ok") }))
	assert.Equal(t, []string{"b unsupported=1", "b ok=0"}, points(s, func(e func(string, bool, ...string)) { e("b", true, "unsupported") }))
	assert.Empty(t, points(s, func(e func(string, bool, ...string)) { e("b", true, "unsupported") }))
	assert.Len(t, s.keys, 1, "a quiet key is still known")
}

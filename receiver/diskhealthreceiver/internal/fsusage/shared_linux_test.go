package fsusage

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSharedReuseRule: readers at one interval share a read taken within half of it; a reader never
// gets the same snapshot twice; an older one is read again; the table closes with the last reader.
func TestSharedReuseRule(t *testing.T) {
	root := fakeRoot(t, map[string]string{"1": "docker_host_init.txt"})
	f := newFakeFS()
	clock := t0
	sh := NewShared(Config{RootPath: root, Prober: ProberConfig{Statfs: f.statfs}}, func() time.Time { return clock })
	a, b := sh.Reader(10*time.Second), sh.Reader(10*time.Second)
	assert.True(t, a.Owns())
	assert.False(t, b.Owns())
	rootCalls := func() int { return f.callCount(filepath.Join(root, "/")) }
	var seen []time.Time
	use := func(r *Reader) {
		require.NoError(t, r.Use(t.Context(), func(s *Snapshot) error {
			require.NotEmpty(t, s.Results)
			seen = append(seen, s.At)
			return nil
		}))
	}
	use(a)
	clock = clock.Add(4 * time.Second)
	use(b)
	assert.Equal(t, 1, rootCalls(), "b, within half its interval, takes a's read")
	assert.Equal(t, seen[0], seen[1])

	use(b)
	assert.Equal(t, 2, rootCalls(), "b never gets the same snapshot twice")
	clock = clock.Add(6 * time.Second)
	use(a)
	assert.Equal(t, 3, rootCalls(), "b's read is older than half a's interval: read again")

	require.NoError(t, a.Own(nil))
	require.Error(t, a.Own(assert.AnError))
	assert.NoError(t, b.Own(assert.AnError), "only the owner says the table's problems")

	require.NoError(t, a.Close())
	assert.NotNil(t, sh.col, "b still reads")
	require.NoError(t, b.Close())
	assert.Nil(t, sh.col, "closed with the last reader")
	assert.Error(t, a.Use(t.Context(), func(*Snapshot) error { return nil }), "a closed reader reads nothing")
}

// TestSharedDomains: a snapshot's results come grouped by domain, in the order of each domain's first
// mount.
func TestSharedDomains(t *testing.T) {
	rs := []Result{{Domain: Domain{Major: 8, Minor: 1}}, {Domain: Domain{Major: 8, Minor: 2}}, {Domain: Domain{Major: 8, Minor: 1}}}
	byDomain(rs)
	s := Snapshot{Results: rs}
	var groups []int
	for g := range s.Domains {
		groups = append(groups, len(g))
		if len(groups) == 1 {
			assert.Equal(t, uint32(1), g[0].Domain.Minor)
		}
	}
	assert.Equal(t, []int{2, 1}, groups)
}

// TestSharedWaitedReadIsTheTicks: a source that asks while another's read is under way (a hung mount
// holds it up to its statfs deadline) takes that read, however long it waited: its points carry the
// tick's time, not a time a deadline later.
func TestSharedWaitedReadIsTheTicks(t *testing.T) {
	root := fakeRoot(t, map[string]string{"1": "docker_host_init.txt"})
	f := newFakeFS()
	var mu sync.Mutex
	clock, asks := t0, 0
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		asks++
		return clock
	}
	sh := NewShared(Config{RootPath: root, Prober: ProberConfig{Statfs: f.statfs}}, now)
	a, b := sh.Reader(2*time.Second), sh.Reader(2*time.Second)
	require.NoError(t, a.Use(t.Context(), func(*Snapshot) error { return nil }))

	sh.lock <- struct{}{} // a read under way
	mu.Lock()
	before := asks
	mu.Unlock()
	got := make(chan time.Time, 1)
	go func() {
		_ = b.Use(t.Context(), func(s *Snapshot) error { got <- s.At; return nil })
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return asks > before }, 5*time.Second, time.Millisecond, "b asked")
	mu.Lock()
	clock = clock.Add(1500 * time.Millisecond) // the read b waits for takes longer than half its interval
	mu.Unlock()
	<-sh.lock
	assert.Equal(t, t0, <-got, "b takes the read it waited for")
	assert.Equal(t, 1, f.callCount(filepath.Join(root, "/")))
}

package emit

// Cache keeps what a scraper builds once per device or mount (its resource, a cleaned-up mount point)
// from one scrape to the next. The key holds everything the value is built from, so a changed device
// gets a new entry; Sweep forgets what the last scrape did not ask for.
type Cache[K comparable, V any] struct {
	m   map[K]*cached[V]
	gen uint64
}

type cached[V any] struct {
	v   V
	gen uint64
}

// Get returns k's value and whether there is one, and keeps it for the next scrape.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	e := c.m[k]
	if e == nil {
		var zero V
		return zero, false
	}
	e.gen = c.gen
	return e.v, true
}

// Put stores k's value.
func (c *Cache[K, V]) Put(k K, v V) {
	if c.m == nil {
		c.m = map[K]*cached[V]{}
	}
	c.m[k] = &cached[V]{v: v, gen: c.gen}
}

// Sweep ends a scrape: what it did not Get or Put is forgotten.
func (c *Cache[K, V]) Sweep() {
	for k, e := range c.m {
		if e.gen != c.gen {
			delete(c.m, k)
		}
	}
	c.gen++
}

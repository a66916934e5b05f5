package emit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCacheForgetsWhatAScrapeDidNotUse(t *testing.T) {
	var c Cache[string, int]
	_, ok := c.Get("sda")
	assert.False(t, ok)
	c.Put("sda", 1)
	c.Put("sdb", 2)
	c.Sweep()

	v, ok := c.Get("sda") // sdb is not asked for in this scrape
	assert.True(t, ok)
	assert.Equal(t, 1, v)
	c.Sweep()

	_, ok = c.Get("sdb")
	assert.False(t, ok, "forgotten after a scrape without it")
	v, ok = c.Get("sda")
	assert.True(t, ok)
	assert.Equal(t, 1, v)
}

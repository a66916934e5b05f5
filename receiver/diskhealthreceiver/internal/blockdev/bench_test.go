package blockdev

import (
	"fmt"
	"testing"
)

// BenchmarkIdentityCacheRefreshUnchanged is the per-scrape cost of the
// identity cache once every device is known: a comparison, nothing more.
func BenchmarkIdentityCacheRefreshUnchanged1000(b *testing.B) {
	devs := make([]Dev, 1000)
	for i := range devs {
		devs[i] = Dev{Name: fmt.Sprintf("nvme%dn1", i), Major: 259, Minor: uint32(i)}
	}
	var c Cache
	root := b.TempDir()
	_ = c.Refresh(root, devs) // an empty tree: every device errors once, then is cached
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Refresh(root, devs); err != nil {
			b.Fatal(err)
		}
	}
}

package emit

import (
	"fmt"
	"time"
)

// MinInterval is the shortest interval any source is read at. Below it a scrape of a host with many
// devices or mounts runs back to back and the output is mostly noise; the usual mistake behind a
// shorter value is a bare number, which the collector reads as nanoseconds (`collection_interval: 30`
// is 30 ns).
const MinInterval = 100 * time.Millisecond

// CheckInterval refuses an interval below MinInterval, naming the key as the user writes it and the
// unit the value was read in.
func CheckInterval(key string, d time.Duration) error {
	if d >= MinInterval {
		return nil
	}
	return fmt.Errorf("%s: %v (%d ns) is below the minimum of %v; a number without a unit is read as nanoseconds: write the unit, e.g. 30s",
		key, d, d.Nanoseconds(), MinInterval)
}

// Package emit holds what every scraper does the same way when it turns read values into pdata and
// scrape errors. It is not a source: scrapers import it, it imports no scraper.
package emit // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"

import (
	"math"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
)

// Int is an unsigned counter as an int64 data point: a value past the signed range (2^63 and more,
// which only garbage input produces) is clamped to the largest int64, so it never goes out negative
// and a monotonic sum that reaches it stays flat instead of falling.
func Int(v uint64) int64 { return int64(min(v, math.MaxInt64)) }

// SetIfNotEmpty calls set(v) unless v is empty: an absent attribute is left out, never sent as "".
func SetIfNotEmpty(set func(string), v string) {
	if v != "" {
		set(v)
	}
}

// CountErrors counts the failures an error reports, for the count of a partial scrape error: every bad
// line of a parse (also those a *parseerr.Lines counted but did not keep), one per item of an
// errors.Join (a device, a cgroup's unreadable file), 1 for any other error. See parseerr.Count.
func CountErrors(err error) int { return parseerr.Count(err) }

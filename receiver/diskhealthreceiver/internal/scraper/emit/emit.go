// Package emit holds what every scraper does the same way when it turns read values into pdata and
// scrape errors. It is not a source: scrapers import it, it imports no scraper.
package emit // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"

import "errors"

// SetIfNotEmpty calls set(v) unless v is empty: an absent attribute is left out, never sent as "".
func SetIfNotEmpty(set func(string), v string) {
	if v != "" {
		set(v)
	}
}

// CountErrors counts the items an errors.Join reports (one per bad line or device), for the count of a
// partial scrape error.
func CountErrors(err error) int {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		return len(joined.Unwrap())
	}
	return 1
}

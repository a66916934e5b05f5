package emit

import (
	"strings"

	"go.uber.org/zap"
)

// maxLoggedPerChange bounds the lines one change logs, so a garbage input file with thousands of bad
// lines costs a few log lines, not thousands.
const maxLoggedPerChange = 10

// Reporter logs a source's scrape problems once per change: a problem is logged at WARN when it
// appears and at INFO when it clears, never once per scrape. The collector's scraper controller logs
// every error a scrape returns at ERROR, every scrape, with a stack trace (2 880 lines a day at 30 s
// for one bad /proc/diskstats line), so the problems stop here and the scrape's output goes on.
// Not safe for concurrent use: one scraper owns it.
type Reporter struct {
	logger *zap.Logger
	last   map[string]bool
}

// NewReporter returns a Reporter logging to logger.
func NewReporter(logger *zap.Logger) *Reporter {
	return &Reporter{logger: logger, last: map[string]bool{}}
}

// Report logs what changed in err's problems since the previous call and returns nil: every problem is
// in the log once, and the output that came with it (partial or empty) is delivered.
func (r *Reporter) Report(err error) error {
	now := map[string]bool{}
	for _, p := range problems(err) {
		now[p] = true
	}
	logged := 0
	for p := range now {
		if !r.last[p] {
			if logged < maxLoggedPerChange {
				r.logger.Warn("Scrape problem: reported once, and again when it clears", zap.String("problem", p))
			}
			logged++
		}
	}
	if logged > maxLoggedPerChange {
		r.logger.Warn("More scrape problems appeared", zap.Int("not_logged", logged-maxLoggedPerChange))
	}
	cleared := 0
	for p := range r.last {
		if !now[p] {
			if cleared < maxLoggedPerChange {
				r.logger.Info("Scrape problem cleared", zap.String("problem", p))
			}
			cleared++
		}
	}
	if cleared > maxLoggedPerChange {
		r.logger.Info("More scrape problems cleared", zap.Int("not_logged", cleared-maxLoggedPerChange))
	}
	r.last = now
	return nil
}

// problems splits err into its parts: a scrape's errors are joined (errors.Join by lines, the
// collector's ScrapeErrors by "; "), and a partial scrape error around them hides the structure but
// keeps the text, so each part of the text is a problem.
func problems(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(err.Error(), "\n") {
		out = append(out, strings.Split(line, "; ")...)
	}
	return out
}

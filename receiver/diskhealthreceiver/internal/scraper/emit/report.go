package emit

import (
	"regexp"
	"strings"
	"sync"

	"go.uber.org/zap"
)

// maxLoggedPerChange bounds the lines one change logs, so a garbage input file with thousands of bad
// lines costs a few log lines, not thousands.
const maxLoggedPerChange = 10

// Problems is the set of scrape problems every source of one receiver currently has, so that a problem
// two sources meet (the same bad /proc/diskstats line, read by iostat and by latency) is logged once:
// when the first source reports it, and as cleared when the last one stops. Safe for concurrent use;
// the zero value is ready.
type Problems struct {
	mu      sync.Mutex
	holders map[string]map[*Reporter]bool
}

// hold records that r has p and reports whether no source had it before.
func (ps *Problems) hold(p string, r *Reporter) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.holders == nil {
		ps.holders = map[string]map[*Reporter]bool{}
	}
	h := ps.holders[p]
	if h == nil {
		h = map[*Reporter]bool{}
		ps.holders[p] = h
	}
	first := len(h) == 0
	h[r] = true
	return first
}

// release records that r no longer has p and reports whether no source has it now.
func (ps *Problems) release(p string, r *Reporter) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	h := ps.holders[p]
	delete(h, r)
	if len(h) > 0 {
		return false
	}
	delete(ps.holders, p)
	return true
}

// Reporter logs a source's scrape problems once per change: a problem is logged at WARN when it
// appears and at INFO when it clears, never once per scrape, and once for all the sources that share
// the Problems. The collector's scraper controller logs every error a scrape returns at ERROR, every
// scrape, with a stack trace (2 880 lines a day at 30 s for one bad /proc/diskstats line), so the
// problems stop here and the scrape's output goes on. Not safe for concurrent use: one scraper owns it.
type Reporter struct {
	logger *zap.Logger
	shared *Problems
	last   map[string]string // the current problems: key (see problemKey) → text
}

// NewReporter returns a Reporter logging to logger; shared is the receiver's set of problems (nil: this
// source's alone).
func NewReporter(logger *zap.Logger, shared *Problems) *Reporter {
	if shared == nil {
		shared = &Problems{}
	}
	return &Reporter{logger: logger, shared: shared, last: map[string]string{}}
}

// Report logs what changed in err's problems since the previous call and returns nil: every problem is
// in the log once, and the output that came with it (partial or empty) is delivered.
func (r *Reporter) Report(err error) error {
	now := map[string]string{}
	for _, p := range problems(err) {
		if k := problemKey(p); now[k] == "" {
			now[k] = p
		}
	}
	logged := 0
	for k, p := range now {
		if _, had := r.last[k]; !had && r.shared.hold(k, r) {
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
	for k, p := range r.last {
		if _, still := now[k]; !still && r.shared.release(k, r) {
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

// lineNumber is the line number of a parse error ("<file> line <n>", parseerr.Line): where a bad line
// is, not what is wrong with it. It moves whenever lines before it come or go (devices churning ahead
// of a bad /proc/diskstats line), and the problem stays the same one.
var lineNumber = regexp.MustCompile(`\bline [0-9]+\b`)

// problemKey is what a problem is known by, whether it changed: its text with line numbers masked
// ("line #") and every number inside a quoted string masked ("#"). A parser quotes the input it could
// not read (strconv.Quote, %q) as an example, and that input carries live counters: a malformed
// mountstats "xprt:" line quoted with its send count was a new problem every scrape. Masked, the key is
// the line's shape — its file, device, tag, number of fields, which field is bad and why — so the
// problem changes when that does (parseerr.Clip cuts a long example by the same shape). The text logged
// is the one it had when it appeared (or, when it clears, the last one).
func problemKey(p string) string {
	if strings.IndexByte(p, '"') >= 0 {
		p = maskQuotedNumbers(p)
	}
	if !strings.Contains(p, "line ") {
		return p
	}
	return lineNumber.ReplaceAllLiteralString(p, "line #")
}

// maskQuotedNumbers replaces each decimal or 0x-hex number inside a Go-quoted string of p with "#" (an
// unterminated quote runs to the end).
func maskQuotedNumbers(p string) string {
	var b strings.Builder
	b.Grow(len(p))
	quoted := false
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '"':
			quoted = !quoted
		case quoted && c == '\\' && i+1 < len(p):
			b.WriteString(p[i : i+2]) // an escape: \" does not end the string
			i += 2
			continue
		case quoted && isDigit(c):
			j := i + 1
			if c == '0' && j+1 < len(p) && (p[j] == 'x' || p[j] == 'X') && isHex(p[j+1]) {
				j++
				for j < len(p) && isHex(p[j]) {
					j++
				}
			}
			for j < len(p) && isDigit(p[j]) {
				j++
			}
			b.WriteByte('#')
			i = j
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

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

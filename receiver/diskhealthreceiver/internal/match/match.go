// Package match is the one include/exclude type of every config section: full-match regular
// expressions, exclude winning over include, errors naming the key as the user wrote it.
package match // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Config is an include/exclude pair of regular expressions, each matched against the whole value
// (anchored: "sd." matches "sda" but not "sda1"; hostmetrics' and node_exporter's unanchored patterns
// are a common surprise). An empty include list keeps everything; exclude wins over include.
type Config struct {
	Include []string `mapstructure:"include"`
	Exclude []string `mapstructure:"exclude"`
}

// Matcher is a compiled Config. It is safe for concurrent use; the zero value keeps everything.
type Matcher struct {
	include, exclude *regexp.Regexp
}

var errEmpty = errors.New("empty pattern (it would match only the empty string)")

// Compile checks every pattern and returns the matcher. key is the config key of c as the user
// writes it ("iostat.devices"); each error names one pattern as key.include[i] or key.exclude[i].
func (c Config) Compile(key string) (*Matcher, error) {
	inc, ierr := compileList(key+".include", c.Include)
	exc, eerr := compileList(key+".exclude", c.Exclude)
	if err := errors.Join(ierr, eerr); err != nil {
		return nil, err
	}
	return &Matcher{include: inc, exclude: exc}, nil
}

// compileList joins the patterns into one anchored alternation, so a value costs one regexp run per
// list. (?s) lets "." match a newline, which a mount point may contain once unescaped.
func compileList(key string, patterns []string) (*regexp.Regexp, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	var errs []error
	parts := make([]string, len(patterns))
	for i, p := range patterns {
		// Compile each alone first, so the error names the culprit and cannot be caused or masked by
		// the wrapper (an unbalanced ")(" inside the group).
		if p == "" {
			errs = append(errs, fmt.Errorf("%s[%d]: %w", key, i, errEmpty))
			continue
		}
		if _, err := regexp.Compile(p); err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: invalid regular expression %q: %w", key, i, p, err))
			continue
		}
		parts[i] = "(?:" + p + ")"
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return regexp.Compile(`(?s)^(?:` + strings.Join(parts, "|") + `)$`)
}

// Match reports whether s is kept: it matches an include pattern (or there is none) and no exclude
// pattern.
func (m *Matcher) Match(s string) bool {
	if m == nil {
		return true
	}
	if m.include != nil && !m.include.MatchString(s) {
		return false
	}
	return m.exclude == nil || !m.exclude.MatchString(s)
}

// Included reports whether s matches the include list alone (false when there is none): the
// filesystem source lets an explicit fs_types.include opt a type in whatever its class.
func (m *Matcher) Included(s string) bool {
	return m != nil && m.include != nil && m.include.MatchString(s)
}

// HasInclude reports whether the include list is non-empty.
func (m *Matcher) HasInclude() bool { return m != nil && m.include != nil }

package diskstats

import (
	"fmt"
	"regexp"
)

// DefaultClasses are the device classes kept when the configuration names
// none: whole disks plus the dm and md devices built on them. Partitions are
// left out so that summing devices never counts the same I/O twice, and
// loop/ram devices are noise on most hosts.
var DefaultClasses = []Class{ClassDisk, ClassDM, ClassMD}

// AllClasses lists every Class the identity reader produces.
var AllClasses = []Class{ClassDisk, ClassPartition, ClassDM, ClassMD, ClassLoop, ClassRAM, ClassOther}

// Filter selects devices by class and kernel name.
type Filter struct {
	Include, Exclude []*regexp.Regexp // full-match patterns, see CompileFullMatch
	Classes          map[Class]bool
}

// NewFilter compiles include and exclude patterns and checks the classes.
// The caller decides the default (DefaultClasses); an empty classes list
// keeps nothing.
func NewFilter(include, exclude []string, classes []Class) (*Filter, error) {
	inc, err := CompileFullMatch(include)
	if err != nil {
		return nil, fmt.Errorf("include: %w", err)
	}
	exc, err := CompileFullMatch(exclude)
	if err != nil {
		return nil, fmt.Errorf("exclude: %w", err)
	}
	set := make(map[Class]bool, len(classes))
	for _, c := range classes {
		if !c.Valid() {
			return nil, fmt.Errorf("unknown device class %q, want one of %v", c, AllClasses)
		}
		set[c] = true
	}
	return &Filter{Include: inc, Exclude: exc, Classes: set}, nil
}

// Valid reports whether c is one of AllClasses.
func (c Class) Valid() bool {
	for _, k := range AllClasses {
		if c == k {
			return true
		}
	}
	return false
}

// Match keeps a device whose class is in Classes, whose name matches one
// Include pattern (or Include is empty), and whose name matches no Exclude
// pattern.
func (f *Filter) Match(id *Identity) bool {
	if !f.Classes[id.Class] {
		return false
	}
	if len(f.Include) > 0 && !anyMatch(f.Include, id.Name) {
		return false
	}
	return !anyMatch(f.Exclude, id.Name)
}

func anyMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// CompileFullMatch compiles each expression anchored at both ends, so "sd."
// matches "sda" but not "sda1" (hostmetrics' and node_exporter's unanchored
// patterns are a common source of surprise). Errors name the expression.
func CompileFullMatch(exprs []string) ([]*regexp.Regexp, error) {
	if len(exprs) == 0 {
		return nil, nil
	}
	res := make([]*regexp.Regexp, 0, len(exprs))
	for _, e := range exprs {
		// Compile alone first, so that an error cannot be caused or masked
		// by the wrapper (e.g. an unbalanced ")(" inside the group).
		if _, err := regexp.Compile(e); err != nil {
			return nil, fmt.Errorf("invalid regular expression %q: %w", e, err)
		}
		re, err := regexp.Compile(`^(?:` + e + `)$`)
		if err != nil {
			return nil, fmt.Errorf("invalid regular expression %q: %w", e, err)
		}
		res = append(res, re)
	}
	return res, nil
}

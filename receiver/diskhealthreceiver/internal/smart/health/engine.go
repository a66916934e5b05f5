package health

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// evaluator collects the reasons of one evaluation and builds the next
// History from the previous one without modifying it.
type evaluator struct {
	prev    History
	next    History
	rule    *RuleInfo // the rule being evaluated
	reasons []Reason
}

// fire records a yes/no sign.
func (e *evaluator) fire(r Reason) { e.fireLevel(r, nvme.Uint128{Lo: 1}) }

// fireLevel records a sign whose severity is level.
func (e *evaluator) fireLevel(r Reason, level nvme.Uint128) {
	r.Rule, r.State, r.level = e.rule.ID, e.rule.State, level
	e.reasons = append(e.reasons, r)
}

// fireCount records a sign measured by a watched counter, so that its
// event can say what the count was before.
func (e *evaluator) fireCount(r Reason, key string, v nvme.Uint128) {
	if c, ok := e.prev.counters[key]; ok {
		r.from, r.hasFrom = c.last, true
	}
	e.fireLevel(r, v)
}

// observe records a counter's value and returns the baseline it is
// compared with: the first value seen, or the current one when the counter
// went backwards (drive reset or replaced under the same identity).
func (e *evaluator) observe(key string, v nvme.Uint128) nvme.Uint128 {
	c, ok := e.prev.counters[key]
	if !ok || v.Cmp(c.baseline) < 0 {
		c.baseline = v
	}
	e.next.counters[key] = counter{baseline: c.baseline, last: v}
	return c.baseline
}

// rising fires when a counter is above its baseline; hint, if any, is
// appended to the text.
func (e *evaluator) rising(subject, key string, v nvme.Uint128, hint string) {
	base := e.observe(key, v)
	if v.Cmp(base) > 0 {
		e.fireLevel(Reason{Subject: subject, Text: fmt.Sprintf("%s rose from %s to %s since monitoring began%s", subject, base, v, hint)}, v)
	}
}

// ruleOrder is each rule's position in the table, for listing reasons.
var ruleOrder = func() map[RuleID]int {
	m := make(map[RuleID]int, len(rules)+len(logicalRules))
	for i, r := range rules {
		m[r.ID] = i
	}
	for i, r := range logicalRules {
		m[r.ID] = len(rules) + i
	}
	return m
}()

func newEvaluator(prev History) *evaluator {
	e := &evaluator{prev: prev, next: History{
		signs:    make(map[string]nvme.Uint128),
		counters: make(map[string]counter, len(prev.counters)),
	}}
	// Watched counters seen before but missing from this read keep their
	// baseline: one unreadable page must not reset "rising" rules.
	maps.Copy(e.next.counters, prev.counters)
	return e
}

// Evaluate applies every rule to snap and compares the outcome with prev.
// It never modifies prev.
func Evaluate(prev History, snap Snapshot) (Verdict, History) {
	e := newEvaluator(prev)
	// The Backblaze counters are observed even while zero, so the first
	// non-zero value can be reported as a rise from 0.
	if snap.ATA != nil {
		for _, m := range backblazeFive {
			for _, a := range snap.ATA.Attributes.WithMeaning(m) {
				e.observe("ata/"+a.Label(), count(a.Raw.Value))
			}
		}
	}
	for i := range rules {
		e.rule = &rules[i].RuleInfo
		rules[i].eval(e, &snap)
	}
	return e.verdict()
}

// verdict orders the reasons, takes the worst state and lists the events:
// a state change, and each sign not seen before or whose level rose.
func (e *evaluator) verdict() (Verdict, History) {
	prev := e.prev
	v := Verdict{State: OK, Reasons: e.reasons}
	slices.SortStableFunc(v.Reasons, func(a, b Reason) int {
		return cmp.Or(cmp.Compare(b.State, a.State), cmp.Compare(ruleOrder[a.Rule], ruleOrder[b.Rule]), strings.Compare(a.Subject, b.Subject))
	})
	for _, r := range v.Reasons {
		v.State = max(v.State, r.State)
		e.next.signs[r.key()] = r.level
	}
	e.next.state = v.State

	// A healthy first sight is not news; anything else that changed is.
	if v.State != prev.state && !(prev.state == Unknown && v.State == OK) {
		v.Events = append(v.Events, Event{Kind: StateChanged, Old: prev.state, New: v.State, Text: stateChangeText(prev.state, v)})
	}
	for _, r := range v.Reasons {
		old, seen := prev.signs[r.key()]
		if seen && r.level.Cmp(old) <= 0 {
			continue
		}
		v.Events = append(v.Events, Event{Kind: NewSign, Old: prev.state, New: v.State, Rule: r.Rule, Text: signText(r)})
	}
	return v, e.next
}

func stateChangeText(old State, v Verdict) string {
	s := fmt.Sprintf("health changed from %s to %s", old, v.State)
	if len(v.Reasons) == 0 {
		return s + ": no health rule fires any more"
	}
	texts := make([]string, len(v.Reasons))
	for i, r := range v.Reasons {
		texts[i] = r.Text
	}
	return s + ": " + strings.Join(texts, "; ")
}

func signText(r Reason) string {
	if r.hasFrom && r.level.Cmp(r.from) > 0 && r.Rule == RuleBackblazeCounter {
		return fmt.Sprintf("%s rose from %s to %s", r.Subject, r.from, r.level)
	}
	return r.Text
}

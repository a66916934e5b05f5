package semconvcheck

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The rules a name can break.
const (
	// A metric the model defines, with another instrument (counter ↔ monotonic sum, updowncounter ↔
	// non-monotonic sum, gauge, histogram ↔ either histogram).
	RuleInstrument = "instrument"
	// A metric the model defines, with another unit.
	RuleUnit = "unit"
	// An attribute on a metric the model defines that the model does not reference for it.
	RuleMetricAttribute = "metric_attribute"
	// An attribute the model requires on a metric, missing there.
	RuleRequiredAttribute = "required_attribute"
	// An attribute the model defines, set with another type.
	RuleAttributeType = "attribute_type"
	// A value of an attribute the model defines as an enum that is not one of its members.
	RuleEnumMember = "enum_member"
	// A name the model does not define, inside a namespace the model owns.
	RuleOwnedNamespace = "owned_namespace"
	// A metric name that is the namespace of another (ours or the model's): the conventions'
	// metric_namespace_collision policy.
	RuleMetricNamespaceCollision = "metric_namespace_collision"
	// An attribute key that is the namespace of another: the conventions' attribute collision policy.
	RuleAttributeNamespaceCollision = "attribute_namespace_collision"
	// A name the model marks deprecated.
	RuleDeprecated = "deprecated"
)

// Rules are every rule, in report order.
var Rules = []string{RuleInstrument, RuleUnit, RuleMetricAttribute, RuleRequiredAttribute, RuleAttributeType,
	RuleEnumMember, RuleOwnedNamespace, RuleMetricNamespaceCollision, RuleAttributeNamespaceCollision, RuleDeprecated}

// Violation is one place where the receiver's output disagrees with the model. Metric, Attribute and
// Value name the subject (one or more set); Detail says how.
type Violation struct {
	Rule      string
	Metric    string
	Attribute string
	Value     string
	Detail    string
}

func (v Violation) key() string { return v.Rule + "|" + v.Metric + "|" + v.Attribute + "|" + v.Value }

func (v Violation) String() string {
	var subj []string
	for _, s := range [][2]string{{"metric", v.Metric}, {"attribute", v.Attribute}, {"value", v.Value}} {
		if s[1] != "" {
			subj = append(subj, s[0]+" "+s[1])
		}
	}
	return v.Rule + ": " + strings.Join(subj, ", ") + ": " + v.Detail
}

// Check returns every violation of e against m, once each, sorted.
func Check(m *Model, e Emitted) []Violation {
	c := checker{m: m, owned: m.Namespaces(), seen: map[string]bool{}}
	attrs := map[string][]Attribute{}
	for _, a := range e.Attributes {
		attrs[a.Key] = append(attrs[a.Key], a)
	}
	var ourMetrics []string
	for _, em := range e.Metrics {
		ourMetrics = append(ourMetrics, em.Name)
		c.metric(em)
		for _, a := range em.Attributes {
			attrs[a.Key] = append(attrs[a.Key], a)
		}
	}
	for _, key := range sortedKeys(attrs) {
		c.attribute(key, attrs[key])
	}
	var modelMetrics, modelAttrs []string
	for name, mm := range m.Metrics {
		if !mm.Deprecated {
			modelMetrics = append(modelMetrics, name)
		}
	}
	for key, ma := range m.Attributes {
		if !ma.Deprecated {
			modelAttrs = append(modelAttrs, key)
		}
	}
	c.collisions(RuleMetricNamespaceCollision, "metric", ourMetrics, modelMetrics, func(n string) *Violation { return &Violation{Metric: n} })
	c.collisions(RuleAttributeNamespaceCollision, "attribute", sortedKeys(attrs), modelAttrs, func(n string) *Violation { return &Violation{Attribute: n} })
	sort.Slice(c.out, func(i, j int) bool { return c.out[i].key() < c.out[j].key() })
	return c.out
}

type checker struct {
	m     *Model
	owned map[string]bool
	seen  map[string]bool
	out   []Violation
}

func (c *checker) add(v Violation) {
	if !c.seen[v.key()] {
		c.seen[v.key()] = true
		c.out = append(c.out, v)
	}
}

func (c *checker) metric(em Metric) {
	mm, defined := c.m.Metrics[em.Name]
	switch {
	case !defined:
		if ns := c.ownedNamespace(em.Name); ns != "" {
			c.add(Violation{Rule: RuleOwnedNamespace, Metric: em.Name, Detail: fmt.Sprintf("not in the model, inside its namespace %s (%s)", ns, em.Source)})
		}
		return
	case mm.Deprecated:
		c.add(Violation{Rule: RuleDeprecated, Metric: em.Name, Detail: "deprecated in the model (" + em.Source + ")"})
		return
	}
	if em.Instrument() != mm.Instrument {
		c.add(Violation{Rule: RuleInstrument, Metric: em.Name, Detail: fmt.Sprintf("%s in the model (%s), %s here (%s)", mm.Instrument, mm.Stability, em.Instrument(), em.Source)})
	}
	if em.Unit != mm.Unit {
		c.add(Violation{Rule: RuleUnit, Metric: em.Name, Detail: fmt.Sprintf("%q in the model (%s), %q here (%s)", mm.Unit, mm.Stability, em.Unit, em.Source)})
	}
	have := map[string]bool{}
	for _, a := range em.Attributes {
		have[a.Key] = true
		if _, ok := mm.Attributes[a.Key]; !ok {
			c.add(Violation{Rule: RuleMetricAttribute, Metric: em.Name, Attribute: a.Key, Detail: "the model does not reference it on this metric (" + em.Source + ")"})
		}
	}
	for _, key := range sortedKeys(mm.Attributes) {
		if mm.Attributes[key] == "required" && !have[key] {
			c.add(Violation{Rule: RuleRequiredAttribute, Metric: em.Name, Attribute: key, Detail: "required by the model, missing (" + em.Source + ")"})
		}
	}
}

// attribute checks one key over every declaration of it.
func (c *checker) attribute(key string, decls []Attribute) {
	ma, defined := c.m.Attributes[key]
	switch {
	case !defined:
		if ns := c.ownedNamespace(key); ns != "" {
			c.add(Violation{Rule: RuleOwnedNamespace, Attribute: key, Detail: fmt.Sprintf("not in the model, inside its namespace %s (%s)", ns, decls[0].Source)})
		}
		return
	case ma.Deprecated:
		c.add(Violation{Rule: RuleDeprecated, Attribute: key, Detail: "deprecated in the model (" + decls[0].Source + ")"})
		return
	}
	for _, a := range decls {
		if a.Type != "" && !typeMatches(a.Type, ma.Type) {
			c.add(Violation{Rule: RuleAttributeType, Attribute: key, Detail: fmt.Sprintf("%s in the model, %s here (%s)", ma.Type, a.Type, a.Source)})
		}
		// An enum whose one member is _OTHER lists no well-known values: any value is the model's.
		if len(ma.Members) == 0 || len(ma.Members) == 1 && ma.Members[0] == "_OTHER" {
			continue
		}
		for _, v := range a.Values {
			if !slices.Contains(ma.Members, v) {
				c.add(Violation{Rule: RuleEnumMember, Attribute: key, Value: v, Detail: fmt.Sprintf("not a member of %v (%s)", ma.Members, a.Source)})
			}
		}
	}
}

// typeMatches: mdatagen's type word against the model's.
func typeMatches(ours, model string) bool {
	switch model {
	case "any", "":
		return true
	case "boolean":
		return ours == "bool"
	}
	if strings.HasSuffix(model, "[]") {
		return ours == "slice"
	}
	if strings.HasPrefix(model, "template[") {
		return true
	}
	return ours == model
}

// ownedNamespace is the longest namespace of name the model owns, "" if none.
func (c *checker) ownedNamespace(name string) string {
	for i := len(name) - 1; i > 0; i-- {
		if name[i] == '.' && c.owned[name[:i]] {
			return name[:i]
		}
	}
	return ""
}

// collisions finds every name of ours that is the namespace of another name (ours or the model's), or
// lies under a name that is: for a pair both ours, the longer is reported (it is the one that moved
// into the other's namespace); a name the model defines is never the one reported.
func (c *checker) collisions(rule, kind string, ours, model []string, subject func(string) *Violation) {
	mine := map[string]bool{}
	for _, n := range ours {
		if !c.defines(kind, n) {
			mine[n] = true
		}
	}
	all := map[string]bool{}
	for _, n := range append(slices.Clone(ours), model...) {
		all[n] = true
	}
	for _, n := range sortedKeys(all) {
		for i := len(n) - 1; i > 0; i-- {
			if n[i] != '.' || !all[n[:i]] {
				continue
			}
			outer := n[:i]
			var v *Violation
			switch {
			case mine[n]:
				v = subject(n)
				v.Detail = fmt.Sprintf("%s %s is the namespace of %s %s", kind, outer, kind, n)
			case mine[outer]:
				v = subject(outer)
				v.Detail = fmt.Sprintf("%s %s is the namespace of the model's %s %s", kind, outer, kind, n)
			default:
				continue
			}
			v.Rule = rule
			c.add(*v)
		}
	}
}

// defines reports whether the model defines name as a kind ("metric" or "attribute").
func (c *checker) defines(kind, name string) bool {
	if kind == "metric" {
		_, ok := c.m.Metrics[name]
		return ok
	}
	_, ok := c.m.Attributes[name]
	return ok
}

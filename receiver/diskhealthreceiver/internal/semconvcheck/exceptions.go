package semconvcheck

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Exception is one known violation, with the reason it stands and what will end it.
type Exception struct {
	Rule      string `yaml:"rule"`
	Metric    string `yaml:"metric,omitempty"`
	Attribute string `yaml:"attribute,omitempty"`
	Value     string `yaml:"value,omitempty"`
	Reason    string `yaml:"reason"`
}

func (x Exception) key() string {
	return Violation{Rule: x.Rule, Metric: x.Metric, Attribute: x.Attribute, Value: x.Value}.key()
}

// ParseExceptions reads an exceptions table: a list under `exceptions:`, each entry a known rule, a
// subject and a reason, no entry twice.
func ParseExceptions(data []byte) ([]Exception, error) {
	var doc struct {
		Exceptions []Exception `yaml:"exceptions"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, x := range doc.Exceptions {
		switch {
		case !slices.Contains(Rules, x.Rule):
			return nil, fmt.Errorf("exceptions[%d]: unknown rule %q", i, x.Rule)
		case x.Metric == "" && x.Attribute == "":
			return nil, fmt.Errorf("exceptions[%d]: names neither a metric nor an attribute", i)
		case x.Reason == "":
			return nil, fmt.Errorf("exceptions[%d] (%s): no reason", i, x.key())
		case seen[x.key()]:
			return nil, fmt.Errorf("exceptions[%d] (%s): listed twice", i, x.key())
		}
		seen[x.key()] = true
	}
	return doc.Exceptions, nil
}

// Reconcile splits violations by the table: those it does not list (new ones) and the entries that
// match no violation any more (fixed: the entry must go, so the table only shrinks).
func Reconcile(violations []Violation, table []Exception) (unlisted []Violation, stale []Exception) {
	listed := map[string]bool{}
	for _, x := range table {
		listed[x.key()] = true
	}
	found := map[string]bool{}
	for _, v := range violations {
		found[v.key()] = true
		if !listed[v.key()] {
			unlisted = append(unlisted, v)
		}
	}
	for _, x := range table {
		if !found[x.key()] {
			stale = append(stale, x)
		}
	}
	return unlisted, stale
}

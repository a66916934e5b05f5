// Package semconvcheck holds the receiver's output to the OpenTelemetry semantic conventions: it loads
// the conventions' YAML model (both of its file formats), takes what the receiver can emit (metadata.yaml
// files, the hand-built histograms' documentation, the attribute keys its code puts by hand) and reports
// every place where the two disagree, by the rules of the conventions' own policies
// (metric_namespace_collision and the attribute one, deprecation) plus conformance to what the model
// defines (instrument, unit, attributes, enum members).
package semconvcheck // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/semconvcheck"

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Model is what the conventions define, by name.
type Model struct {
	Metrics    map[string]*ModelMetric
	Attributes map[string]*ModelAttribute
}

// ModelMetric is one metric of the model with the attributes its definition and every refinement of it
// reference.
type ModelMetric struct {
	Name       string
	Instrument string // counter, updowncounter, gauge, histogram
	Unit       string
	Stability  string
	Deprecated bool
	// Attributes maps each referenced attribute key to its requirement level (required,
	// conditionally_required, recommended, opt_in). An attribute only a refinement requires is
	// conditionally_required here: it is required only where that refinement applies.
	Attributes map[string]string
}

// ModelAttribute is one attribute of the registry.
type ModelAttribute struct {
	Key        string
	Type       string // string, int, double, boolean, string[] …; for an enum the members' type
	Members    []string
	Stability  string
	Deprecated bool
}

// yaml shapes of both formats: v1 (`groups:`) and v2 (`file_format: definition/2`).
type (
	attrRef struct {
		ID               string    `yaml:"id"`  // v1 definition
		Key              string    `yaml:"key"` // v2 definition
		Ref              string    `yaml:"ref"`
		RefGroup         string    `yaml:"ref_group"`
		Type             yaml.Node `yaml:"type"`
		RequirementLevel yaml.Node `yaml:"requirement_level"`
		Stability        string    `yaml:"stability"`
		Deprecated       yaml.Node `yaml:"deprecated"`
	}
	group struct {
		ID         string    `yaml:"id"`
		Type       string    `yaml:"type"`
		MetricName string    `yaml:"metric_name"`
		Name       string    `yaml:"name"` // v2 metric
		Ref        string    `yaml:"ref"`  // v2 refinement: the refined metric's name
		Instrument string    `yaml:"instrument"`
		Unit       string    `yaml:"unit"`
		Stability  string    `yaml:"stability"`
		Deprecated yaml.Node `yaml:"deprecated"`
		Extends    string    `yaml:"extends"`
		Attributes []attrRef `yaml:"attributes"`
	}
	modelFile struct {
		Groups            []group   `yaml:"groups"`
		Attributes        []attrRef `yaml:"attributes"`
		AttributeGroups   []group   `yaml:"attribute_groups"`
		Metrics           []group   `yaml:"metrics"`
		MetricRefinements []group   `yaml:"metric_refinements"`
	}
)

// LoadModel reads every .yaml file under dir (the model/ folder of a semantic-conventions release).
func LoadModel(dir string) (*Model, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no model files under %s", dir)
	}
	sort.Strings(files)
	var all []modelFile
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var mf modelFile
		if err := yaml.Unmarshal(data, &mf); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		all = append(all, mf)
	}
	return buildModel(all)
}

// buildModel resolves the files' definitions, groups and references into one model.
func buildModel(files []modelFile) (*Model, error) {
	m := &Model{Metrics: map[string]*ModelMetric{}, Attributes: map[string]*ModelAttribute{}}
	groups := map[string]*group{} // every attribute list a metric can extend or ref_group, by id
	var metrics, refinements []*group
	define := func(a attrRef, key string) error {
		if _, dup := m.Attributes[key]; dup {
			return fmt.Errorf("attribute %s defined twice", key)
		}
		typ, members := attrType(a.Type)
		m.Attributes[key] = &ModelAttribute{Key: key, Type: typ, Members: members, Stability: a.Stability, Deprecated: !a.Deprecated.IsZero()}
		return nil
	}
	for fi := range files {
		f := &files[fi]
		for _, a := range f.Attributes {
			if err := define(a, a.Key); err != nil {
				return nil, err
			}
		}
		for i := range f.AttributeGroups {
			groups[f.AttributeGroups[i].ID] = &f.AttributeGroups[i]
		}
		for i := range f.Metrics {
			metrics = append(metrics, &f.Metrics[i])
		}
		for i := range f.MetricRefinements {
			refinements = append(refinements, &f.MetricRefinements[i])
		}
		for i := range f.Groups {
			g := &f.Groups[i]
			groups[g.ID] = g
			switch {
			case g.Type == "metric":
				g.Name = g.MetricName
				metrics = append(metrics, g)
			case g.Type == "attribute_group" && strings.HasPrefix(g.ID, "registry."):
				for _, a := range g.Attributes {
					if a.ID == "" {
						continue
					}
					if err := define(a, a.ID); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	for _, g := range metrics {
		if prev, dup := m.Metrics[g.Name]; dup {
			if !prev.Deprecated && g.Deprecated.IsZero() {
				return nil, fmt.Errorf("metric %s defined twice", g.Name)
			}
			if !prev.Deprecated {
				continue // a deprecated duplicate never hides the current definition
			}
		}
		mm := &ModelMetric{Name: g.Name, Instrument: g.Instrument, Unit: g.Unit, Stability: g.Stability,
			Deprecated: !g.Deprecated.IsZero(), Attributes: map[string]string{}}
		if err := collectRefs(groups, g, mm.Attributes, false, map[string]bool{}); err != nil {
			return nil, fmt.Errorf("metric %s: %w", g.Name, err)
		}
		m.Metrics[g.Name] = mm
	}
	for _, r := range refinements {
		mm, ok := m.Metrics[r.Ref]
		if !ok {
			return nil, fmt.Errorf("refinement %s of unknown metric %s", r.ID, r.Ref)
		}
		if err := collectRefs(groups, r, mm.Attributes, true, map[string]bool{}); err != nil {
			return nil, fmt.Errorf("refinement %s: %w", r.ID, err)
		}
	}
	return m, nil
}

// collectRefs adds the attribute references of g (its extends, ref_groups and refs) to into. A
// refinement adds attributes without making any required for the whole metric, and never lowers a
// level the metric itself gives.
func collectRefs(groups map[string]*group, g *group, into map[string]string, refinement bool, seen map[string]bool) error {
	if g.Extends != "" {
		if err := collectGroup(groups, g.Extends, into, refinement, seen); err != nil {
			return err
		}
	}
	for _, a := range g.Attributes {
		switch {
		case a.RefGroup != "":
			if err := collectGroup(groups, a.RefGroup, into, refinement, seen); err != nil {
				return err
			}
		case a.Ref != "":
			level := requirementLevel(a.RequirementLevel)
			if _, have := into[a.Ref]; have && refinement {
				continue
			}
			if refinement && level == "required" {
				level = "conditionally_required"
			}
			into[a.Ref] = level
		}
	}
	return nil
}

func collectGroup(groups map[string]*group, id string, into map[string]string, refinement bool, seen map[string]bool) error {
	if seen[id] {
		return nil
	}
	seen[id] = true
	g, ok := groups[id]
	if !ok {
		return fmt.Errorf("unknown attribute group %s", id)
	}
	return collectRefs(groups, g, into, refinement, seen)
}

// requirementLevel is a reference's level: a plain word or a one-key map
// ({conditionally_required: <when>}); recommended where none is given, as the model's syntax says.
func requirementLevel(n yaml.Node) string {
	switch {
	case n.Kind == yaml.ScalarNode:
		return n.Value
	case n.Kind == yaml.MappingNode && len(n.Content) > 0:
		return n.Content[0].Value
	}
	return "recommended"
}

// attrType is a definition's type: a scalar (string, int, string[] …) or an enum's members, whose type
// is their values' (string or int).
func attrType(n yaml.Node) (string, []string) {
	if n.Kind == yaml.ScalarNode {
		return n.Value, nil
	}
	var t struct {
		Members []struct {
			Value yaml.Node `yaml:"value"`
		} `yaml:"members"`
	}
	if err := n.Decode(&t); err != nil || len(t.Members) == 0 {
		return "", nil
	}
	typ := "string"
	var members []string
	for _, mb := range t.Members {
		if mb.Value.Tag == "!!int" {
			typ = "int"
		}
		members = append(members, mb.Value.Value)
	}
	return typ, members
}

// Namespaces are the namespaces the model owns: every proper dot prefix of a name it defines (metric or
// attribute, deprecated ones included: their namespace stays the conventions').
func (m *Model) Namespaces() map[string]bool {
	owned := map[string]bool{}
	add := func(name string) {
		for i := range len(name) {
			if name[i] == '.' {
				owned[name[:i]] = true
			}
		}
	}
	for n := range m.Metrics {
		add(n)
	}
	for k := range m.Attributes {
		add(k)
	}
	return owned
}

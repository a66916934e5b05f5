// Command emitgen writes a source's fast emitter from its metadata.yaml: internal/metadata/
// generated_emitter.go (an Emitter with one typed Append…DataPoint per metric, on the runtime in
// receiver/diskhealthreceiver/internal/scraper/emit) and generated_emitter_test.go (the Emitter
// against mdatagen's MetricsBuilder, byte for byte, for every configuration mdatagen's testdata has
// and each aggregation strategy). `make generate` runs it after mdatagen for every source whose doc.go
// names it; the receiver's drift test regenerates and compares.
//
// What a metric is (name, description, unit, type, monotonicity, temporality, attributes and their
// order, enum values) comes from metadata.yaml. The Go identifiers the code refers to (config fields,
// attribute key constants, enum types, the Record…DataPoint signatures the Append functions mirror,
// ResourceBuilder setters) are read from mdatagen's output in the same folder, so they are always
// the ones mdatagen chose.
//
// A folder may also hold hostmetrics.yaml: the metrics the source emits under the receiver's
// `conventions: hostmetrics`, with hostmetricsreceiver's names. mdatagen generates it into the package
// its generated_package_name names (internal/hostmetrics), and emitgen gives that package its Emitter too.
//
// Usage: emitgen DIR... (each a folder holding metadata.yaml and mdatagen's internal/metadata).
package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The runtime the generated Emitter embeds.
const emitPkg = "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: emitgen DIR...")
		os.Exit(2)
	}
	for _, dir := range os.Args[1:] {
		for _, file := range []string{"metadata.yaml", "hostmetrics.yaml"} {
			path := filepath.Join(dir, file)
			if _, err := os.Stat(path); file != "metadata.yaml" && errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err := generate(path); err != nil {
				fmt.Fprintf(os.Stderr, "emitgen %s: %v\n", path, err)
				os.Exit(1)
			}
		}
	}
}

// metadata is the part of metadata.yaml the emitter needs.
type metadata struct {
	// GeneratedPackageName is mdatagen's package (and folder under internal/); "" is metadata.
	GeneratedPackageName string                   `yaml:"generated_package_name"`
	SemConvVersion       string                   `yaml:"sem_conv_version"`
	Attributes           map[string]attribute     `yaml:"attributes"`
	ResourceAttributes   map[string]attribute     `yaml:"resource_attributes"`
	Metrics              map[string]metricSection `yaml:"metrics"`
}

type attribute struct {
	NameOverride string   `yaml:"name_override"`
	Type         string   `yaml:"type"`
	Enum         []string `yaml:"enum"`
}

type metricSection struct {
	Description string `yaml:"description"`
	Unit        string `yaml:"unit"`
	Sum         *struct {
		ValueType   string `yaml:"value_type"`
		Monotonic   bool   `yaml:"monotonic"`
		Temporality string `yaml:"aggregation_temporality"`
	} `yaml:"sum"`
	Gauge *struct {
		ValueType string `yaml:"value_type"`
	} `yaml:"gauge"`
	Attributes []string `yaml:"attributes"`
}

// param is one parameter of a Record…DataPoint function.
type param struct{ name, typ string }

// goNames is what mdatagen's output calls things.
type goNames struct {
	metricIdent map[string]string  // metric name -> identifier (MetricsInfo's field)
	record      map[string][]param // metric identifier -> Record…DataPoint parameters
	attrKeys    map[string][]string
	resField    map[string]string           // resource attribute name -> ResourceAttributesConfig field
	resSetters  map[string][]resourceSetter // resource attribute name -> ResourceBuilder setters
}

type resourceSetter struct {
	method string
	typ    string // the value's Go type; "" for an enum value's setter
}

// generate writes the Emitter of the metadata file at path into mdatagen's package for it.
func generate(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var md metadata
	if err := yaml.Unmarshal(raw, &md); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if md.GeneratedPackageName == "" {
		md.GeneratedPackageName = "metadata"
	}
	if len(md.Metrics) == 0 {
		return errors.New("metadata.yaml has no metrics")
	}
	if md.SemConvVersion == "" {
		return errors.New("metadata.yaml has no sem_conv_version (the builder's schema URL)")
	}
	out := filepath.Join(filepath.Dir(path), "internal", md.GeneratedPackageName)
	names, err := readGoNames(out)
	if err != nil {
		return fmt.Errorf("mdatagen's output (run mdatagen first): %w", err)
	}
	g := &gen{md: md, names: names}
	for _, f := range []struct {
		name string
		body func(*bytes.Buffer) error
	}{
		{"generated_emitter.go", g.emitter},
		{"generated_emitter_test.go", g.test},
	} {
		var b bytes.Buffer
		fmt.Fprintf(&b, "// Code generated by emitgen from %s. DO NOT EDIT.\n\npackage %s\n\n", filepath.Base(path), md.GeneratedPackageName)
		if err := f.body(&b); err != nil {
			return err
		}
		src, err := format.Source(b.Bytes())
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", f.name, err, b.Bytes())
		}
		if err := os.WriteFile(filepath.Join(out, f.name), src, 0o644); err != nil {
			return err
		}
	}
	return nil
}

type gen struct {
	md    metadata
	names *goNames
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// attrName is the attribute's key on the data points.
func (g *gen) attrName(id string) string {
	if a := g.md.Attributes[id]; a.NameOverride != "" {
		return a.NameOverride
	}
	return id
}

// metric is one metric with what both files need.
type metric struct {
	name, ident string
	section     metricSection
	params      []param // attributes' parameters (after ts and val)
	valType     string
	keys        []string
}

func (g *gen) metrics() ([]metric, error) {
	var out []metric
	for _, name := range sortedKeys(g.md.Metrics) {
		sec := g.md.Metrics[name]
		ident, ok := g.names.metricIdent[name]
		if !ok {
			return nil, fmt.Errorf("metric %s is not in mdatagen's MetricsInfo", name)
		}
		ps := g.names.record[ident]
		if len(ps) != 2+len(sec.Attributes) {
			return nil, fmt.Errorf("Record%sDataPoint has %d parameters, metadata.yaml gives %s %d attributes", ident, len(ps), name, len(sec.Attributes))
		}
		if len(g.names.attrKeys[ident]) != len(sec.Attributes) {
			return nil, fmt.Errorf("%sMetricAttributeKey has %d constants, metadata.yaml gives %s %d attributes", ident, len(g.names.attrKeys[ident]), name, len(sec.Attributes))
		}
		if (sec.Sum == nil) == (sec.Gauge == nil) {
			return nil, fmt.Errorf("metric %s must be exactly one of sum and gauge", name)
		}
		for i, id := range sec.Attributes {
			a, ok := g.md.Attributes[id]
			if !ok {
				return nil, fmt.Errorf("metric %s: attribute %s is not declared", name, id)
			}
			want := map[string]string{"string": "string", "int": "int64", "double": "float64", "bool": "bool"}[a.Type]
			if len(a.Enum) > 0 {
				want = "Attribute" // an enum type
			}
			if want == "" || !strings.HasPrefix(ps[2+i].typ, want) {
				return nil, fmt.Errorf("metric %s: attribute %s of type %s (Go %s) is not supported", name, id, a.Type, ps[2+i].typ)
			}
		}
		out = append(out, metric{name: name, ident: ident, section: sec, params: ps[2:], valType: ps[1].typ, keys: g.names.attrKeys[ident]})
	}
	return out, nil
}

func (g *gen) emitter(b *bytes.Buffer) error {
	ms, err := g.metrics()
	if err != nil {
		return err
	}
	fmt.Fprintf(b, `import (
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper"
	conventions "go.opentelemetry.io/otel/semconv/v%s"

	%q
)

// Emitter writes this source's metrics straight into pdata: what MetricsBuilder writes, byte for
// byte (TestEmitterMatchesBuilder), at a fraction of the cost (see emit.Emitter). Call Resource before
// a resource's points, then the Append functions in any order, then Emit.
type Emitter struct {
	emit.Emitter
}

// NewEmitter returns an Emitter for mbc. Points start now until SetStartTime.
func NewEmitter(mbc MetricsBuilderConfig, settings scraper.Settings) *Emitter {
	m := &mbc.Metrics
	e := &Emitter{}
	e.Init(conventions.SchemaURL, ScopeName, settings.BuildInfo.Version, pcommon.NewTimestampFromTime(time.Now()), []emit.Metric{
`, g.md.SemConvVersion, emitPkg)
	for _, m := range ms {
		s := m.section
		fmt.Fprintf(b, "{\nName: %q, Description: %q, Unit: %q,\n", m.name, s.Description, s.Unit)
		if s.Gauge != nil {
			b.WriteString("Gauge: true,\n")
		} else {
			t := map[string]string{"cumulative": "Cumulative", "delta": "Delta"}[s.Sum.Temporality]
			if t == "" {
				return fmt.Errorf("metric %s: aggregation_temporality %q", m.name, s.Sum.Temporality)
			}
			fmt.Fprintf(b, "Monotonic: %t, Temporality: pmetric.AggregationTemporality%s,\n", s.Sum.Monotonic, t)
		}
		fmt.Fprintf(b, "Enabled: m.%s.Enabled, Strategy: m.%[1]s.AggregationStrategy, Attrs: %d,\nKeep: emit.Keep(", m.ident, len(m.keys))
		for _, k := range m.keys {
			fmt.Fprintf(b, "slices.Contains(m.%s.EnabledAttributes, %s), ", m.ident, k)
		}
		b.WriteString("),\n},\n")
	}
	b.WriteString("}, []emit.ResourceFilter{\n")
	for _, name := range sortedKeys(g.md.ResourceAttributes) {
		f, ok := g.names.resField[name]
		if !ok {
			return fmt.Errorf("resource attribute %s is not in mdatagen's ResourceAttributesConfig", name)
		}
		fmt.Fprintf(b, "{Attr: %q, Include: mbc.ResourceAttributes.%s.MetricsInclude, Exclude: mbc.ResourceAttributes.%[2]s.MetricsExclude},\n", name, f)
	}
	b.WriteString("})\nreturn e\n}\n")

	for i, m := range ms {
		fmt.Fprintf(b, "\n// Append%sDataPoint adds a data point to %s, as MetricsBuilder.Record%[1]sDataPoint does.\n", m.ident, m.name)
		fmt.Fprintf(b, "func (e *Emitter) Append%sDataPoint(ts pcommon.Timestamp, val %s", m.ident, m.valType)
		for _, p := range m.params {
			fmt.Fprintf(b, ", %s %s", p.name, p.typ)
		}
		fmt.Fprintf(b, ") {\nm := e.Metric(%d)\nif m == nil {\nreturn\n}\ndp := e.Point(m, ts)\n", i)
		if len(m.params) > 0 {
			b.WriteString("attrs := dp.Attributes()\n")
		}
		for j, id := range m.section.Attributes {
			a := g.md.Attributes[id]
			v := m.params[j].name
			put := map[string]string{"string": "PutStr", "int": "PutInt", "double": "PutDouble", "bool": "PutBool"}[a.Type]
			if len(a.Enum) > 0 {
				v += ".String()"
			}
			fmt.Fprintf(b, "if m.Keep&(1<<%d) != 0 {\nattrs.%s(%q, %s)\n}\n", j, put, g.attrName(id), v)
		}
		set := "SetInt"
		if m.valType == "float64" {
			set = "SetDouble"
		}
		fmt.Fprintf(b, "e.%s(m, dp, val)\n}\n", set)
	}
	return nil
}

func (g *gen) test(b *bytes.Buffer) error {
	ms, err := g.metrics()
	if err != nil {
		return err
	}
	b.WriteString(`import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"
)

// TestEmitterMatchesBuilder: for every configuration in testdata/config.yaml (mdatagen's: defaults,
// all on, all off, every attribute off, resource filters) and every aggregation strategy, the Emitter
// writes what the MetricsBuilder writes, byte for byte: three resources (metrics appended in
// metadata.yaml's order, in reverse, none at all), three points per metric with distinct attribute
// values, the third under another start time.
func TestEmitterMatchesBuilder(t *testing.T) {
	configs := map[string]MetricsBuilderConfig{}
	for _, name := range []string{"default", "all_set", "none_set", "reaggregate_set", "filter_set_include", "filter_set_exclude"} {
		configs[name] = loadMetricsBuilderConfig(t, name)
	}
	for _, s := range []string{AggregationStrategySum, AggregationStrategyAvg, AggregationStrategyMin, AggregationStrategyMax} {
		mbc := loadMetricsBuilderConfig(t, "reaggregate_set")
`)
	for _, m := range ms {
		fmt.Fprintf(b, "mbc.Metrics.%s.AggregationStrategy = s\n", m.ident)
	}
	b.WriteString(`		configs["reaggregate_"+s] = mbc
	}
	start, start2, ts := pcommon.Timestamp(1_000_000_000), pcommon.Timestamp(1_000_005_000), pcommon.Timestamp(1_000_010_000)
	for name, mbc := range configs {
		t.Run(name, func(t *testing.T) {
			settings := scrapertest.NewNopSettings(Type)
			mb := NewMetricsBuilder(mbc, settings, WithStartTime(start))
			e := NewEmitter(mbc, settings)
			for r := range 3 {
				res := testResource(mbc, r)
				e.Resource(res)
				mb.Reset(WithStartTime(start))
				e.SetStartTime(start)
				for k := range 3 {
					if k == 2 {
						mb.Reset(WithStartTime(start2))
						e.SetStartTime(start2)
					}
					if r == 2 {
						continue
					}
					ps := testPoints(k)
					for i := range ps {
						j := i
						if r == 1 {
							j = len(ps) - 1 - i
						}
						ps[j].record(mb, ts)
						ps[j].append(e, ts)
					}
				}
				mb.EmitForResource(WithResource(res))
			}
			want, got := mb.Emit(), e.Emit()
			var jm pmetric.JSONMarshaler
			wantJSON, err := jm.MarshalMetrics(want)
			require.NoError(t, err)
			gotJSON, err := jm.MarshalMetrics(got)
			require.NoError(t, err)
			require.Equal(t, string(wantJSON), string(gotJSON))
			var pm pmetric.ProtoMarshaler
			wantPB, err := pm.MarshalMetrics(want)
			require.NoError(t, err)
			gotPB, err := pm.MarshalMetrics(got)
			require.NoError(t, err)
			require.Equal(t, wantPB, gotPB)
		})
	}
}

type testPoint struct {
	record func(*MetricsBuilder, pcommon.Timestamp)
	append func(*Emitter, pcommon.Timestamp)
}

// testPoints is one point per metric, its attribute values distinct for each k.
func testPoints(k int) []testPoint {
	return []testPoint{
`)
	for _, m := range ms {
		args := []string{}
		if m.valType == "float64" {
			args = append(args, "1.5+float64(k)*2.25")
		} else {
			args = append(args, "10+int64(k)*7")
		}
		for j, id := range m.section.Attributes {
			a := g.md.Attributes[id]
			switch {
			case len(a.Enum) > 0:
				args = append(args, fmt.Sprintf("%s(1+k%%%d)", m.params[j].typ, len(a.Enum)))
			case a.Type == "string":
				args = append(args, fmt.Sprintf("%q+strconv.Itoa(k)", id+"-val-"))
			case a.Type == "int":
				args = append(args, "int64(k)")
			case a.Type == "double":
				args = append(args, "float64(k)")
			case a.Type == "bool":
				args = append(args, "k%2 == 0")
			}
		}
		call := strings.Join(args, ", ")
		fmt.Fprintf(b, "{func(mb *MetricsBuilder, ts pcommon.Timestamp) { mb.Record%sDataPoint(ts, %s) },\nfunc(e *Emitter, ts pcommon.Timestamp) { e.Append%[1]sDataPoint(ts, %[2]s) }},\n", m.ident, call)
	}
	b.WriteString(`}
}

// testResource is resource r: the first one's values are the ones mdatagen's filter_set_exclude drops.
func testResource(mbc MetricsBuilderConfig, r int) pcommon.Resource {
`)
	if len(g.md.ResourceAttributes) == 0 {
		// No resource attributes: mdatagen has no ResourceBuilder; three resources told apart by hand.
		b.WriteString("res := pcommon.NewResource()\nres.Attributes().PutInt(\"resource\", int64(r))\n_ = mbc\nreturn res\n}\n")
		return nil
	}
	b.WriteString("rb := NewResourceBuilder(mbc.ResourceAttributes)\n")
	for _, a := range g.md.ResourceAttributes {
		if a.Type == "string" && len(a.Enum) == 0 {
			b.WriteString("suffix := \"\"\nif r > 0 {\nsuffix = \"-\" + strconv.Itoa(r)\n}\n")
			break
		}
	}
	for _, name := range sortedKeys(g.md.ResourceAttributes) {
		a := g.md.ResourceAttributes[name]
		setters := g.names.resSetters[name]
		if len(setters) == 0 {
			return fmt.Errorf("resource attribute %s has no ResourceBuilder setter", name)
		}
		if len(a.Enum) > 0 {
			b.WriteString("switch r {\n")
			for i, s := range setters[:min(len(setters), 3)] {
				fmt.Fprintf(b, "case %d:\nrb.%s()\n", i, s.method)
			}
			b.WriteString("}\n")
			continue
		}
		s := setters[0]
		switch s.typ {
		case "string":
			fmt.Fprintf(b, "rb.%s(%q + suffix)\n", s.method, name+"-val")
		case "bool":
			fmt.Fprintf(b, "rb.%s(r == 0)\n", s.method)
		case "int64":
			fmt.Fprintf(b, "rb.%s(int64(r))\n", s.method)
		case "float64":
			fmt.Fprintf(b, "rb.%s(float64(r))\n", s.method)
		default:
			return fmt.Errorf("resource attribute %s: setter type %s is not supported", name, s.typ)
		}
	}
	b.WriteString("return rb.Emit()\n}\n")
	return nil
}

// readGoNames parses mdatagen's generated_metrics.go, generated_config.go and generated_resource.go.
func readGoNames(dir string) (*goNames, error) {
	n := &goNames{
		metricIdent: map[string]string{}, record: map[string][]param{}, attrKeys: map[string][]string{},
		resField: map[string]string{}, resSetters: map[string][]resourceSetter{},
	}
	fset := token.NewFileSet()
	parse := func(name string) (*ast.File, []byte, error) {
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, nil, err
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		return f, src, err
	}
	text := func(src []byte, e ast.Node) string {
		return string(src[fset.Position(e.Pos()).Offset:fset.Position(e.End()).Offset])
	}

	f, src, err := parse("generated_metrics.go")
	if err != nil {
		return nil, err
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, s := range d.Specs {
				vs, ok := s.(*ast.ValueSpec)
				if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "MetricsInfo" || len(vs.Values) != 1 {
					continue
				}
				lit, ok := vs.Values[0].(*ast.CompositeLit)
				if !ok {
					return nil, errors.New("MetricsInfo is not a composite literal")
				}
				for _, el := range lit.Elts {
					kv := el.(*ast.KeyValueExpr)
					for _, f := range kv.Value.(*ast.CompositeLit).Elts {
						fkv := f.(*ast.KeyValueExpr)
						if fkv.Key.(*ast.Ident).Name == "Name" {
							name, err := strconv.Unquote(fkv.Value.(*ast.BasicLit).Value)
							if err != nil {
								return nil, err
							}
							n.metricIdent[name] = kv.Key.(*ast.Ident).Name
						}
					}
				}
			}
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv == nil || !strings.HasPrefix(name, "Record") || !strings.HasSuffix(name, "DataPoint") {
				continue
			}
			ident := strings.TrimSuffix(strings.TrimPrefix(name, "Record"), "DataPoint")
			var ps []param
			for _, fld := range d.Type.Params.List {
				for _, nm := range fld.Names {
					ps = append(ps, param{nm.Name, text(src, fld.Type)})
				}
			}
			n.record[ident] = ps
		}
	}

	f, _, err = parse("generated_config.go")
	if err != nil {
		return nil, err
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range gd.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				id, ok := s.Type.(*ast.Ident)
				if gd.Tok != token.CONST || !ok || !strings.HasSuffix(id.Name, "MetricAttributeKey") {
					continue
				}
				ident := strings.TrimSuffix(id.Name, "MetricAttributeKey")
				n.attrKeys[ident] = append(n.attrKeys[ident], s.Names[0].Name)
			case *ast.TypeSpec:
				st, ok := s.Type.(*ast.StructType)
				if s.Name.Name != "ResourceAttributesConfig" || !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					tag, err := strconv.Unquote(fld.Tag.Value)
					if err != nil {
						return nil, err
					}
					n.resField[reflect.StructTag(tag).Get("mapstructure")] = fld.Names[0].Name
				}
			}
		}
	}

	f, src, err = parse("generated_resource.go")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return n, nil // no resource attributes
		}
		return nil, err
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || !strings.HasPrefix(fd.Name.Name, "Set") {
			continue
		}
		var key string
		ast.Inspect(fd.Body, func(x ast.Node) bool {
			call, ok := x.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				key, _ = strconv.Unquote(lit.Value)
			}
			return true
		})
		if key == "" {
			return nil, fmt.Errorf("ResourceBuilder.%s sets no attribute", fd.Name.Name)
		}
		s := resourceSetter{method: fd.Name.Name}
		if ps := fd.Type.Params.List; len(ps) == 1 {
			s.typ = text(src, ps[0].Type)
		}
		n.resSetters[key] = append(n.resSetters[key], s)
	}
	return n, nil
}

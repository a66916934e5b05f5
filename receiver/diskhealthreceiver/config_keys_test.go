package diskhealthreceiver

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

// keyCase is a configuration that gets one key wrong, as a user writes it.
type keyCase struct {
	conf map[string]any
	what string // "unknown key" or "wrong type"
}

// badKeys adds to cases, for the struct type t decoded at path, an unknown key beside its keys and a
// value of the wrong type for each key, then does the same below each key that is a struct or a list
// of them. wrap puts a value at path in a whole configuration. The keys are t's mapstructure tags.
func badKeys(t *testing.T, cases map[string]keyCase, typ reflect.Type, path string, wrap func(any) map[string]any) {
	t.Helper()
	below := func(key string) string { return strings.TrimPrefix(path+"."+key, ".") }
	cases[below("no_such_key")] = keyCase{wrap(map[string]any{"no_such_key": 1}), "unknown key"}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if strings.Contains(opts, "squash") {
			badKeys(t, cases, ft, path, wrap)
			continue
		}
		require.NotEmpty(t, name, "%s.%s has no key", typ, f.Name)
		key := below(name)
		at := func(v any) map[string]any { return wrap(map[string]any{name: v}) }
		// A map is the wrong type for any value but a struct; a scalar is for a struct.
		var wrong any = map[string]any{"x": 1}
		if ft.Kind() == reflect.Struct {
			wrong = true
		}
		cases[key] = keyCase{at(wrong), "wrong type"}
		switch {
		case ft.Kind() == reflect.Struct && hasKeys(ft):
			badKeys(t, cases, ft, key, at)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			badKeys(t, cases, ft.Elem(), key+"[0]", func(v any) map[string]any { return at([]any{v}) })
		}
	}
}

// hasKeys reports whether a struct has a key of its own (a struct decoded as text has none).
func hasKeys(typ reflect.Type) bool {
	for i := range typ.NumField() {
		if typ.Field(i).IsExported() && typ.Field(i).Tag.Get("mapstructure") != "-" {
			return true
		}
	}
	return false
}

// TestConfigErrorsNameTheFullKey: an unknown key beside every key and a value of the wrong type for
// every key — of the top level, of every source's section and of the shared metrics: and
// resource_attributes: keys — are each refused naming the full key as the user writes it
// (netfs.no_such_key, filesystem.mount_points.include, metrics.system.disk.io.enabled), never a Go
// type ('netfsscraper.Config' has invalid keys) or a key of a section alone ('enabled'). The keys are
// the registry's sections' and the config structs' own.
func TestConfigErrorsNameTheFullKey(t *testing.T) {
	cases := map[string]keyCase{}
	badKeys(t, cases, reflect.TypeFor[topLevel](), "", func(v any) map[string]any { return v.(map[string]any) })
	def := createDefaultConfig().(*Config)
	for _, r := range registry {
		cases[r.name] = keyCase{map[string]any{r.name: true}, "wrong type"}
		badKeys(t, cases, reflect.TypeOf(def.sections[r.name]).Elem(), r.name, func(v any) map[string]any { return map[string]any{r.name: v} })
		for _, key := range []string{metricsKey, resourceAttributesKey} {
			if part := sharedPart(def.sections[r.name], key); part != nil {
				cases[key] = keyCase{map[string]any{key: true}, "wrong type"}
				badKeys(t, cases, reflect.TypeOf(part).Elem(), key, func(v any) map[string]any { return map[string]any{key: v} })
			}
		}
	}
	for _, r := range registry {
		require.Contains(t, cases, r.name+".enabled", "every section is covered")
	}
	t.Logf("%d keys", len(cases))
	for key, c := range cases {
		t.Run(key+" "+c.what, func(t *testing.T) {
			err := confmap.NewFromStringMap(c.conf).Unmarshal(createDefaultConfig())
			require.Error(t, err)
			want := key + ": "
			if c.what == "unknown key" {
				want += "unknown key"
			}
			assert.True(t, slices.ContainsFunc(strings.Split(err.Error(), "\n"), func(line string) bool {
				return strings.HasPrefix(strings.TrimPrefix(line, "'' "), want) // confmap heads the receiver's errors with ''
			}), "no line starts with %q:\n%v", want, err)
		})
	}
}

package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/go-viper/mapstructure/v2"
)

// The texts mapstructure heads several problems with, and gives an unknown key.
const (
	decodingFailed = "decoding failed due to the following error(s):"
	invalidKeys    = "has invalid keys: "
)

// keyErrors rewrites an error of decoding the key at path into one error per problem, each naming
// the full key as the user writes it (netfs.bogus, filesystem.mount_points.include,
// metrics.system.disk.io.enabled). confmap names a key relative to the struct whose Unmarshal decoded
// it, and an unknown key at the top of one after that struct's Go type ('netfsscraper.Config' has
// invalid keys: bogus): neither tells a user where to look.
func keyErrors(path string, err error) []error {
	switch e := err.(type) { //nolint:errorlint // the tree is walked one level at a time, each level by its own type
	case nil:
		return nil
	case *mapstructure.DecodeError:
		name := e.Name()
		if goTypeNames()[name] {
			name = ""
		}
		return keyErrors(joinKey(path, name), e.Unwrap())
	case interface{ Unwrap() []error }:
		var out []error
		for _, inner := range e.Unwrap() {
			out = append(out, keyErrors(path, inner)...)
		}
		return out
	}
	if inner := errors.Unwrap(err); inner != nil && strings.HasPrefix(err.Error(), decodingFailed) {
		return keyErrors(path, inner)
	}
	if keys, ok := strings.CutPrefix(err.Error(), invalidKeys); ok {
		var out []error
		for _, k := range strings.Split(keys, ", ") {
			out = append(out, fmt.Errorf("%s: unknown key", joinKey(path, k)))
		}
		return out
	}
	if path == "" {
		return []error{err}
	}
	return []error{fmt.Errorf("%s: %w", path, err)}
}

// joinKey is key below parent as a user writes it: a.b, or a[0] for a list entry.
func joinKey(parent, key string) string {
	switch {
	case parent == "":
		return key
	case key == "":
		return parent
	case strings.HasPrefix(key, "["):
		return parent + key
	}
	return parent + "." + key
}

// goTypeNames are the names mapstructure may give in place of a key: the Go types of the structs the
// configuration decodes into.
var goTypeNames = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	seen := map[reflect.Type]bool{} // not by name: every source's metadata package has a metadata.MetricsConfig
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		names[t.String()] = true
		for i := range t.NumField() {
			walk(t.Field(i).Type)
		}
	}
	walk(reflect.TypeFor[topLevel]())
	for _, s := range defaultSections() {
		walk(reflect.TypeOf(s))
	}
	return names
})

// distinct joins errs, each text once: a shared key reaches several sources, which would each report
// the same problem with it.
func distinct(errs []error) error {
	seen := map[string]bool{}
	var out []error
	for _, err := range errs {
		if !seen[err.Error()] {
			seen[err.Error()] = true
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}

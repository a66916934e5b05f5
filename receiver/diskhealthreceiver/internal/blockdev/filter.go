package blockdev

import (
	"errors"
	"fmt"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/match"
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
	names   *match.Matcher
	classes map[Class]bool
}

// NewFilter compiles the name patterns and checks the classes. key is the
// config section ("iostat"): errors name key.devices.include[i] and
// key.device_classes[i]. The caller decides the default (DefaultClasses); an
// empty classes list keeps nothing.
func NewFilter(key string, names match.Config, classes []Class) (*Filter, error) {
	m, err := names.Compile(key + ".devices")
	errs := []error{err}
	set := make(map[Class]bool, len(classes))
	for i, c := range classes {
		if !c.Valid() {
			errs = append(errs, fmt.Errorf("%s.device_classes[%d]: unknown device class %q, want one of %v", key, i, c, AllClasses))
		}
		set[c] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Filter{names: m, classes: set}, nil
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

// Match keeps a device whose class is selected and whose name passes the
// include/exclude patterns.
func (f *Filter) Match(id *Identity) bool {
	return f.classes[id.Class] && f.names.Match(id.Name)
}

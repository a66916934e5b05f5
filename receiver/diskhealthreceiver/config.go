package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
)

// The top-level keys handed to every source: each source takes the metrics and resource attributes it
// knows; a name several sources know (hw.status, hw.id …) switches all of them.
const (
	metricsKey            = "metrics"
	resourceAttributesKey = "resource_attributes"
)

// Config is the disk_health receiver's configuration: the controller's keys, root_path, the shared
// metrics: and resource_attributes: keys, and one section per source of the registry, under the
// source's name, each that source's own config type.
type Config struct {
	ControllerConfig scraperhelper.ControllerConfig `mapstructure:",squash"`

	// RootPath is where the host's root filesystem is mounted when the collector runs in a container
	// (hostmetrics convention, e.g. /hostfs): /proc, /sys and /dev are read below it. Empty means "/".
	RootPath string `mapstructure:"root_path"`

	// Conventions picks the names: semconv (the default, the receiver's own after the semantic
	// conventions) or hostmetrics, under which the metrics hostmetricsreceiver's disk and filesystem
	// scrapers have come out with its names, attributes and units in place of ours
	// (docs/configuration.md).
	Conventions emit.Conventions `mapstructure:"conventions"`

	// MaxPointsPerScrape bounds the data points one scrape of one source hands on (whole resources past it
	// are dropped, with a WARN when that starts); 0 means no bound. The default is far above a large host
	// (1 000 disks and 5 000 mounts are about 110 000 points over all sources).
	MaxPointsPerScrape int `mapstructure:"max_points_per_scrape"`

	// sections are the sources' sections by name, the metrics: and resource_attributes: keys already
	// split among them; Unmarshal and Marshal map them to the user's keys.
	sections map[string]component.Config

	// status is the receiver's own metric (disk_health.source.status), switched by the metrics: key
	// like the sources' metrics.
	status metadata.MetricsBuilderConfig

	// prevent unkeyed literal initialization
	_ struct{}
}

// topLevel is Config without its (un)marshalling methods: the keys that are not sections.
type topLevel Config

var (
	_ confmap.Validator   = (*Config)(nil)
	_ confmap.Unmarshaler = (*Config)(nil)
	_ confmap.Marshaler   = (*Config)(nil)
)

// defaultSections returns every source's section with that source's defaults.
func defaultSections() map[string]component.Config {
	m := make(map[string]component.Config, len(registry))
	for _, r := range registry {
		m[r.name] = r.factory(nil).CreateDefaultConfig()
	}
	return m
}

// Unmarshal reads each source's section from the key of its name, hands the metrics: and
// resource_attributes: keys to the sources that know them, and the rest to the controller's keys and
// root_path. Every problem names its full key (netfs.bogus: unknown key).
func (cfg *Config) Unmarshal(conf *confmap.Conf) error {
	if cfg.sections == nil {
		cfg.sections = defaultSections()
	}
	rest := confmap.New()
	if err := rest.Merge(conf); err != nil {
		return err
	}
	var errs []error
	for _, r := range registry {
		rest.Delete(r.name)
		sub, err := conf.Sub(r.name)
		if err == nil {
			errs = append(errs, refuseMoved(r.name, sub)...)
			err = sub.Unmarshal(cfg.sections[r.name])
		}
		errs = append(errs, keyErrors(r.name, err)...)
	}
	for _, key := range []string{metricsKey, resourceAttributesKey} {
		rest.Delete(key)
		errs = append(errs, cfg.unmarshalShared(conf, key)...)
	}
	errs = append(errs, keyErrors("", rest.Unmarshal((*topLevel)(cfg)))...)
	return distinct(errs)
}

// movedKeys are the keys of a section that moved to another, by the section's name: the old key is
// refused naming the new one, so a configuration written for an earlier release fails to load with the
// fix in the message instead of silently losing its setting.
var movedKeys = map[string]map[string]string{
	// The capacity source took the capacity settings of the filesystem source (issue 33).
	"filesystem": {
		"kubelet_config_file": "capacity.kubelet_config_file", "pod_shm": "capacity.pod_shm",
		"kubelet_root_dir": "capacity.kubelet_root_dir", "image_fs_dir": "capacity.image_fs_dir",
		"project_quotas": "capacity.project_quotas", "checkpoint_writers": "capacity.checkpoint_writers",
		"storage": "capacity.storage",
	},
}

// refuseMoved returns one error per moved key set in the section sub, and removes them from it so that
// they are not also reported as unknown.
func refuseMoved(section string, sub *confmap.Conf) []error {
	var errs []error
	for _, old := range slices.Sorted(maps.Keys(movedKeys[section])) {
		if sub.IsSet(old) {
			errs = append(errs, fmt.Errorf("%s.%s: moved to %s; write it there", section, old, movedKeys[section][old]))
			sub.Delete(old)
		}
	}
	return errs
}

// unmarshalShared hands each entry of the top-level key (metrics or resource_attributes) to every
// source that has a setting of that name.
func (cfg *Config) unmarshalShared(conf *confmap.Conf, key string) []error {
	sub, err := conf.Sub(key)
	if err != nil {
		return keyErrors(key, err)
	}
	given := sub.ToStringMap()
	known := map[string]bool{}
	var errs []error
	for _, r := range registry {
		targets := []any{sharedPart(cfg.sections[r.name], key)}
		if key == metricsKey {
			// A name of the hostmetrics-compatible set switches that set's metric too, whichever
			// conventions are chosen, as it does the source's own metric of the name.
			targets = append(targets, hostmetricsPart(cfg.sections[r.name]))
		}
		for _, target := range targets {
			if target == nil {
				continue
			}
			mine := map[string]any{}
			for name := range settingNames(target) {
				known[name] = true
				if v, ok := given[name]; ok {
					mine[name] = v
				}
			}
			errs = append(errs, keyErrors(key, confmap.NewFromStringMap(mine).Unmarshal(target))...)
		}
	}
	if key == metricsKey {
		// The receiver's own metric.
		mine := map[string]any{}
		for name := range settingNames(&cfg.status.Metrics) {
			known[name] = true
			if v, ok := given[name]; ok {
				mine[name] = v
			}
		}
		errs = append(errs, keyErrors(key, confmap.NewFromStringMap(mine).Unmarshal(&cfg.status.Metrics))...)
	}
	var unknown []string
	for name := range given {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		errs = append(errs, fmt.Errorf("%s: unknown key: no source has it", joinKey(key, name)))
	}
	return errs
}

// Marshal writes the configuration with the keys Unmarshal reads.
func (cfg *Config) Marshal(conf *confmap.Conf) error {
	if err := conf.Marshal((*topLevel)(cfg)); err != nil {
		return err
	}
	out := map[string]any{}
	shared := map[string]map[string]any{metricsKey: {}, resourceAttributesKey: {}}
	for _, r := range registry {
		section := cfg.sections[r.name]
		m, err := marshalled(section)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		out[r.name] = m
		for key, all := range shared {
			parts := []any{sharedPart(section, key)}
			if key == metricsKey && cfg.Conventions == emit.ConventionsHostmetrics {
				// The set that is emitted speaks for a name both have.
				parts = append(parts, hostmetricsPart(section))
			}
			for _, part := range parts {
				if part == nil {
					continue
				}
				m, err := marshalled(part)
				if err != nil {
					return fmt.Errorf("%s: %w", key, err)
				}
				for name, v := range m {
					all[name] = v
				}
			}
		}
	}
	if m, err := marshalled(&cfg.status.Metrics); err == nil {
		maps.Copy(shared[metricsKey], m)
	} else {
		return fmt.Errorf("%s: %w", metricsKey, err)
	}
	for key, all := range shared {
		out[key] = all
	}
	return conf.Merge(confmap.NewFromStringMap(out))
}

func marshalled(v any) (map[string]any, error) {
	c := confmap.New()
	if err := c.Marshal(v); err != nil {
		return nil, err
	}
	return c.ToStringMap(), nil
}

// Validate reports every problem at once, each naming its full key as the user writes it
// (filesystem.mount_points.exclude[0]).
func (cfg *Config) Validate() error {
	errs := cfg.receiverWide()
	if cfg.RootPath != "" {
		if fi, err := os.Stat(cfg.RootPath); err != nil {
			errs = append(errs, fmt.Errorf("root_path: %q: %w", cfg.RootPath, err))
		} else if !fi.IsDir() {
			errs = append(errs, fmt.Errorf("root_path: %q is not a directory", cfg.RootPath))
		}
	}
	if err := cfg.Conventions.Validate(conventionsKey); err != nil {
		errs = append(errs, err)
	}
	if cfg.MaxPointsPerScrape < 0 {
		errs = append(errs, fmt.Errorf("%s: %d data points: want 0 (no bound) or more", maxPointsKey, cfg.MaxPointsPerScrape))
	}
	for _, r := range registry {
		// A section that takes settings from another (latency: iostat's devices) is checked with them.
		section := cfg.sections[r.name]
		if r.wire != nil {
			section = completed(section, cfg.rootPath(), cfg.Conventions, nil)
			r.wire(section, cfg.sections)
		}
		if err := section.(sectionValidator).Validate(r.name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sectionValidator is a section's Validate: each problem under its full key below the section's.
type sectionValidator interface{ Validate(key string) error }

const (
	conventionsKey = "conventions"
	maxPointsKey   = "max_points_per_scrape"
	// defaultMaxPointsPerScrape: 250 000 points per source keep 5 000 disks (40 points each) or 17 000
	// mounts (14 each); 200 000 mounts (2.8 M points, 2 GB) are cut.
	defaultMaxPointsPerScrape = 250000
)

func (cfg *Config) rootPath() string {
	if cfg.RootPath == "" {
		return "/"
	}
	return cfg.RootPath
}

// The receiver fills these fields of every section by name, the convention each scraper's Config
// follows (TestRegistry checks it): Enabled, RootPath, Conventions (for a source with a
// hostmetrics-compatible set, whose generated config is its Hostmetrics field), Signs (for a source
// that needs the signs board), and the generated metrics and resource attribute configs, directly or
// in a MetricsBuilderConfig.
const (
	enabledField            = "Enabled"
	rootPathField           = "RootPath"
	conventionsField        = "Conventions"
	hostmetricsField        = "Hostmetrics"
	signsField              = "Signs"
	tickField               = "Tick"
	mountsField             = "Mounts"
	metricsField            = "Metrics"
	resourceAttributesField = "ResourceAttributes"
	builderField            = "MetricsBuilderConfig"
)

// field returns a pointer to the section's field name (looked up in a MetricsBuilderConfig as well),
// nil if it has none.
func field(section component.Config, name string) any {
	v := reflect.ValueOf(section).Elem()
	if f := v.FieldByName(name); f.IsValid() {
		return f.Addr().Interface()
	}
	if b := v.FieldByName(builderField); b.IsValid() {
		if f := b.FieldByName(name); f.IsValid() {
			return f.Addr().Interface()
		}
	}
	return nil
}

// sharedPart returns a pointer to the section's part of a shared top-level key, nil if it has none.
func sharedPart(section component.Config, key string) any {
	if key == metricsKey {
		return field(section, metricsField)
	}
	return field(section, resourceAttributesField)
}

// hostmetricsPart returns a pointer to the metrics config of the section's hostmetrics-compatible
// set, nil if it has none.
func hostmetricsPart(section component.Config) any {
	hm := reflect.ValueOf(section).Elem().FieldByName(hostmetricsField)
	if !hm.IsValid() {
		return nil
	}
	return hm.FieldByName(metricsField).Addr().Interface()
}

// settingNames are the keys of a generated metrics or resource attributes config.
func settingNames(part any) map[string]bool {
	t := reflect.TypeOf(part).Elem()
	names := make(map[string]bool, t.NumField())
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("mapstructure"), ","); name != "" && name != "-" {
			names[name] = true
		}
	}
	return names
}

// enabled reports whether the section's source runs.
func enabled(section component.Config) bool { return *field(section, enabledField).(*bool) }

// completed returns a copy of the section with root_path filled in, the conventions if the source
// has a hostmetrics-compatible set, and the signs board if the source needs it.
func completed(section component.Config, root string, conv emit.Conventions, board *signs.Board) component.Config {
	v := reflect.New(reflect.TypeOf(section).Elem())
	v.Elem().Set(reflect.ValueOf(section).Elem())
	c := v.Interface().(component.Config)
	*field(c, rootPathField).(*string) = root
	if p, ok := field(c, conventionsField).(*emit.Conventions); ok {
		*p = conv
	}
	if board != nil {
		*field(c, signsField).(**signs.Board) = board
	}
	return c
}

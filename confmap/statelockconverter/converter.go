// Package statelockconverter is a confmap converter of the otelcol-diskhealth distribution: before any
// component starts, it checks that no other process holds the databases of the file_storage extensions
// the service uses (the persistent sending queues under DISKHEALTH_STATE_DIR). Without it a second
// collector on a state directory in use waits file_storage's `timeout` (1 s) and fails with bbolt's bare
// "timeout"; with it, that collector fails saying the directory is locked, by which process, and what to
// do. It reads the configuration and never changes it; it creates and writes no file.
//
// The check is Linux code (probe_linux.go); elsewhere the converter does nothing.
package statelockconverter // import "github.com/diskhealth/diskhealth/confmap/statelockconverter"

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/zap"
)

// storageType is contrib's file_storage extension.
var storageType = component.MustNewType("file_storage")

// file_storage's defaults (contrib extension/storage/filestorage v0.165.1, factory.go): the directory
// everywhere but Windows, where the check does not run, and how long bbolt waits for the file lock.
const (
	defaultDirectory = "/var/lib/otelcol/file_storage"
	defaultTimeout   = time.Second
)

// maxEntries bounds the directory entries one check reads, so that a directory holding far more than
// queue databases cannot slow the start noticeably: a database name costs an open, an fstat, a flock and
// a close, about 10 µs (TestManyFiles), so the bound is about 0.2 s.
const maxEntries = 20_000

// NewFactory returns the converter's factory, for ocb's `converters:` section.
func NewFactory() confmap.ConverterFactory {
	return confmap.NewConverterFactory(func(set confmap.ConverterSettings) confmap.Converter {
		logger := set.Logger
		if logger == nil {
			logger = zap.NewNop()
		}
		return &converter{logger: logger, args: os.Args, self: os.Getpid(), maxEntries: maxEntries}
	})
}

type converter struct {
	logger *zap.Logger
	// args are the process's arguments: a subcommand (validate, print-config, components) opens no
	// state directory, so there is nothing to check.
	args []string
	// self is this process: a lock it holds itself is its own file_storage's, seen when the collector
	// resolves its configuration again while running (a partial reload).
	self       int
	maxEntries int
}

// target is one file_storage extension the service uses.
type target struct {
	id        component.ID
	directory string
	timeout   time.Duration
}

// Convert checks every target; the configuration is left as it is.
func (c *converter) Convert(ctx context.Context, conf *confmap.Conf) error {
	if subcommand(c.args) {
		return nil
	}
	var errs []error
	for _, t := range targets(conf) {
		// timeout 0 asks bbolt to wait for the lock as long as it takes (a hand-over from a collector
		// that is still stopping): the user chose to wait, so there is nothing to refuse.
		if t.timeout == 0 {
			continue
		}
		errs = append(errs, c.check(ctx, t))
	}
	return errors.Join(errs...)
}

// subcommand: the collector's root command takes no positional argument, so a first argument that is
// not a flag is a subcommand.
func subcommand(args []string) bool {
	return len(args) > 1 && !strings.HasPrefix(args[1], "-")
}

// targets lists the file_storage extensions named in service.extensions, with their directory and
// timeout as file_storage will read them. What file_storage or the collector will refuse (a malformed
// ID, a directory that is not a string) is left to them: their errors say it better.
func targets(conf *confmap.Conf) []target {
	var svc struct {
		Extensions []component.ID `mapstructure:"extensions"`
	}
	sub, err := conf.Sub("service")
	if err != nil || sub.Unmarshal(&svc, confmap.WithIgnoreUnused()) != nil {
		return nil
	}
	exts, err := conf.Sub("extensions")
	if err != nil {
		return nil
	}
	// The section's keys may spell an ID with spaces ("file_storage / a"), as the collector allows.
	keys := map[component.ID]string{}
	for key := range exts.ToStringMap() {
		var id component.ID
		if id.UnmarshalText([]byte(key)) == nil {
			keys[id] = key
		}
	}
	var out []target
	for _, id := range svc.Extensions {
		key, ok := keys[id]
		// A key holding the path delimiter cannot be addressed by Sub; the collector refuses such a
		// name anyway.
		if id.Type() != storageType || !ok || strings.Contains(key, confmap.KeyDelimiter) {
			continue
		}
		cfg := struct {
			Directory string        `mapstructure:"directory"`
			Timeout   time.Duration `mapstructure:"timeout"`
		}{Directory: defaultDirectory, Timeout: defaultTimeout}
		sub, err := exts.Sub(key)
		if err != nil || sub.Unmarshal(&cfg, confmap.WithIgnoreUnused()) != nil || cfg.Directory == "" {
			continue
		}
		out = append(out, target{id: id, directory: cfg.Directory, timeout: cfg.Timeout})
	}
	return out
}

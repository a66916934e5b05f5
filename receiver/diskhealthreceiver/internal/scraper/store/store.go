// Package store finds the storage extension a source's storage key names and keeps its client in the
// background (Background), the one way every source that keeps state across restarts does it.
package store // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/store"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// Start returns the Background client named name of the storage extension ext names, for the source
// owner (nil, nil: none configured); key is the config key that named it (smart.storage), for the
// error; what names what is kept, for its WARN. A name that is no storage extension is a
// configuration mistake, said at start; the client itself is opened in the background.
func Start(host component.Host, key string, ext *component.ID, owner component.ID, name string, logger *zap.Logger, what string) (*Background, error) {
	se, err := extension(host, key, ext)
	if se == nil {
		return nil, err
	}
	return NewBackground(logger, what, func(ctx context.Context) (storage.Client, error) {
		return se.GetClient(ctx, component.KindReceiver, owner, name)
	}), nil
}

// extension returns the storage extension ext names (nil: none configured, nil extension); key is the
// config key that named it (smart.storage), for the error. A name that is no storage extension is a
// configuration mistake, said at start.
func extension(host component.Host, key string, ext *component.ID) (storage.Extension, error) {
	if ext == nil {
		return nil, nil
	}
	c, ok := host.GetExtensions()[*ext]
	if !ok {
		return nil, fmt.Errorf("%s: no extension %s is configured", key, ext)
	}
	se, ok := c.(storage.Extension)
	if !ok {
		return nil, fmt.Errorf("%s: extension %s is not a storage extension", key, ext)
	}
	return se, nil
}

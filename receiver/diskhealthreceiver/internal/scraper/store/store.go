// Package store opens the client of the storage extension a source's storage key names, the one way
// every source that keeps state across restarts does it.
package store // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/store"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// Extension returns the storage extension ext names (nil: none configured, nil extension); key is the
// config key that named it (smart.storage), for the error. A name that is no storage extension is a
// configuration mistake, said at start.
func Extension(host component.Host, key string, ext *component.ID) (storage.Extension, error) {
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

// Open returns the client named name of extension ext (nil: none configured, nil client) for the
// source owner; key is the config key that named it (smart.storage), for the error.
func Open(ctx context.Context, host component.Host, key string, ext *component.ID, owner component.ID, name string) (storage.Client, error) {
	se, err := Extension(host, key, ext)
	if se == nil {
		return nil, err
	}
	client, err := se.GetClient(ctx, component.KindReceiver, owner, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return client, nil
}

package testkit

import (
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
)

// FileStorage starts contrib's file_storage extension (the one the distribution ships) on dir, as a
// collector with `file_storage: {directory: dir}` does.
func FileStorage(t *testing.T, dir string) extension.Extension {
	t.Helper()
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	cfg.Compaction.Directory = dir
	require.NoError(t, cfg.Validate())
	ext, err := f.Create(t.Context(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(t.Context(), componenttest.NewNopHost()))
	return ext
}

// StorageHost is a host whose extensions are exts, as a collector hands them to its components.
type StorageHost map[component.ID]component.Component

// GetExtensions returns the host's extensions.
func (h StorageHost) GetExtensions() map[component.ID]component.Component { return h }

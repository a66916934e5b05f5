package statelockconverter

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
)

// conf parses a YAML configuration as the collector's providers hand it over.
func conf(t *testing.T, yaml string) *confmap.Conf {
	t.Helper()
	r, err := confmap.NewRetrievedFromYAML([]byte(yaml))
	require.NoError(t, err)
	c, err := r.AsConf()
	require.NoError(t, err)
	return c
}

func TestTargets(t *testing.T) {
	id := func(s string) component.ID {
		var out component.ID
		require.NoError(t, out.UnmarshalText([]byte(s)))
		return out
	}
	for _, tc := range []struct {
		name, yaml string
		want       []target
	}{{
		name: "the shipped shape",
		yaml: `
extensions:
  file_storage:
    directory: /var/lib/otelcol-diskhealth
    create_directory: true
service:
  extensions: [file_storage]
`,
		want: []target{{id("file_storage"), "/var/lib/otelcol-diskhealth", time.Second}},
	}, {
		name: "named instances, each with its own directory and timeout",
		yaml: `
extensions:
  file_storage/a:
    directory: /a
    timeout: 3s
  file_storage/b:
    directory: /b
  health_check:
service:
  extensions: [health_check, file_storage/b, file_storage/a]
`,
		want: []target{{id("file_storage/b"), "/b", time.Second}, {id("file_storage/a"), "/a", 3 * time.Second}},
	}, {
		name: "configured but not in service.extensions: file_storage never opens it",
		yaml: `
extensions:
  file_storage:
    directory: /used
  file_storage/spare:
    directory: /spare
service:
  extensions: [file_storage]
`,
		want: []target{{id("file_storage"), "/used", time.Second}},
	}, {
		name: "no directory key: contrib's default directory",
		yaml: `
extensions:
  file_storage:
  file_storage/x:
    timeout: 2s
service:
  extensions: [file_storage, file_storage/x]
`,
		want: []target{{id("file_storage"), defaultDirectory, time.Second}, {id("file_storage/x"), defaultDirectory, 2 * time.Second}},
	}, {
		name: "spaces in the ID, as the collector allows",
		yaml: `
extensions:
  "file_storage / q":
    directory: /q
service:
  extensions: ["file_storage/q"]
`,
		want: []target{{id("file_storage/q"), "/q", time.Second}},
	}, {
		name: "timeout 0 is kept: the converter then leaves the wait to bbolt",
		yaml: `
extensions:
  file_storage:
    directory: /d
    timeout: 0s
service:
  extensions: [file_storage]
`,
		want: []target{{id("file_storage"), "/d", 0}},
	}, {
		name: "no service extensions",
		yaml: `
extensions:
  file_storage:
    directory: /d
service:
  pipelines: {}
`,
	}, {
		name: "listed but not configured: the collector refuses that itself",
		yaml: `
service:
  extensions: [file_storage]
`,
	}, {
		name: "what file_storage refuses is left to it",
		yaml: `
extensions:
  file_storage:
    directory: [not, a, string]
  file_storage/t:
    timeout: soon
  file_storage/e:
    directory: ""
service:
  extensions: [file_storage, file_storage/t, file_storage/e]
`,
	}, {
		name: "a malformed service list is left to the collector",
		yaml: `
extensions:
  file_storage:
service:
  extensions: file_storage
`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, targets(conf(t, tc.yaml)))
		})
	}
}

// testProvider serves the main configuration (scheme "test") and ${env:NAME} as the collector's env
// provider does (the value parsed as YAML, its text kept for string fields; NAME:-default).
type testProvider struct {
	scheme string
	main   string
}

func (p testProvider) Retrieve(_ context.Context, uri string, _ confmap.WatcherFunc) (*confmap.Retrieved, error) {
	if p.scheme == "env" {
		name, def, _ := strings.Cut(strings.TrimPrefix(uri, "env:"), ":-")
		if v, ok := os.LookupEnv(name); ok {
			def = v
		}
		return confmap.NewRetrievedFromYAML([]byte(def))
	}
	return confmap.NewRetrievedFromYAML([]byte(p.main))
}

func (p testProvider) Scheme() string               { return p.scheme }
func (testProvider) Shutdown(context.Context) error { return nil }

// TestConverterSeesExpandedConfig: the resolver runs the converter after ${env:...} is expanded, so the
// directory is the state directory the user chose; a value that reads as a number stays its text.
func TestConverterSeesExpandedConfig(t *testing.T) {
	t.Setenv("DISKHEALTH_STATE_DIR", "/srv/state")
	t.Setenv("QUEUE_TIMEOUT", "250ms")
	t.Setenv("NUMERIC_DIR", "0755")
	main := `
extensions:
  file_storage:
    directory: ${env:DISKHEALTH_STATE_DIR:-/var/lib/otelcol-diskhealth}
    timeout: ${env:QUEUE_TIMEOUT}
  file_storage/n:
    directory: ${env:NUMERIC_DIR}
service:
  extensions: [file_storage, file_storage/n]
`
	var seen []target
	r, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs: []string{"test:main"},
		ProviderFactories: []confmap.ProviderFactory{
			confmap.NewProviderFactory(func(confmap.ProviderSettings) confmap.Provider { return testProvider{scheme: "test", main: main} }),
			confmap.NewProviderFactory(func(confmap.ProviderSettings) confmap.Provider { return testProvider{scheme: "env"} }),
		},
		ConverterFactories: []confmap.ConverterFactory{confmap.NewConverterFactory(func(confmap.ConverterSettings) confmap.Converter {
			return converterFunc(func(_ context.Context, c *confmap.Conf) error {
				seen = targets(c)
				return nil
			})
		})},
	})
	require.NoError(t, err)
	_, err = r.Resolve(context.Background())
	require.NoError(t, err)
	require.Len(t, seen, 2)
	assert.Equal(t, "/srv/state", seen[0].directory)
	assert.Equal(t, 250*time.Millisecond, seen[0].timeout)
	assert.Equal(t, "0755", seen[1].directory)
}

type converterFunc func(context.Context, *confmap.Conf) error

func (f converterFunc) Convert(ctx context.Context, c *confmap.Conf) error { return f(ctx, c) }

func TestSubcommand(t *testing.T) {
	assert.False(t, subcommand([]string{"otelcol-diskhealth"}))
	assert.False(t, subcommand([]string{"otelcol-diskhealth", "--config", "c.yaml"}))
	assert.False(t, subcommand([]string{"otelcol-diskhealth", "--config=c.yaml", "validate"}), "only the first argument names a subcommand")
	assert.True(t, subcommand([]string{"otelcol-diskhealth", "validate", "--config=c.yaml"}))
	assert.True(t, subcommand([]string{"otelcol-diskhealth", "print-config", "--config=c.yaml"}))
}

// TestFactory: what ocb's generated main calls, with or without a logger.
func TestFactory(t *testing.T) {
	c, ok := NewFactory().Create(confmap.ConverterSettings{}).(*converter)
	require.True(t, ok)
	assert.NotNil(t, c.logger)
	assert.Equal(t, os.Getpid(), c.self)
	assert.Equal(t, maxEntries, c.maxEntries)
	assert.Equal(t, os.Args, c.args)
}

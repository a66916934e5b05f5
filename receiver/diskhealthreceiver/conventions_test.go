package diskhealthreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/filesystemscraper"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/iostatscraper"
)

// TestConfigConventions: conventions is semconv unless set; hostmetrics reaches the sections that have
// a hostmetrics-compatible set (iostat, filesystem), and the metrics: key switches that set's metrics
// as it does the sources' own; any other value is refused naming the key and the two values.
func TestConfigConventions(t *testing.T) {
	def := createDefaultConfig().(*Config)
	assert.Equal(t, emit.ConventionsSemconv, def.Conventions)
	for _, s := range def.sources(nil, nil, nil, nil) {
		if p, ok := field(s.cfg, conventionsField).(*emit.Conventions); ok {
			assert.Equal(t, emit.ConventionsSemconv, *p, s.name)
		}
	}

	cfg := loadConfig(t, "hostmetrics")
	require.NoError(t, confmap.Validate(cfg))
	reached := 0
	for _, s := range cfg.sources(nil, nil, nil, nil) {
		p, ok := field(s.cfg, conventionsField).(*emit.Conventions)
		if !ok {
			continue
		}
		reached++
		assert.Equal(t, emit.ConventionsHostmetrics, *p, s.name)
		switch c := s.cfg.(type) {
		case *iostatscraper.Config:
			assert.False(t, c.Hostmetrics.Metrics.SystemDiskMerged.Enabled, "metrics: switches the hostmetrics set's metric")
			assert.False(t, c.MetricsBuilderConfig.Metrics.SystemDiskMerged.Enabled, "and the source's own of the name")
			assert.True(t, c.Hostmetrics.Metrics.SystemDiskIo.Enabled)
		case *filesystemscraper.Config:
			assert.True(t, c.Hostmetrics.Metrics.SystemFilesystemUtilization.Enabled, "optional in hostmetrics, switched on")
		default:
			t.Errorf("%s has conventions but no test here", s.name)
		}
	}
	assert.Equal(t, 2, reached, "iostat and filesystem have a hostmetrics-compatible set")

	// Marshal writes what Unmarshal reads, the set that is emitted speaking for a name both have.
	conf := confmap.New()
	require.NoError(t, cfg.Marshal(conf))
	back := createDefaultConfig().(*Config)
	require.NoError(t, conf.Unmarshal(back))
	assert.Equal(t, emit.ConventionsHostmetrics, back.Conventions)
	for _, r := range registry {
		if part := hostmetricsPart(cfg.sections[r.name]); part != nil {
			want, err := marshalled(part)
			require.NoError(t, err)
			got, err := marshalled(hostmetricsPart(back.sections[r.name]))
			require.NoError(t, err)
			assert.Equal(t, want, got, r.name)
		}
	}

	err := confmap.Validate(loadConfig(t, "bad_conventions"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `conventions: "otel": want semconv`)
	assert.Contains(t, err.Error(), "or hostmetrics")
}

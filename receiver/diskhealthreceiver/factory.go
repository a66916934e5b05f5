package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"context"
	"runtime"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
)

// NewFactory creates the disk_health receiver factory.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(
		metadata.Type,
		createDefaultConfig,
		receiver.WithMetrics(createMetricsReceiver, metadata.MetricsStability),
		receiver.WithLogs(createLogsReceiver, metadata.LogsStability))
}

func createDefaultConfig() component.Config {
	cc := scraperhelper.NewDefaultControllerConfig()
	cc.CollectionInterval = 30 * time.Second
	return &Config{ControllerConfig: cc, Conventions: emit.ConventionsSemconv, MaxPointsPerScrape: defaultMaxPointsPerScrape, sections: defaultSections(),
		status: metadata.NewDefaultMetricsBuilderConfig()}
}

func createMetricsReceiver(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Metrics) (receiver.Metrics, error) {
	if err := platformError(runtime.GOOS); err != nil {
		return nil, err
	}
	r := receivers.get(set, cfg.(*Config))
	r.metrics = next
	return r, nil
}

// createLogsReceiver: the logs pipeline gets the SMART health events. It shares the receiver (and so
// the disk reads) with a metrics pipeline of the same configuration.
func createLogsReceiver(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	if err := platformError(runtime.GOOS); err != nil {
		return nil, err
	}
	r := receivers.get(set, cfg.(*Config))
	r.logs = next
	return r, nil
}

package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"context"
	"errors"
	"runtime"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper/scraperhelper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/diskstats"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
)

var errNonLinux = errors.New("the disk_health receiver reads Linux /proc and /sys and runs on Linux only")

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
	classes := make([]string, len(diskstats.DefaultClasses))
	for i, c := range diskstats.DefaultClasses {
		classes[i] = string(c)
	}
	return &Config{
		ControllerConfig:     cc,
		MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig(),
		IOStat:               IOStatConfig{Enabled: true, DeviceClasses: classes},
		SMART:                SMARTConfig{Enabled: true, Interval: 5 * time.Minute, Standby: "standby", Timeout: 10 * time.Second},
		Filesystem: FilesystemConfig{
			Enabled:                 true,
			MountPoints:             MatchConfig{Exclude: fsusage.DefaultExcludeMountPoints()},
			Duplicates:              "drop",
			StatfsTimeout:           fsusage.DefaultTimeout,
			RemoteStatfsTimeout:     fsusage.DefaultRemoteTimeout,
			ForecastWindow:          6 * time.Hour,
			MountTableRereadScrapes: fsusage.DefaultRereadEvery,
		},
		Pressure: PressureConfig{Enabled: true},
		Cgroups:  CgroupsConfig{Enabled: true, TopN: 10, MaxDepth: 5},
	}
}

func createMetricsReceiver(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Metrics) (receiver.Metrics, error) {
	if runtime.GOOS != "linux" {
		return nil, errNonLinux
	}
	r := receivers.get(set, cfg.(*Config))
	r.metrics = next
	return r, nil
}

// createLogsReceiver: the logs pipeline gets the SMART health events. It shares the receiver (and so
// the disk reads) with a metrics pipeline of the same configuration.
func createLogsReceiver(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	if runtime.GOOS != "linux" {
		return nil, errNonLinux
	}
	r := receivers.get(set, cfg.(*Config))
	r.logs = next
	return r, nil
}

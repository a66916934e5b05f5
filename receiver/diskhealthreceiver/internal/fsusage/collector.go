package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

// Config configures a Collector: the mount table, the statfs prober and
// the forecaster together.
type Config struct {
	RootPath      string
	Filter        *Filter // nil: DefaultFilterConfig
	Dedupe        DedupeMode
	RereadEvery   int
	OnTableReload func(TableReload)
	Prober        ProberConfig
	Forecast      ForecastConfig
}

package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"fmt"
	"strings"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
)

// receiverWide are the checks no one source can make: the interval the sources share, and that some
// source is on (a receiver with every source off would run and say nothing).
func (cfg *Config) receiverWide() []error {
	var errs []error
	if err := emit.CheckInterval("collection_interval", cfg.ControllerConfig.CollectionInterval); err != nil {
		errs = append(errs, err)
	}
	var names []string
	for _, src := range cfg.sources(nil, nil, nil, nil) {
		if src.enabled {
			return errs
		}
		names = append(names, src.name+".enabled")
	}
	return append(errs, fmt.Errorf("every source is off (%s: all false): the receiver would collect nothing; enable one, or remove the receiver",
		strings.Join(names, ", ")))
}

package stackscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/nvmesubsys"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
)

// Event names of the NVMe path records: a namespace's live paths fell below its best, or are back at it.
const (
	EventNVMePathsLost     = "disk_health.nvme.paths_lost"
	EventNVMePathsRestored = "disk_health.nvme.paths_restored"
)

// scrapeNVMe records every NVMe subsystem up to the cap. The error is the part's: the listing's, or every
// subsystem's own (a subsystem that could not be read is not recorded, and keeps its namespaces' best).
func (s *stackScraper) scrapeNVMe(ctx context.Context, sc *scrape) error {
	results, omitted, err := s.r.nvme.Read(ctx)
	if err != nil {
		return err
	}
	s.mb.RecordDiskHealthNvmeSubsystemsOmittedDataPoint(sc.ts, int64(omitted))
	if omitted != s.nvmeOmitted {
		s.logger.Warn("NVMe subsystems past stack.nvme_max_subsystems are not reported (the highest-numbered)",
			zap.Int("omitted", omitted), zap.Int("reported", len(results)))
		s.nvmeOmitted = omitted
	}
	kept := map[string]bool{}
	var errs []error
	for i := range results {
		r := &results[i]
		kept[r.Subsystem.Name] = true
		if r.Err != nil {
			errs = append(errs, r.Err)
			continue
		}
		errs = append(errs, s.recordSubsystem(sc, &r.Subsystem))
	}
	s.nvme.Keep(kept)
	return errors.Join(errs...)
}

// recordSubsystem records a subsystem's paths and its namespaces' live paths, and buffers an event per
// namespace whose live paths dropped or recovered. A namespace whose block device has no identity in
// sysfs is left out, with an error naming it.
func (s *stackScraper) recordSubsystem(sc *scrape, sub *nvmesubsys.Subsystem) error {
	o := s.nvme.Observe(sub)
	id, name := sub.NQN, sub.Name
	keys := slices.SortedFunc(maps.Keys(o.Counts), func(a, b nvmesubsys.PathKey) int {
		return cmp.Or(cmp.Compare(a.State, b.State), cmp.Compare(a.ANA, b.ANA), cmp.Compare(a.Transport, b.Transport))
	})
	for _, k := range keys {
		s.mb.RecordDiskHealthNvmeSubsystemPathsDataPoint(sc.ts, int64(o.Counts[k]), id, name, metadata.AttributeHwTypeDiskController,
			metadata.MapAttributeDiskHealthNvmeControllerState[k.State.String()], metadata.MapAttributeDiskHealthNvmeAnaState[k.ANA.String()],
			metadata.MapAttributeDiskHealthNvmeTransport[k.Transport.String()])
	}
	pd, parent := metadata.AttributeHwTypePhysicalDisk, metadata.WithHwParentMetricAttribute(id)
	nsIDs := map[string]string{}
	var missing []string
	for _, ns := range o.Namespaces {
		// The namespace's block device's hw.id: the one its I/O and SMART series carry.
		nsID, _ := s.ids.of(ns.Name)
		if nsID == "" {
			missing = append(missing, ns.Name)
			continue
		}
		nsIDs[ns.Name] = nsID
		s.mb.RecordDiskHealthNvmeNamespacePathsLiveDataPoint(sc.ts, int64(ns.Live), nsID, ns.Name, pd, parent)
		s.mb.RecordDiskHealthNvmeNamespacePathsOptimizedDataPoint(sc.ts, int64(ns.Optimized), nsID, ns.Name, pd, parent)
		s.mb.RecordDiskHealthNvmeNamespacePathsLiveMaxDataPoint(sc.ts, int64(ns.Best), nsID, ns.Name, pd, parent)
	}
	for _, c := range o.Changes {
		if nsID := nsIDs[c.Namespace]; nsID != "" {
			s.nvmeEvent(sc, sub, nsID, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("nvme subsystem %s: namespace(s) %s: no block device in sysfs to take an identity from", name, strings.Join(missing, ", "))
	}
	return nil
}

// nvmeEvent buffers one namespace's drop or recovery, naming each path that went or came back.
func (s *stackScraper) nvmeEvent(sc *scrape, sub *nvmesubsys.Subsystem, nsID string, c nvmesubsys.Change) {
	res := pcommon.NewResource()
	a := res.Attributes()
	a.PutStr("hw.id", nsID)
	a.PutStr("hw.name", c.Namespace)
	a.PutStr("hw.type", metadata.AttributeHwTypePhysicalDisk.String())
	a.PutStr("hw.parent", sub.NQN)
	paths := make([]string, len(c.Paths))
	for i, p := range c.Paths {
		paths[i] = p.String()
	}
	name, sev := EventNVMePathsLost, plog.SeverityNumberWarn
	body := fmt.Sprintf("%s (%s): %d of %d paths live; lost %s", c.Namespace, sub.Name, c.Live, c.Best, strings.Join(paths, ", "))
	switch {
	case c.Kind == nvmesubsys.Recovered:
		name, sev = EventNVMePathsRestored, plog.SeverityNumberInfo
		body = fmt.Sprintf("%s (%s): %d of %d paths live again; back %s", c.Namespace, sub.Name, c.Live, c.Best, strings.Join(paths, ", "))
	case c.Live == 0:
		sev = plog.SeverityNumberError
	}
	lr := s.events.Record(res, sc.at, s.now(), name, sev, body)
	attrs := lr.Attributes()
	ctrl := attrs.PutEmptySlice("disk_health.nvme.controller.name")
	transport := attrs.PutEmptySlice("disk_health.nvme.transport")
	address := attrs.PutEmptySlice("disk_health.nvme.controller.address")
	for _, p := range c.Paths {
		ctrl.AppendEmpty().SetStr(p.Controller)
		transport.AppendEmpty().SetStr(p.Transport.String())
		address.AppendEmpty().SetStr(p.Address)
	}
}

package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/scraper"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
)

// statusField is the section field the receiver fills with the source's *emit.Status.
const statusField = "Status"

// statusType names the controller that emits disk_health.source.status.
var statusType = component.MustNewType("source_status")

// sourceStatus is one source as disk_health.source.status reports it: a source disabled in the config is
// off/not_configured; a running one is what its Status says (its start, its parts, its last scrape).
type sourceStatus struct {
	name    string
	running bool
	status  *emit.Status
}

// sourceCondition is one series of disk_health.source.status: a source's state and its reason.
type sourceCondition struct {
	state  emit.SourceState
	reason emit.Reason
}

// statusScraper emits disk_health.source.status: one series at 1 per source of the registry, each tick
// of the receiver's collection_interval, so the metric says which sources deliver whatever their own
// intervals; at the tick a source's (state, reason) changes, the one it left is sent once at 0, so an
// alert on a degraded source resolves at the change instead of when the old series goes stale.
func statusScraper(set receiver.Settings, mbc metadata.MetricsBuilderConfig, sources []sourceStatus) scraper.Metrics {
	mb := metadata.NewMetricsBuilder(mbc, set)
	states := emit.NewStates[string, sourceCondition]()
	sc, _ := scraper.NewMetrics(func(context.Context) (pmetric.Metrics, error) {
		ts := pcommon.NewTimestampFromTime(time.Now())
		for _, s := range sources {
			cur := sourceCondition{emit.StateOff, emit.ReasonNotConfigured}
			if s.running {
				cur.state, cur.reason = s.status.Get()
			}
			states.Emit(s.name, func(c sourceCondition, v int64) {
				mb.RecordDiskHealthSourceStatusDataPoint(ts, v, s.name,
					metadata.MapAttributeDiskHealthSourceReason[string(c.reason)], metadata.MapAttributeDiskHealthSourceState[c.state.String()])
			}, cur)
		}
		states.EndScrape()
		return mb.Emit(), nil
	})
	return sc
}

// scrapePart is the part of a source's Status its scrapes' problems set: a scrape that reports a
// problem leaves the source degraded until a scrape without one.
const scrapePart = "scrape"

// recordScrape sets the source's scrape part from the error its last scrape returned.
func recordScrape(st *emit.Status, err error) {
	if err == nil {
		st.Clear(scrapePart)
		return
	}
	st.Set(scrapePart, emit.StateDegraded, emit.Classify(err, false))
}

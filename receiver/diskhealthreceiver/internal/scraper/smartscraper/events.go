package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	conventions "go.opentelemetry.io/otel/semconv/v1.38.0"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
)

// Event names of the health log records.
const (
	eventStateChange = "disk_health.state_change"
	eventNewSign     = "disk_health.new_sign"
)

func (s *smartScraper) appendEvents(out []string, res *device.Result, resource pcommon.Resource, v health.Verdict) []string {
	for _, e := range v.Events {
		lr := s.events.appendRecord(resource)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(res.Time))
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(s.now()))
		sev, text := plog.SeverityNumberWarn, "WARN"
		if e.New < e.Old && e.Kind == health.StateChanged {
			sev, text = plog.SeverityNumberInfo, "INFO"
		}
		if e.New == health.Failed {
			sev, text = plog.SeverityNumberError, "ERROR"
		}
		lr.SetSeverityNumber(sev)
		lr.SetSeverityText(text)
		lr.Body().SetStr(diskLabel(res) + ": " + e.Text)
		a := lr.Attributes()
		name := eventStateChange
		if e.Kind == health.NewSign {
			name = eventNewSign
			a.PutStr("disk_health.rule", string(e.Rule))
		}
		a.PutStr("event.name", name)
		a.PutStr("hw.state", e.New.String())
		a.PutStr("disk_health.previous_state", e.Old.String())
		out = append(out, lr.Body().Str())
	}
	return out
}

func (s *smartScraper) sendEvents(ctx context.Context, events []string) error {
	ld := s.events.take()
	for _, e := range events {
		s.logger.Info("disk health event", zap.String("event", e))
	}
	if s.sink == nil {
		return nil
	}
	if err := s.sink.ConsumeLogs(ctx, ld); err != nil {
		return fmt.Errorf("sending %d disk health events: %w", len(events), err)
	}
	return nil
}

// diskLabel names a disk for people: "sda (ST4000DM004-2CV104, serial ZFN0TEST)".
func diskLabel(res *device.Result) string {
	model, serial, _ := identityStrings(res.Disk, res.Snapshot)
	var parts []string
	if model != "" {
		parts = append(parts, model)
	}
	if serial != "" {
		parts = append(parts, "serial "+serial)
	}
	if len(parts) == 0 {
		return res.Disk.Name
	}
	return res.Disk.Name + " (" + strings.Join(parts, ", ") + ")"
}

// eventBuffer collects a scrape's health events, one resource (the disk's) per record, under the
// receiver's instrumentation scope and schema, as the metrics are.
type eventBuffer struct {
	version string
	logs    plog.Logs
}

func newEventBuffer(version string) *eventBuffer {
	return &eventBuffer{version: version, logs: plog.NewLogs()}
}

func (b *eventBuffer) appendRecord(resource pcommon.Resource) plog.LogRecord {
	rl := b.logs.ResourceLogs().AppendEmpty()
	rl.SetSchemaUrl(conventions.SchemaURL)
	resource.CopyTo(rl.Resource())
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(metadata.ScopeName)
	sl.Scope().SetVersion(b.version)
	return sl.LogRecords().AppendEmpty()
}

// take returns the buffered events and starts a new buffer.
func (b *eventBuffer) take() plog.Logs {
	ld := b.logs
	b.logs = plog.NewLogs()
	return ld
}

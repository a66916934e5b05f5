package emit

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	conventions "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/semconv/v1.44.0"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
)

// Event names of the health log records every source with a verdict sends (SMART for physical disks,
// stack for md arrays, thin pools and multipath maps).
const (
	EventStateChange = "disk_health.state_change"
	EventNewSign     = "disk_health.new_sign"
)

// Events collects a scrape's health events, one resource (the component's) per record, under the
// receiver's instrumentation scope and schema, as the metrics are.
type Events struct {
	scope, version string
	logs           plog.Logs
	bodies         []string
}

// NewEvents returns an empty buffer whose records carry the scope scopeName at version.
func NewEvents(scopeName, version string) *Events {
	return &Events{scope: scopeName, version: version, logs: plog.NewLogs()}
}

// Append adds one record for e: body "<label>: <text>", severity WARN (INFO when the state improves,
// ERROR when it becomes failed), event name (Record), attributes hw.state, disk_health.previous_state and, for a
// new sign, disk_health.rule. at is when the values were read, observed when the record is made. The
// record is returned for a source to add its own attributes.
func (b *Events) Append(resource pcommon.Resource, at, observed time.Time, label string, e health.Event) plog.LogRecord {
	sev := plog.SeverityNumberWarn
	if e.New < e.Old && e.Kind == health.StateChanged {
		sev = plog.SeverityNumberInfo
	}
	if e.New == health.Failed {
		sev = plog.SeverityNumberError
	}
	name := EventStateChange
	if e.Kind == health.NewSign {
		name = EventNewSign
	}
	lr := b.Record(resource, at, observed, name, sev, label+": "+e.Text)
	a := lr.Attributes()
	if e.Kind == health.NewSign {
		a.PutStr("disk_health.rule", string(e.Rule))
	}
	a.PutStr("hw.state", e.New.String())
	a.PutStr("disk_health.previous_state", e.Old.String())
	return lr
}

// Record adds one record named name (the LogRecord's EventName) with severity sev (INFO, WARN or ERROR)
// and body, for what a source reports that is no disk's verdict (a mount's client state, an entry of a
// drive's own error log). at is when the values were read, observed when the record is made. The
// record is returned for the source to add its attributes.
func (b *Events) Record(resource pcommon.Resource, at, observed time.Time, name string, sev plog.SeverityNumber, body string) plog.LogRecord {
	rl := b.logs.ResourceLogs().AppendEmpty()
	rl.SetSchemaUrl(conventions.SchemaURL)
	resource.CopyTo(rl.Resource())
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(b.scope)
	sl.Scope().SetVersion(b.version)
	lr := sl.LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(observed))
	lr.SetSeverityNumber(sev)
	lr.SetSeverityText(severityText(sev))
	lr.Body().SetStr(body)
	// semconv v1.44: an event's name is the LogRecord's EventName; the event.name attribute is deprecated
	// and not set.
	lr.SetEventName(name)
	b.bodies = append(b.bodies, body)
	return lr
}

func severityText(sev plog.SeverityNumber) string {
	switch sev {
	case plog.SeverityNumberInfo:
		return "INFO"
	case plog.SeverityNumberError:
		return "ERROR"
	}
	return "WARN"
}

// Len is the number of buffered events.
func (b *Events) Len() int { return len(b.bodies) }

// Send logs every buffered event at INFO and sends them to sink (nil: logged only), then starts a new
// buffer. Nothing buffered: nothing is done.
func (b *Events) Send(ctx context.Context, logger *zap.Logger, sink consumer.Logs) error {
	if len(b.bodies) == 0 {
		return nil
	}
	ld, bodies := b.logs, b.bodies
	b.logs, b.bodies = plog.NewLogs(), nil
	for _, e := range bodies {
		logger.Info("disk health event", zap.String("event", e))
	}
	if sink == nil {
		return nil
	}
	if err := sink.ConsumeLogs(ctx, ld); err != nil {
		return fmt.Errorf("sending %d disk health events: %w", len(bodies), err)
	}
	return nil
}

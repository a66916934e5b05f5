package emit

import (
	"fmt"

	"go.opentelemetry.io/collector/confmap"
)

// Conventions is the receiver's conventions key: whose names the metrics come out under.
type Conventions string

const (
	// ConventionsSemconv (the default) is the receiver's own names, after the semantic conventions.
	ConventionsSemconv Conventions = "semconv"
	// ConventionsHostmetrics is hostmetricsreceiver's names (and attributes, units and instruments)
	// for the metrics its disk and filesystem scrapers have: each source that has such metrics
	// declares them in its hostmetrics.yaml and emits them in place of its own of the same names.
	ConventionsHostmetrics Conventions = "hostmetrics"
)

// Validate reports a value other than the two, under key.
func (c Conventions) Validate(key string) error {
	switch c {
	case ConventionsSemconv, ConventionsHostmetrics:
		return nil
	}
	return fmt.Errorf("%s: %q: want %s (the default: the semantic conventions' names) or %s (hostmetricsreceiver's names for the metrics its disk and filesystem scrapers have)",
		key, string(c), ConventionsSemconv, ConventionsHostmetrics)
}

// Names are the names of the metrics e writes, in metadata.yaml's order.
func (e *Emitter) Names() []string {
	names := make([]string, len(e.metrics))
	for i := range e.metrics {
		names[i] = e.metrics[i].Name
	}
	return names
}

// Hostmetrics returns the emitter of a source's hostmetrics-compatible set under conventions:
// hostmetrics, nil (E's zero) under the others. It first switches off, in metrics (a pointer to the
// source's generated MetricsConfig), the source's own metrics of the set's names, as a user's
// `enabled: false` would: hostmetrics' metrics replace them, so no series repeats a name. ours names
// the source's own metric of a hostmetrics name where the two differ (hostmetrics name → ours: a
// metric semconv does not define is ours in disk_health.*, hostmetrics keeps it in system.*); that one
// is switched off too.
func Hostmetrics[E interface{ Names() []string }](conv Conventions, metrics any, newEmitter func() E, ours map[string]string) (E, error) {
	var none E
	if conv != ConventionsHostmetrics {
		return none, nil
	}
	e := newEmitter()
	off := map[string]any{}
	for _, n := range e.Names() {
		if o, ok := ours[n]; ok {
			n = o
		}
		off[n] = map[string]any{"enabled": false}
	}
	// A hostmetrics name the source has no metric of has nothing to switch off.
	if err := confmap.NewFromStringMap(off).Unmarshal(metrics, confmap.WithIgnoreUnused()); err != nil {
		return none, err
	}
	return e, nil
}

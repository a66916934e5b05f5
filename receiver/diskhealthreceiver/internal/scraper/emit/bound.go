package emit

import (
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
)

// PointBound caps the data points one scrape of a source hands on, so a host with an absurd number of
// mounts, devices or cgroups cannot flood the pipeline and every backend behind it. Whole resources (a
// device, a mount, a cgroup) are kept in the scrape's order while they fit; the rest of the scrape is
// dropped. A WARN says so when the bound starts to bite, an INFO when it stops. Not safe for concurrent
// use; one per source.
type PointBound struct {
	// Max is the most data points per scrape; 0 means no bound.
	Max int
	// Key is the configuration key, named in the log.
	Key    string
	logger *zap.Logger
	biting bool
}

// NewPointBound returns the bound of one source.
func NewPointBound(logger *zap.Logger, key string, limit int) *PointBound {
	return &PointBound{Max: limit, Key: key, logger: logger}
}

// Apply drops what of md is past the bound and returns md.
func (b *PointBound) Apply(md pmetric.Metrics) pmetric.Metrics {
	if b.Max <= 0 {
		return md
	}
	total := md.DataPointCount()
	if total <= b.Max {
		if b.biting {
			b.biting = false
			b.logger.Info("Data points per scrape are within the bound again.", zap.String("key", b.Key),
				zap.Int("limit", b.Max), zap.Int("points", total))
		}
		return md
	}
	kept, keptResources, dropped := 0, 0, 0
	md.ResourceMetrics().RemoveIf(func(rm pmetric.ResourceMetrics) bool {
		n := resourcePoints(rm)
		if dropped == 0 && kept+n <= b.Max {
			kept += n
			keptResources++
			return false
		}
		dropped++
		return true
	})
	if !b.biting {
		b.biting = true
		b.logger.Warn("A scrape produced more data points than the bound: resources past it are dropped until it fits again; raise the key if this host really has that many devices, mounts or cgroups.",
			zap.String("key", b.Key), zap.Int("limit", b.Max), zap.Int("points", total), zap.Int("kept_points", kept),
			zap.Int("kept_resources", keptResources), zap.Int("dropped_resources", dropped))
	}
	return md
}

func resourcePoints(rm pmetric.ResourceMetrics) int {
	n := 0
	sms := rm.ScopeMetrics()
	for i := range sms.Len() {
		ms := sms.At(i).Metrics()
		for j := range ms.Len() {
			switch m := ms.At(j); m.Type() {
			case pmetric.MetricTypeGauge:
				n += m.Gauge().DataPoints().Len()
			case pmetric.MetricTypeSum:
				n += m.Sum().DataPoints().Len()
			case pmetric.MetricTypeHistogram:
				n += m.Histogram().DataPoints().Len()
			case pmetric.MetricTypeExponentialHistogram:
				n += m.ExponentialHistogram().DataPoints().Len()
			case pmetric.MetricTypeSummary:
				n += m.Summary().DataPoints().Len()
			}
		}
	}
	return n
}

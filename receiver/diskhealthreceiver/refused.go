package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
)

// refusals stands between the sources and the metrics pipeline to say what is lost: data refused
// downstream (memory_limiter, a full sending queue) is dropped by the scraper controller without a log
// line. The first refusal, and each change of its cause, is logged at WARN; the return to accepting at
// INFO with what was refused meanwhile. Never per scrape.
type refusals struct {
	next   consumer.Metrics
	logger *zap.Logger

	mu      sync.Mutex
	cause   string // the refusal's error; "" while downstream accepts
	batches int    // scrapes refused since cause appeared
	points  int    // their data points
}

func (r *refusals) Capabilities() consumer.Capabilities { return r.next.Capabilities() }

func (r *refusals) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	points := md.DataPointCount() // before next, which may take md over
	err := r.next.ConsumeMetrics(ctx, md)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil && r.cause != "":
		r.logger.Info("the metrics pipeline accepts data again",
			zap.Int("refused_scrapes", r.batches), zap.Int("refused_data_points", r.points), zap.String("refused_because", r.cause))
		r.cause, r.batches, r.points = "", 0, 0
	case err != nil && err.Error() != r.cause:
		fields := []zap.Field{zap.Error(err), zap.Int("data_points", points)}
		if r.cause != "" {
			fields = append(fields, zap.Int("refused_scrapes_before", r.batches), zap.Int("refused_data_points_before", r.points),
				zap.String("refused_before_because", r.cause))
		}
		r.logger.Warn("the metrics pipeline refused a scrape: its data is lost (said again only when the cause changes or clears)", fields...)
		r.cause, r.batches, r.points = err.Error(), 1, points
	case err != nil:
		r.batches++
		r.points += points
	}
	return err
}

package nvme

import "time"

// DefaultNearUtilization is the share of a configured limit above which a
// volume is forecast to be throttled soon. A volume's limits are enforced
// per second while a forecast sees the average of a scrape interval
// (minutes): an average of 90 % already has seconds at the cap, and below it
// ordinary load swings would announce an episode every busy hour.
const DefaultNearUtilization = 0.9

// VolumeLimits are a volume's provisioned limits, as the user configured
// them (the D0h log counts time over a limit but never says the limit);
// zero is "not configured".
type VolumeLimits struct {
	IOPS       float64 // operations per second, reads and writes together
	Throughput float64 // bytes per second, reads and writes together
}

// ForecastState is where a volume stands against one of its limits.
type ForecastState uint8

// Forecast states, in rising order.
const (
	// ForecastOK: below the near share, or no limit configured and not throttled.
	ForecastOK ForecastState = iota
	// ForecastNear: at or above the near share of a configured limit and not yet throttled.
	ForecastNear
	// ForecastThrottled: the log counted time over the limit in the interval.
	ForecastThrottled
)

func (s ForecastState) String() string {
	switch s {
	case ForecastOK:
		return "ok"
	case ForecastNear:
		return "near"
	case ForecastThrottled:
		return "throttled"
	}
	return "unknown"
}

// LimitForecast is one limit's forecast over an interval.
type LimitForecast struct {
	// Observed is the rate the volume did: operations or bytes per second.
	Observed float64
	// Utilization is Observed over the configured limit (above 1 when the
	// limit configured is below the real one); valid when Configured.
	Utilization float64
	Configured  bool
	State       ForecastState
}

// VolumeForecast is the forecast of a volume's IOPS and throughput limits.
type VolumeForecast struct {
	IOPS, Throughput LimitForecast
}

// ForecastBetween forecasts a volume's limits over the interval dt between
// two reads: observed IOPS and throughput (reads and writes together), their
// share of limits, and per limit a state: throttled when the volume's
// exceeded-time counter rose (ThrottlingBetween), else near when the share
// is at least near, else ok. ok is false when no rate can be told: no
// interval, layouts that differ, or any counter that went back (the volume
// was detached and attached again; the difference is not a rate).
func ForecastBetween(prev, cur *AmazonStats, dt time.Duration, limits VolumeLimits, near float64) (VolumeForecast, bool) {
	th, ok := ThrottlingBetween(prev, cur, dt)
	if !ok {
		return VolumeForecast{}, false
	}
	ops, ok1 := counterRate(prev.ReadOps, cur.ReadOps, prev.WriteOps, cur.WriteOps, dt)
	bytes, ok2 := counterRate(prev.ReadBytes, cur.ReadBytes, prev.WriteBytes, cur.WriteBytes, dt)
	if !ok1 || !ok2 {
		return VolumeForecast{}, false
	}
	return VolumeForecast{
		IOPS:       limitForecast(ops, limits.IOPS, th.VolumeIOPS, near),
		Throughput: limitForecast(bytes, limits.Throughput, th.VolumeThroughput, near),
	}, true
}

// counterRate is the rate of two counters summed over dt; false when
// either went back.
func counterRate(prevA, curA, prevB, curB uint64, dt time.Duration) (float64, bool) {
	if curA < prevA || curB < prevB {
		return 0, false
	}
	return (float64(curA-prevA) + float64(curB-prevB)) / dt.Seconds(), true
}

func limitForecast(observed, limit, throttled, near float64) LimitForecast {
	f := LimitForecast{Observed: observed, Configured: limit > 0}
	if f.Configured {
		f.Utilization = observed / limit
	}
	switch {
	case throttled > 0:
		f.State = ForecastThrottled
	case f.Configured && f.Utilization >= near:
		f.State = ForecastNear
	}
	return f
}

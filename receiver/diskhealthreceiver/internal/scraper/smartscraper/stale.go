package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import "go.opentelemetry.io/collector/pdata/pmetric" // markStale turns every data point into "no recorded value" (a staleness marker).
func markStale(md pmetric.Metrics) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				var dps pmetric.NumberDataPointSlice
				switch m := ms.At(k); m.Type() {
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				default:
					continue
				}
				for l := range dps.Len() {
					dp := dps.At(l)
					dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
					if dp.ValueType() == pmetric.NumberDataPointValueTypeDouble {
						dp.SetDoubleValue(0)
					} else {
						dp.SetIntValue(0)
					}
				}
			}
		}
	}
}

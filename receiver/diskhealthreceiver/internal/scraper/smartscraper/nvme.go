package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// Event names of what an NVMe drive reports on its own.
const (
	// EventNVMeError is one new entry of a drive's Error Information log.
	EventNVMeError = "disk_health.nvme.error"
	// EventNVMeTelemetry: the drive saved controller-initiated telemetry for its vendor.
	EventNVMeTelemetry = "disk_health.nvme.telemetry_available"
	// EventCloudThrottled: a cloud volume began to be throttled by one of its limits.
	EventCloudThrottled = "disk_health.cloud.throttled"
	// EventCloudThrottleNear: a cloud volume's use of a configured limit reached smart.cloud_near, before
	// any throttling.
	EventCloudThrottleNear = "disk_health.cloud.throttle_near"
)

// cloudLimits are the limits of nvme.Throttling, in its order, with their attribute value.
var cloudLimits = [...]struct {
	attr  metadata.AttributeDiskHealthPhysicalDiskCloudLimit
	share func(nvme.Throttling) float64
	text  string
}{
	{metadata.AttributeDiskHealthPhysicalDiskCloudLimitVolumeIops, func(t nvme.Throttling) float64 { return t.VolumeIOPS }, "the volume's IOPS limit"},
	{metadata.AttributeDiskHealthPhysicalDiskCloudLimitVolumeThroughput, func(t nvme.Throttling) float64 { return t.VolumeThroughput }, "the volume's throughput limit"},
	{metadata.AttributeDiskHealthPhysicalDiskCloudLimitInstanceIops, func(t nvme.Throttling) float64 { return t.InstanceIOPS }, "the instance's IOPS limit"},
	{metadata.AttributeDiskHealthPhysicalDiskCloudLimitInstanceThroughput, func(t nvme.Throttling) float64 { return t.InstanceThroughput }, "the instance's throughput limit"},
}

// nvmeTrack is what the scraper remembers of one NVMe drive's optional logs between reads.
type nvmeTrack struct {
	// errSeen: errHigh holds the highest error count seen. The first read sets it without sending
	// events: the entries then in the log are history, not news, and a restart must not resend them.
	errSeen bool
	errHigh uint64
	// media and host are the OCP physical media bytes written and the SMART data units written of the
	// last read with both, for the write amplification of the next interval.
	hasWAF      bool
	media, host nvme.Uint128
	// telemetryGen is the generation of the last telemetry announced, -1 before any.
	telemetryGen int
	// via is the controller the last read went through (device.Disk.Via): the error log is that
	// controller's, so a subsystem read through another one starts its high-water mark afresh.
	via string
	// amazon is the last Amazon log read, and throttled which limits throttled the volume in the
	// interval before it (an episode is announced when it begins).
	amazon    *nvme.AmazonStats
	amazonAt  time.Time
	throttled [len(cloudLimits)]bool
	// nearEpisode: the volume's use of its configured IOPS, throughput limit was near or over it in the
	// interval before (cloudLimits' first two): near is announced once, when an episode begins.
	nearEpisode [2]bool
	// monitor is the last OCP latency monitor page read (at monitorAt) and monitorStart the start of
	// its active window, the start time of the monitor's cumulative histograms.
	monitor      *nvme.OCPLatencyLog
	monitorAt    time.Time
	monitorStart time.Time
}

// nvmeExtras records what needs the previous read (write amplification) and appends the events of
// the drive's optional logs: one per new error entry, one per newly saved telemetry.
func (s *smartScraper) nvmeExtras(ctx context.Context, r *recorder, tr *diskTrack, res *device.Result, resource pcommon.Resource) {
	n := res.Snapshot.NVMe
	recordLogStatus(r, n, s.logStates, res.Disk.Key())
	if tr.nvme == nil {
		tr.nvme = &nvmeTrack{telemetryGen: -1}
	}
	t := tr.nvme
	if t.via != res.Disk.Via {
		t.via, t.errSeen = res.Disk.Via, false
	}
	if n.OCP != nil && n.Log != nil {
		if t.hasWAF {
			if waf, ok := nvme.WriteAmplification(t.media, n.OCP.PhysicalMediaWritten, t.host, n.Log.DataUnitsWritten); ok {
				r.mb.RecordDiskHealthPhysicalDiskWriteAmplificationDataPoint(r.ts, waf, r.id, r.name, physicalDisk)
			}
		}
		t.hasWAF, t.media, t.host = true, n.OCP.PhysicalMediaWritten, n.Log.DataUnitsWritten
	}
	label := diskLabel(res)
	if n.Errors != nil || hasLog(n, device.LogErrorInformation) {
		s.errorEvents(ctx, t, res, resource, label, n.Errors)
	}
	if a := n.Amazon; a != nil {
		if th, ok := nvme.ThrottlingBetween(t.amazon, a, res.Time.Sub(t.amazonAt)); ok {
			for i, l := range cloudLimits {
				share := l.share(th)
				if share > 0 && !t.throttled[i] {
					lr := s.events.Record(resource, res.Time, s.now(), EventCloudThrottled, plog.SeverityNumberWarn,
						fmt.Sprintf("%s: throttled by %s for %.0f%% of the last %s", label, l.text, 100*share, res.Time.Sub(t.amazonAt).Round(time.Second)))
					lr.Attributes().PutStr("disk_health.physical_disk.cloud.limit", l.attr.String())
					lr.Attributes().PutDouble("disk_health.throttled_share", share)
				}
				t.throttled[i] = share > 0
			}
		}
		s.cloudForecast(r, t, res, resource, label, a)
		t.amazon, t.amazonAt = a, res.Time
	}
	if tel := n.Telemetry; tel != nil {
		if tel.Available && int(tel.Generation) != t.telemetryGen {
			lr := s.events.Record(resource, res.Time, s.now(), EventNVMeTelemetry, plog.SeverityNumberInfo,
				fmt.Sprintf("%s: the drive saved telemetry for its vendor (generation %d); collect it with `nvme telemetry-log --controller-init`", label, tel.Generation))
			lr.Attributes().PutInt("nvme.telemetry.generation", int64(tel.Generation))
			t.telemetryGen = int(tel.Generation)
		}
		if !tel.Available {
			t.telemetryGen = -1
		}
	}
}

// cloudForecast records the volume's use of its configured limits and announces, once per episode, a
// use that reached smart.cloud_near while the volume is not yet throttled: the warning before the cap.
// An episode ends when the use falls below cloud_near with no throttling.
func (s *smartScraper) cloudForecast(r *recorder, t *nvmeTrack, res *device.Result, resource pcommon.Resource, label string, a *nvme.AmazonStats) {
	_, serial, _ := identityStrings(res.Disk, res.Snapshot)
	limits := cloudLimitsFor(s.cloudLimits, res.Disk.Name, serial)
	dt := res.Time.Sub(t.amazonAt)
	fc, ok := nvme.ForecastBetween(t.amazon, a, dt, limits, s.cloudNear)
	if !ok {
		return
	}
	for i, f := range [len(t.nearEpisode)]struct {
		nvme.LimitForecast
		limit float64
		unit  string
	}{{fc.IOPS, limits.IOPS, "operations/s"}, {fc.Throughput, limits.Throughput, "bytes/s"}} {
		l := cloudLimits[i]
		if f.Configured {
			r.mb.RecordDiskHealthPhysicalDiskCloudLimitUtilizationDataPoint(r.ts, f.Utilization, r.id, r.name, physicalDisk, l.attr)
		}
		if f.State == nvme.ForecastNear && !t.nearEpisode[i] {
			lr := s.events.Record(resource, res.Time, s.now(), EventCloudThrottleNear, plog.SeverityNumberWarn,
				fmt.Sprintf("%s: at %.0f%% of %s (%.0f of %.0f %s) over the last %s; it is throttled at the limit",
					label, 100*f.Utilization, l.text, f.Observed, f.limit, f.unit, dt.Round(time.Second)))
			lr.Attributes().PutStr("disk_health.physical_disk.cloud.limit", l.attr.String())
			lr.Attributes().PutDouble("disk_health.limit_utilization", f.Utilization)
		}
		t.nearEpisode[i] = f.State != nvme.ForecastOK
	}
}

// errorEvents sends the error-log entries above the drive's high-water mark. The mark comes from the
// storage extension on the first read when one is configured (the entries made while no collector ran
// are sent then), else the first read sets it and sends nothing. A log whose newest entry is below the
// mark was reset (the drive's counter started over): the mark follows it, sending nothing.
func (s *smartScraper) errorEvents(ctx context.Context, t *nvmeTrack, res *device.Result, resource pcommon.Resource, label string, entries []nvme.ErrorEntry) {
	key := "nvme_error_log/" + res.Disk.ID
	if d := res.Disk; d.Via != "" && d.Via != d.Name {
		key += "/" + d.Via // another controller's log
	}
	if !t.errSeen {
		t.errSeen = true
		if stored, ok := s.loadMark(ctx, key); ok {
			t.errHigh = stored
		} else {
			_, t.errHigh = nvme.NewErrors(entries, 0)
			s.storeMark(key, t.errHigh)
			return
		}
	}
	before := t.errHigh
	if _, newest := nvme.NewErrors(entries, 0); newest < t.errHigh {
		t.errHigh = newest
	}
	var fresh []nvme.ErrorEntry
	fresh, t.errHigh = nvme.NewErrors(entries, t.errHigh)
	for _, e := range fresh {
		s.appendNVMeError(resource, res, label, e)
	}
	if t.errHigh != before {
		s.storeMark(key, t.errHigh)
	}
}

func (s *smartScraper) loadMark(ctx context.Context, key string) (uint64, bool) {
	if s.marks == nil {
		return 0, false
	}
	// A storage problem is the Background's to log (once); the mark then lives in memory only,
	// which costs at most a restart's worth of entries.
	b, err := s.marks.Get(ctx, key)
	if err != nil || len(b) != 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b), true
}

func (s *smartScraper) storeMark(key string, v uint64) {
	if s.marks != nil {
		s.marks.Set(key, binary.LittleEndian.AppendUint64(nil, v))
	}
}

// hasLog reports whether this read read log name successfully.
func hasLog(n *device.NVMeData, name string) bool {
	for _, o := range n.Optional {
		if o.Log == name && o.Status == device.StatusOK {
			return true
		}
	}
	return false
}

func (s *smartScraper) appendNVMeError(resource pcommon.Resource, res *device.Result, label string, e nvme.ErrorEntry) {
	body := fmt.Sprintf("%s: NVMe error %d: status %s on queue %d, command %d", label, e.Count, e.StatusString(), e.SQID, e.CID)
	if e.NSID != 0 && e.NSID != nvme.NSIDAll {
		body += fmt.Sprintf(", namespace %d, LBA %d", e.NSID, e.LBA)
	}
	lr := s.events.Record(resource, res.Time, s.now(), EventNVMeError, plog.SeverityNumberWarn, body)
	a := lr.Attributes()
	a.PutInt("nvme.error.count", int64(min(e.Count, 1<<63-1)))
	a.PutStr("nvme.status", e.StatusString())
	a.PutBool("disk_health.nvme.status_dnr", e.DoNotRetry())
	a.PutBool("nvme.phase", e.Phase)
	a.PutInt("nvme.sqid", int64(e.SQID))
	a.PutInt("nvme.cid", int64(e.CID))
	a.PutInt("nvme.nsid", int64(e.NSID))
	a.PutInt("nvme.lba", int64(min(e.LBA, 1<<63-1)))
	if e.ParamLocation != 0xFFFF {
		a.PutInt("nvme.parameter_error_location", int64(e.ParamLocation))
	}
}

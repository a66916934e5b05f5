package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"

	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/health"
)

// diskTrack is what the scraper remembers of one disk between reads.
type diskTrack struct {
	history health.History
	// last is the last read that produced values; lastOK the time of the last successful read.
	last   *device.Result
	lastOK time.Time
	// staleSent: last's points were already marked stale after a failed read.
	staleSent bool
	status    device.Status
	seen      bool
	// nvme is kept for NVMe drives only.
	nvme *nvmeTrack
}

// logStatus logs a disk's read outcome when it changes, so a disk without permission says so once, not
// every interval.
func (s *smartScraper) logStatus(res *device.Result, tr *diskTrack) {
	if tr.seen && tr.status == res.Status {
		return
	}
	tr.seen, tr.status = true, res.Status
	fields := []zap.Field{zap.String("disk", res.Disk.Name), zap.String("hw.id", res.Disk.ID), zap.String("status", res.Status.String())}
	switch res.Status {
	case device.StatusOK:
		s.logger.Debug("SMART read", fields...)
	case device.StatusPermissionDenied:
		s.logger.Warn("SMART read refused: run as root or grant CAP_SYS_RAWIO (ATA) and CAP_SYS_ADMIN (NVMe)", append(fields, zap.Error(res.Err))...)
	case device.StatusStandbySkipped, device.StatusUnsupported:
		s.logger.Info("SMART not read", append(fields, zap.Error(res.Err))...)
	default:
		s.logger.Warn("SMART read failed", append(fields, zap.Error(res.Err))...)
	}
	if res.Snapshot != nil {
		for _, p := range res.Snapshot.Problems {
			s.logger.Debug("SMART read incomplete", zap.String("disk", res.Disk.Name), zap.Error(p))
		}
	}
}

// readsPart is the part of the source's status its disk reads set.
const readsPart = "reads"

// recordStatus says, in disk_health.source.status, what logStatus logs per disk: off when every disk
// found was refused (the source delivers no SMART value), degraded when some were refused or failed.
// A disk in standby or without SMART is no problem of the source.
func (s *smartScraper) recordStatus(results []device.Result) {
	var refused, failed int
	var refusal error
	for i := range results {
		switch results[i].Status {
		case device.StatusPermissionDenied:
			refused++
			if refusal == nil {
				refusal = results[i].Err
			}
		case device.StatusTimeout, device.StatusError:
			failed++
		}
	}
	switch {
	case refused > 0 && refused == len(results):
		s.status.Set(readsPart, emit.StateOff, refusedReason(refusal))
	case refused > 0:
		s.status.Set(readsPart, emit.StateDegraded, refusedReason(refusal))
	case failed > 0:
		s.status.Set(readsPart, emit.StateDegraded, emit.ReasonError)
	default:
		s.status.Clear(readsPart)
	}
}

// refusedReason classifies a refused read: the open of the /dev node (no_device_access), or the
// ioctl, which needs CAP_SYS_RAWIO (ATA, SG_IO) and CAP_SYS_ADMIN (NVMe admin commands): refused with
// both held it is a seccomp filter's.
func refusedReason(err error) emit.Reason {
	return emit.Refused(err, hasCapability(emit.CapSysAdmin) && hasCapability(emit.CapSysRawio))
}

// hasCapability is emit.HasCapability; tests replace it.
var hasCapability = emit.HasCapability

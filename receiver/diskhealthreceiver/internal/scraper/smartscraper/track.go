package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"time"

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

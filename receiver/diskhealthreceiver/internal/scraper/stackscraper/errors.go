package stackscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/errcount"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/signs"
)

// scrapeErrors records the SCSI, ext4 and btrfs counters and posts the filesystems' on their physical
// disk's board entry. Each counter family is independent: one that cannot be read is a partial error.
func (s *stackScraper) scrapeErrors(ctx context.Context, sc *scrape) error {
	var errs []error
	errs = append(errs, s.scrapeSCSI(sc))
	mounts, merr := s.mounts(sc)
	if merr != nil {
		errs = append(errs, merr)
	}
	recorded, eerr := s.scrapeExt4(sc, mounts)
	errs = append(errs, eerr, s.scrapeBtrfs(ctx, sc, mounts), s.scrapeFSStates(ctx, sc, mounts, recorded))
	return errors.Join(errs...)
}

// mountsByDevice is the ext4, btrfs and xfs mounts by the mounted device's kernel name (first mount
// wins).
type mountsByDevice map[string]mountedFS

// mounts reads the mount table with the filesystem source's parser. The error is an unreadable table.
// A line that cannot be parsed costs its mount only: a partial problem naming the line (the receiver
// logs it once, however many scrapes and sources meet it), not a failed read of the part.
func (s *stackScraper) mounts(sc *scrape) (mountsByDevice, error) {
	b, err := s.r.mountinfo()
	if err != nil {
		return nil, err
	}
	all, bad := fsusage.ParseMountInfo(b)
	sc.partial(bad)
	// Whether any mount of a superblock (st_dev) is read-only at the mount level.
	mountRO := map[[2]uint32]bool{}
	for _, m := range all {
		mountRO[[2]uint32{m.Major, m.Minor}] = mountRO[[2]uint32{m.Major, m.Minor}] || m.MountRO
	}
	out := mountsByDevice{}
	for _, m := range all {
		if m.FSType != "ext4" && m.FSType != "btrfs" && m.FSType != "xfs" {
			continue
		}
		name := ""
		if m.FSType == "btrfs" {
			// btrfs mounts an anonymous device number; the source names one of its devices.
			if strings.HasPrefix(m.Source, "/dev/") {
				name = path.Base(m.Source)
			}
		} else if n, err := errcount.DeviceName(s.r.sys, m.Major, m.Minor); err == nil {
			name = n
		}
		if _, dup := out[name]; name != "" && !dup {
			// Mount points are bytes; an attribute is valid UTF-8, the one the filesystem source reports.
			m.MountPoint = sanitize.String(sanitize.MountPoint, m.MountPoint)
			out[name] = mountedFS{Mount: m, AnyMountRO: mountRO[[2]uint32{m.Major, m.Minor}]}
		}
	}
	return out, nil
}

func (s *stackScraper) scrapeSCSI(sc *scrape) error {
	ents, err := fs.ReadDir(s.r.sys, "block")
	if err != nil {
		if isNotExist(err) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range ents {
		name := e.Name()
		c, err := errcount.ReadSCSI(s.r.sys, name)
		if err != nil {
			if !isNotExist(err) {
				errs = append(errs, err)
			}
			continue
		}
		id, _ := s.ids.of(name)
		if id == "" {
			continue // not a whole physical disk in sysfs's view
		}
		lt := metadata.AttributeHwTypePhysicalDisk
		for _, p := range []struct {
			file   string
			v      uint32
			record func(int64)
		}{
			{"ioerr_cnt", c.Errors, func(v int64) { s.mb.RecordHwErrorsDataPoint(sc.ts, v, id, name, lt, "scsi_io_error") }},
			{"iotmo_cnt", c.Timeouts, func(v int64) { s.mb.RecordHwErrorsDataPoint(sc.ts, v, id, name, lt, "scsi_timeout") }},
			{"iorequest_cnt", c.Requests, func(v int64) {
				s.mb.RecordDiskHealthPhysicalDiskScsiCommandsDataPoint(sc.ts, v, id, name, lt, metadata.AttributeScsiCommandOutcomeRequested)
			}},
			{"iodone_cnt", c.Done, func(v int64) {
				s.mb.RecordDiskHealthPhysicalDiskScsiCommandsDataPoint(sc.ts, v, id, name, lt, metadata.AttributeScsiCommandOutcomeDone)
			}},
		} {
			v, start := s.series.u32("scsi/"+id+"/"+name+"/"+p.file, p.v, sc.at, scsiCommandsPerSecond)
			s.withStart(start, func() { p.record(clampInt(v)) })
		}
		// Not on the signs board: the midlayer counts every command, pass-through included, and an ATA
		// command sent with CK_COND (SMART RETURN STATUS, CHECK POWER MODE: ours, smartctl's) completes
		// with CHECK CONDITION, so ioerr_cnt rises on a healthy disk each time one is polled.
	}
	return errors.Join(errs...)
}

// scrapeExt4 records every ext4's counters; it returns the errors_count of those it could read, by
// device.
func (s *stackScraper) scrapeExt4(sc *scrape, mounts mountsByDevice) (map[string]uint64, error) {
	fss, err := errcount.ReadExt4(s.r.sys)
	recorded := map[string]uint64{}
	for _, e := range fss {
		m, mounted := mounts[e.Device]
		if m.FSType != "ext4" {
			m, mounted = mountedFS{}, false
		}
		mp := m.MountPoint
		typ := metadata.AttributeSystemFilesystemTypeExt4
		if !e.LastErrorTime.IsZero() {
			s.mb.RecordDiskHealthFilesystemLastErrorTimeDataPoint(sc.ts, e.LastErrorTime.Unix(), e.Device, mp, typ)
		}
		if mounted && m.EmergencyRO {
			s.mb.RecordDiskHealthFilesystemReadOnlyAfterErrorsDataPoint(sc.ts, 1, e.Device, mp, typ)
		}
		if !e.HasCount {
			continue // an unparsable errors_count is left out, never reported as 0 (the error names it)
		}
		recorded[e.Device] = e.Count
		v, start := s.series.u64("ext4/"+e.Device+"/"+mp, e.Count, sc.at)
		s.withStart(start, func() { s.mb.RecordDiskHealthFilesystemErrorsDataPoint(sc.ts, clampInt(v), e.Device, mp, typ) })
		if mounted && !m.EmergencyRO {
			s.mb.RecordDiskHealthFilesystemReadOnlyAfterErrorsDataPoint(sc.ts, boolInt(m.ReadOnlyAfterErrors(e.Count)), e.Device, mp, typ)
		}
		if id, _ := s.ids.of(e.Device); id != "" {
			sc.post(id, signs.Counter{Kind: signs.FilesystemErrors, Subject: fmt.Sprintf("ext4 errors on %s (%s)", e.Device, mp), Value: e.Count})
		}
	}
	return recorded, err
}

func (s *stackScraper) scrapeBtrfs(ctx context.Context, sc *scrape, mounts mountsByDevice) error {
	devs, err := s.r.btrfs.Read(ctx)
	// A filesystem's mount point, from whichever of its devices mountinfo names.
	mountOf := map[string]string{}
	for _, d := range devs {
		if m, ok := mounts[d.Device]; ok && d.Device != "" && m.FSType == "btrfs" {
			mountOf[d.FSID] = m.MountPoint
		}
	}
	typ := metadata.AttributeSystemFilesystemTypeBtrfs
	for _, d := range devs {
		if d.Device == "" || !d.HasStats {
			continue // unpaired devid, or error_stats unreadable or "invalid": the error says why
		}
		mp := mountOf[d.FSID]
		for _, c := range []struct {
			kind string
			v    uint64
		}{{"write", d.Stats.Write}, {"read", d.Stats.Read}, {"flush", d.Stats.Flush}, {"corruption", d.Stats.Corruption}, {"generation", d.Stats.Generation}} {
			v, start := s.series.u64("btrfs/"+d.FSID+"/"+d.Device+"/"+mp+"/"+c.kind, c.v, sc.at)
			s.withStart(start, func() {
				s.mb.RecordDiskHealthFilesystemDeviceErrorsDataPoint(sc.ts, clampInt(v), d.Device, mp, typ, c.kind)
			})
		}
		if id, _ := s.ids.of(d.Device); id != "" {
			total := d.Stats.Write + d.Stats.Read + d.Stats.Flush + d.Stats.Corruption + d.Stats.Generation
			sc.post(id, signs.Counter{Kind: signs.FilesystemErrors, Subject: fmt.Sprintf("btrfs errors on %s (%s)", d.Device, mp), Value: total})
		}
	}
	return err
}

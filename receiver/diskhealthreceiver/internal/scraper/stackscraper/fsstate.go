package stackscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"syscall"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper/internal/metadata"
)

// EventFilesystemErrorStateChange names the record sent when a mounted filesystem enters or leaves a bad
// error state (read-only after errors, shut down).
const EventFilesystemErrorStateChange = "disk_health.filesystem.error_state_change"

type fsErrorState = metadata.AttributeDiskHealthFilesystemErrorState

var fsErrorStates = []fsErrorState{
	metadata.AttributeDiskHealthFilesystemErrorStateOk, metadata.AttributeDiskHealthFilesystemErrorStateReadOnlyAfterErrors,
	metadata.AttributeDiskHealthFilesystemErrorStateShutdown,
}

// mountedFS is a filesystem's first mount in the table, and whether any of the superblock's mounts is
// read-only at the mount level (an administrator's ro: `mount -o remount,ro` of one mount makes the
// superblock ro under the others' rw).
type mountedFS struct {
	fsusage.Mount
	AnyMountRO bool
}

// fsState is what the kernel did to a mounted filesystem after errors. recorded is the filesystem's
// recorded error count where it keeps one that survives a read-only switch (ext4's errors_count; 0
// when unknown); probe is the result of a stat of the mount point, nil when not probed (xfs only: a
// shut-down xfs answers every call, getattr included, with EIO, and shows nothing in mountinfo or
// sysfs).
//
//   - shutdown: ext4's "shutdown" superblock option (EXT4_IOC_SHUTDOWN, or a journal aborted by it),
//     or an xfs whose mount point answers stat with EIO.
//   - read_only_after_errors: ext4's emergency_ro; or a read-only superblock under mounts that are all
//     read-write — the filesystem switched itself, no administrator remounted one of them ro — for
//     ext4 with recorded errors (errors=remount-ro before 6.3), for btrfs always (a transaction abort:
//     its error_stats may stay 0, an ENOSPC from the device is no device error).
//   - ok otherwise.
func fsState(m *mountedFS, recorded uint64, probe error) fsErrorState {
	switch m.FSType {
	case "ext4":
		switch {
		case m.Shutdown:
			return metadata.AttributeDiskHealthFilesystemErrorStateShutdown
		case m.EmergencyRO, m.SuperRO && !m.AnyMountRO && recorded > 0:
			return metadata.AttributeDiskHealthFilesystemErrorStateReadOnlyAfterErrors
		}
	case "btrfs":
		if m.SuperRO && !m.AnyMountRO {
			return metadata.AttributeDiskHealthFilesystemErrorStateReadOnlyAfterErrors
		}
	case "xfs":
		if errors.Is(probe, syscall.EIO) {
			return metadata.AttributeDiskHealthFilesystemErrorStateShutdown
		}
	}
	return metadata.AttributeDiskHealthFilesystemErrorStateOk
}

// fsStateKey is one mount's identity across scrapes: the device and where it is mounted, so that an
// unmount and mount between two scrapes is the same mount leaving its bad state.
func fsStateKey(dev, mountPoint string) string { return dev + "\x00" + mountPoint }

// scrapeFSStates records every mounted ext4, btrfs and xfs filesystem's error state and buffers an event
// for each that changed since the previous scrape (or is first seen in a bad state). recorded is ext4's
// errors_count by device. An unmounted filesystem is forgotten without an event.
func (s *stackScraper) scrapeFSStates(ctx context.Context, sc *scrape, mounts mountsByDevice, recorded map[string]uint64) error {
	if s.fsStates == nil {
		s.fsStates = map[string]fsErrorState{}
	}
	seen := map[string]bool{}
	var errs []error
	for _, dev := range slices.Sorted(maps.Keys(mounts)) {
		m := mounts[dev]
		typ, ok := metadata.MapAttributeSystemFilesystemType[m.FSType]
		if !ok {
			continue
		}
		key := fsStateKey(dev, m.MountPoint)
		seen[key] = true
		var probe error
		if m.FSType == "xfs" && s.r.statMount != nil {
			var found string
			found, probe = s.r.statMount(ctx, m.Path)
			if probe == nil && found != "" && found != m.MajorMinor() {
				// Another filesystem at the path: the collector does not see this mount (a container
				// whose root_path is no recursive bind of the host's /).
				probe = fmt.Errorf("%s is on %s, not on the mounted %s", m.Path, found, m.MajorMinor())
			}
			if probe != nil && !errors.Is(probe, syscall.EIO) {
				// Not a shutdown, and nothing else known: the mount is left out this time, its last
				// state kept.
				errs = append(errs, fmt.Errorf("xfs %s (%s): %w", dev, m.MountPoint, probe))
				continue
			}
		}
		st := fsState(&m, recorded[dev], probe)
		for _, v := range fsErrorStates {
			s.mb.RecordDiskHealthFilesystemErrorStatusDataPoint(sc.ts, boolInt(v == st), dev, m.MountPoint, typ, v)
		}
		prev, known := s.fsStates[key]
		s.fsStates[key] = st
		if (known && prev != st) || (!known && st != metadata.AttributeDiskHealthFilesystemErrorStateOk) {
			s.fsStateEvent(sc, dev, &m, typ, prev, known, st)
		}
	}
	for key := range s.fsStates {
		if !seen[key] {
			delete(s.fsStates, key)
		}
	}
	return errors.Join(errs...)
}

// fsStateEvent buffers one mount's change of error state: ERROR when it shut down, WARN when it went
// read-only, INFO when it is ok again.
func (s *stackScraper) fsStateEvent(sc *scrape, dev string, m *mountedFS, typ metadata.AttributeSystemFilesystemType, prev fsErrorState, known bool, st fsErrorState) {
	res := pcommon.NewResource()
	if id, _ := s.ids.of(dev); id != "" {
		res.Attributes().PutStr("hw.id", id)
	}
	what := map[fsErrorState]string{
		metadata.AttributeDiskHealthFilesystemErrorStateOk:                  "ok again",
		metadata.AttributeDiskHealthFilesystemErrorStateReadOnlyAfterErrors: "read-only after errors: writes fail with EROFS",
		metadata.AttributeDiskHealthFilesystemErrorStateShutdown:            "shut down: every read and write fails with EIO",
	}[st]
	sev := plog.SeverityNumberWarn
	switch st {
	case metadata.AttributeDiskHealthFilesystemErrorStateOk:
		sev = plog.SeverityNumberInfo
	case metadata.AttributeDiskHealthFilesystemErrorStateShutdown:
		sev = plog.SeverityNumberError
	}
	body := fmt.Sprintf("%s %s (%s): %s", typ, dev, m.MountPoint, what)
	if known {
		body += fmt.Sprintf(" (was %s)", prev)
	}
	lr := s.events.Record(res, sc.at, s.now(), EventFilesystemErrorStateChange, sev, body)
	a := lr.Attributes()
	a.PutStr("system.device", dev)
	a.PutStr("system.filesystem.mountpoint", m.MountPoint)
	a.PutStr("system.filesystem.type", typ.String())
	a.PutStr("disk_health.filesystem.error_state", st.String())
	if known {
		a.PutStr("disk_health.previous_state", prev.String())
	}
}

package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
)

// Where the drive database comes from. None is compiled in (no copy of drivedb.h data is kept in
// this repository): like smartctl, the receiver reads smartmontools' drivedb.h. In order: the file
// smart.drivedb names (smartctl -B FILE); the copy update-smart-drivedb keeps on the host (Debian's
// smartmontools package also puts its own there), then the package's own copy (where Fedora, Arch
// and Alpine's smartctl read it), both under root_path; then the copy the container image ships
// (deploy/Dockerfile puts Debian's there), read as is; then, as smartctl falls back to its built-in
// table, the names github.com/anatol/smart.go's table gives (the device layer's ReadSMARTData). The
// host's /etc/smart_drivedb.h entries go before any of them but a configured file, as smartctl reads
// them.
const (
	hostDriveDB          = "var/lib/smartmontools/drivedb/drivedb.h"
	hostPackageDriveDB   = "usr/share/smartmontools/drivedb.h"
	hostDriveDBAdditions = "etc/smart_drivedb.h"
	imageDriveDB         = "/usr/share/smartmontools/drivedb.h"
)

// driveDBInUse is the drive database the ATA attributes are named from and where it came from, as
// disk_health.smart.drive_database.entries reports it. A nil db is smart.go's built-in names.
type driveDBInUse struct {
	db        *ata.DriveDB
	source    metadata.AttributeDiskHealthDriveDatabaseSource
	additions bool // the host's /etc/smart_drivedb.h entries go first
}

// record records the database's entries with which one it is (no disk: the receiver's own point).
func (d driveDBInUse) record(mb *metadata.MetricsBuilder, ts pcommon.Timestamp) {
	mb.RecordDiskHealthSmartDriveDatabaseEntriesDataPoint(ts, int64(d.db.Len()), d.source, d.db.Version(), d.additions)
}

// loadDriveDB is the drive database the ATA attributes are named from: the first of the files above
// that can be read and parsed (image is the image's copy). A configured file that is missing, and
// any file that cannot be read or parsed, is one WARN each and the next file is tried; a file that is
// not on this host is no WARN. With none of them, smart.go's built-in names are used: nothing is lost
// that a WARN should report (the INFO says which names are used). The database in use is logged once
// at INFO.
func loadDriveDB(logger *zap.Logger, root, configured, image string) driveDBInUse {
	type candidate struct {
		path   string
		source metadata.AttributeDiskHealthDriveDatabaseSource
	}
	var candidates []candidate
	if configured != "" {
		candidates = append(candidates, candidate{configured, metadata.AttributeDiskHealthDriveDatabaseSourceConfigured})
	}
	candidates = append(candidates,
		candidate{filepath.Join(root, hostDriveDB), metadata.AttributeDiskHealthDriveDatabaseSourceHost},
		candidate{filepath.Join(root, hostPackageDriveDB), metadata.AttributeDiskHealthDriveDatabaseSourceHost})
	if image != filepath.Join(root, hostPackageDriveDB) { // root_path "/" or unset: the image is the host
		candidates = append(candidates, candidate{image, metadata.AttributeDiskHealthDriveDatabaseSourceImage})
	}
	in := driveDBInUse{source: metadata.AttributeDiskHealthDriveDatabaseSourceBuiltIn}
	source := "built_in (github.com/anatol/smart.go)"
	tried := make([]string, 0, len(candidates))
	for _, c := range candidates {
		tried = append(tried, c.path)
		db, err := readDriveDB(c.path, true)
		if errors.Is(err, fs.ErrNotExist) && c.source != metadata.AttributeDiskHealthDriveDatabaseSourceConfigured {
			continue
		}
		if err != nil {
			logger.Warn("SMART drive database not used: the next one smartctl would read is tried (the file is read once, at start)",
				zap.String("path", c.path), zap.Error(err))
			continue
		}
		in.db, in.source, source = db, c.source, c.path
		break
	}
	if configured == "" {
		path := filepath.Join(root, hostDriveDBAdditions)
		switch add, err := readDriveDB(path, false); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			logger.Warn("SMART drive database additions not used", zap.String("path", path), zap.Error(err))
		default:
			in.db, source = in.db.WithAdditions(add), path+" + "+source
			in.additions = true
		}
	}
	fields := []zap.Field{zap.String("source", source), zap.String("version", in.db.Version()), zap.Int("entries", in.db.Len())}
	if in.db == nil {
		fields = append(fields, zap.Strings("tried", tried)) // where a drivedb.h would have been found
	}
	logger.Info("SMART drive database", fields...)
	return in
}

// readDriveDB reads and parses a drivedb.h; whole says it must be a database that can replace the
// built-in one (it has a DEFAULT entry), not additions to it.
func readDriveDB(path string, whole bool) (*ata.DriveDB, error) {
	// bounded refuses a FIFO or device node at the path (a read that would block or never end) and stops
	// at the size cap.
	b, err := bounded.ReadFile(path, ata.MaxDriveDBSize, nil)
	if err != nil {
		return nil, err
	}
	db, err := ata.ParseDriveDB(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if whole && !db.Complete() {
		return nil, fmt.Errorf("%s: no DEFAULT entry: additions to a database, not a whole one (those go in /etc/smart_drivedb.h)", path)
	}
	return db, nil
}

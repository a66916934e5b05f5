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

// Where smartctl looks for its drive database when -B is not given (smartctl(8), FILES): the
// database update-smart-drivedb keeps replaces the built-in one, and the local entries of
// /etc/smart_drivedb.h go before either. Read under root_path: the host's copies.
const (
	hostDriveDB          = "var/lib/smartmontools/drivedb/drivedb.h"
	hostDriveDBAdditions = "etc/smart_drivedb.h"
)

// driveDBInUse is the drive database the ATA attributes are named from and where it came from, as
// disk_health.smart.drive_database.entries reports it.
type driveDBInUse struct {
	db        *ata.DriveDB
	source    metadata.AttributeDiskHealthDriveDatabaseSource
	additions bool // the host's /etc/smart_drivedb.h entries go first
}

// record records the database's entries with which one it is (no disk: the receiver's own point).
func (d driveDBInUse) record(mb *metadata.MetricsBuilder, ts pcommon.Timestamp) {
	mb.RecordDiskHealthSmartDriveDatabaseEntriesDataPoint(ts, int64(d.db.Len()), d.source, d.db.Version, d.additions)
}

// loadDriveDB is the drive database the ATA attributes are named from: the configured file
// (smart.drivedb, as smartctl -B FILE), else the host's as smartctl finds it, else the built-in
// one. A configured file that is missing, and any file that cannot be read or parsed, is one WARN and
// the built-in database (or, for the additions, none); the database in use is logged once at INFO.
func loadDriveDB(logger *zap.Logger, root, configured string) driveDBInUse {
	in := driveDBInUse{db: ata.Builtin(), source: metadata.AttributeDiskHealthDriveDatabaseSourceBuiltIn}
	db, source := in.db, "built-in"
	warn := func(path string, err error) {
		logger.Warn("SMART drive database not used: ATA attributes are named from the built-in database "+
			"(the file is read once, at start)", zap.String("path", path), zap.Error(err))
	}
	if configured != "" {
		if d, err := readDriveDB(configured, true); err != nil {
			warn(configured, err)
		} else {
			db, source = d, configured
			in.source = metadata.AttributeDiskHealthDriveDatabaseSourceConfigured
		}
	} else {
		path := filepath.Join(root, hostDriveDB)
		switch d, err := readDriveDB(path, true); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			warn(path, err)
		default:
			db, source = d, path
			in.source = metadata.AttributeDiskHealthDriveDatabaseSourceHost
		}
		path = filepath.Join(root, hostDriveDBAdditions)
		switch add, err := readDriveDB(path, false); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			logger.Warn("SMART drive database additions not used", zap.String("path", path), zap.Error(err))
		default:
			db, source = db.WithAdditions(add), path+" + "+source
			in.additions = true
		}
	}
	logger.Info("SMART drive database", zap.String("source", source), zap.String("version", db.Version), zap.Int("entries", db.Len()))
	in.db = db
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

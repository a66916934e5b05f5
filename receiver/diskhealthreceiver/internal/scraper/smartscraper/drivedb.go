package smartscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper"

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
)

// Where smartctl looks for its drive database when -B is not given (smartctl(8), FILES): the
// database update-smart-drivedb keeps replaces the built-in one, and the local entries of
// /etc/smart_drivedb.h go before either. Read under root_path: the host's copies.
const (
	hostDriveDB          = "var/lib/smartmontools/drivedb/drivedb.h"
	hostDriveDBAdditions = "etc/smart_drivedb.h"
)

// loadDriveDB is the drive database the ATA attributes are named from: the configured file
// (smart.drivedb, as smartctl -B FILE), else the host's as smartctl finds it, else the built-in
// one. A configured file that is missing, and any file that cannot be read or parsed, is one WARN and
// the built-in database (or, for the additions, none); the database in use is logged once at INFO.
func loadDriveDB(logger *zap.Logger, root, configured string) *ata.DriveDB {
	db, source := ata.Builtin(), "built-in"
	warn := func(path string, err error) {
		logger.Warn("SMART drive database not used: ATA attributes are named from the built-in database "+
			"(the file is read once, at start)", zap.String("path", path), zap.Error(err))
	}
	if configured != "" {
		if d, err := readDriveDB(configured, true); err != nil {
			warn(configured, err)
		} else {
			db, source = d, configured
		}
	} else {
		path := filepath.Join(root, hostDriveDB)
		switch d, err := readDriveDB(path, true); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			warn(path, err)
		default:
			db, source = d, path
		}
		path = filepath.Join(root, hostDriveDBAdditions)
		switch add, err := readDriveDB(path, false); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			logger.Warn("SMART drive database additions not used", zap.String("path", path), zap.Error(err))
		default:
			db, source = db.WithAdditions(add), path+" + "+source
		}
	}
	logger.Info("SMART drive database", zap.String("source", source), zap.String("version", db.Version), zap.Int("entries", db.Len()))
	return db
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

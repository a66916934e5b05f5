package smartscraper

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device/devicetest"
)

// newerDriveDB is a drivedb.h as update-smart-drivedb would bring it: the Seagate QEMU's sda poses as
// names its attribute 4 differently than smartctl's database does.
const newerDriveDB = `/* drivedb.h, a newer revision */
  { "VERSION: 7.5 $Id: drivedb.h 5800 2026-11-30 chrfranke $", "-", "-", "Version information", "" },
  { "DEFAULT", "-", "-", "Default settings",
    "-v 1,raw48,Raw_Read_Error_Rate -v 9,raw24(raw8),Power_On_Hours -v 12,raw48,Power_Cycle_Count "
    "-v 4,raw48,Start_Stop_Count -v 190,tempminmax,Airflow_Temperature_Cel -v 194,tempminmax,Temperature_Celsius"
  },
  { "Seagate BarraCuda 3.5 (SMR)", "ST4000DM004-.*", "", "",
    "-v 4,raw48,Start_Stop_Cycles" // renamed in this revision
  },
`

// attrNames is the set of ATA attribute names a disk's hw.physical_disk.smart points carry.
func attrNames(t *testing.T, h *smartHarness, disk string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, dp := range pointsByDisk(h.scrape(t), "hw.physical_disk.smart")[disk] {
		v, ok := dp.Attributes().Get("hw.physical_disk.smart_attribute")
		require.True(t, ok)
		out[v.Str()] = true
	}
	require.NotEmpty(t, out, disk)
	return out
}

func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, obs := observer.New(zapcore.InfoLevel)
	return zap.New(core), obs
}

// writeFile writes body at rel under root, making its directories.
func writeFile(t *testing.T, root, rel, body string) string {
	t.Helper()
	path := filepath.Join(root, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

// noImage is an image path that holds no drive database.
func noImage(t *testing.T) string { return filepath.Join(t.TempDir(), "drivedb.h") }

// A newer drivedb.h on the host renames an attribute with no rebuild: the host's
// /var/lib/smartmontools/drivedb/drivedb.h (under root_path) is read first, as smartctl reads it.
func TestDriveDBFromHostRenamesAttribute(t *testing.T) {
	before := attrNames(t, newSMARTHarness(t, "k6.12", nil), "sda")
	require.True(t, before["Start_Stop_Count"], "smartctl's name: %v", before)

	root := t.TempDir()
	path := writeFile(t, root, hostDriveDB, newerDriveDB)
	writeFile(t, root, hostPackageDriveDB, string(testkit.DriveDBH(t)))
	logger, obs := observed()
	in := loadDriveDB(logger, root, "", noImage(t))
	assert.Equal(t, metadata.AttributeDiskHealthDriveDatabaseSourceHost, in.source)
	assert.False(t, in.additions)
	after := attrNames(t, newSMARTHarness(t, "k6.12", func(c *device.Config) { c.DriveDB = in.db }), "sda")
	assert.True(t, after["Start_Stop_Cycles"], "%v", after)
	assert.False(t, after["Start_Stop_Count"], "%v", after)
	assert.Zero(t, obs.FilterLevelExact(zapcore.WarnLevel).Len())
	info := obs.FilterMessage("SMART drive database").All()
	require.Len(t, info, 1)
	assert.Equal(t, map[string]any{"source": path, "version": "7.5 $Id: drivedb.h 5800 2026-11-30 chrfranke $", "entries": int64(1)}, info[0].ContextMap())

	// The same file named in the configuration.
	in = loadDriveDB(zap.NewNop(), t.TempDir(), path, noImage(t))
	assert.Equal(t, metadata.AttributeDiskHealthDriveDatabaseSourceConfigured, in.source)
	assert.Equal(t, "Start_Stop_Cycles", in.db.LookupDrive("ST4000DM004-2CV104", "", 7200).Def(4).Name)
}

// Where no update-smart-drivedb copy is, the smartmontools package's own drivedb.h is read (the host's
// under root_path, else the image's), with no WARN: the names are smartctl's.
func TestDriveDBPackageCopies(t *testing.T) {
	debian := string(testkit.DriveDBH(t))
	smartctlNames := attrNames(t, newSMARTHarness(t, "k6.12", nil), "sda")

	root := t.TempDir()
	path := writeFile(t, root, hostPackageDriveDB, debian)
	logger, obs := observed()
	in := loadDriveDB(logger, root, "", noImage(t))
	assert.Equal(t, metadata.AttributeDiskHealthDriveDatabaseSourceHost, in.source)
	assert.Equal(t, path, obs.FilterMessage("SMART drive database").All()[0].ContextMap()["source"])
	assert.Equal(t, smartctlNames, attrNames(t, newSMARTHarness(t, "k6.12", func(c *device.Config) { c.DriveDB = in.db }), "sda"))

	image := writeFile(t, t.TempDir(), "drivedb.h", debian)
	logger, obs = observed()
	in = loadDriveDB(logger, t.TempDir(), "", image)
	assert.Equal(t, metadata.AttributeDiskHealthDriveDatabaseSourceImage, in.source)
	assert.Zero(t, obs.FilterLevelExact(zapcore.WarnLevel).Len())
	assert.Equal(t, image, obs.FilterMessage("SMART drive database").All()[0].ContextMap()["source"])
	assert.Equal(t, smartctlNames, attrNames(t, newSMARTHarness(t, "k6.12", func(c *device.Config) { c.DriveDB = in.db }), "sda"))

	// root_path "/": the host's package copy is the image's path, read once.
	logger, obs = observed()
	in = loadDriveDB(logger, "/", "", "/"+hostPackageDriveDB)
	assert.Equal(t, metadata.AttributeDiskHealthDriveDatabaseSourceHost, in.source)
	assert.Equal(t, 1, obs.FilterMessage("SMART drive database").Len(), "read once")
}

// /etc/smart_drivedb.h's entries go before the database's, as smartctl reads them.
func TestDriveDBHostAdditions(t *testing.T) {
	root := t.TempDir()
	path := writeFile(t, root, hostDriveDBAdditions, `{ "Local", "ST4000DM004-2CV104", "", "", "-v 188,raw48,Local_Timeouts" },`)
	image := writeFile(t, t.TempDir(), "drivedb.h", string(testkit.DriveDBH(t)))
	logger, obs := observed()
	in := loadDriveDB(logger, root, "", image)
	assert.Equal(t, driveDBInUse{db: in.db, source: metadata.AttributeDiskHealthDriveDatabaseSourceImage, additions: true}, in)
	assert.Equal(t, "Local_Timeouts", in.db.LookupDrive("ST4000DM004-2CV104", "", 7200).Def(188).Name)
	assert.Equal(t, testkit.ParsedDriveDBH(t, ata.ParseDriveDB).Len()+1, in.db.Len())
	assert.Equal(t, path+" + "+image, obs.FilterMessage("SMART drive database").All()[0].ContextMap()["source"])
}

// A configured file that is missing, a malformed one, one that is only additions, one past the budget
// for compiled patterns: each is one WARN, and the next database in smartctl's order (here the
// image's) names the attributes as before.
func TestDriveDBFallback(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	image := write("image.h", string(testkit.DriveDBH(t)))
	smartctlNames := attrNames(t, newSMARTHarness(t, "k6.12", nil), "sda")
	var hostile strings.Builder
	hostile.WriteString(newerDriveDB)
	for i := range 1000 {
		fmt.Fprintf(&hostile, "{ \"F\", \"[a-z]{1,1000}%05d\", \"\", \"\", \"\" },\n", i)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "absent.h"), "no such file or directory"},
		{"malformed", write("bad.h", newerDriveDB+`{ "F", "M(", "", "", "" },`), `line 10: entry "F": model expression`},
		{"truncated", write("cut.h", newerDriveDB[:200]), "string not closed"},
		{"additions only", write("add.h", `{ "F", "M", "", "", "" }`), "no DEFAULT entry"},
		{"directory", dir, "not a regular file"},
		{"too large", write("big.h", newerDriveDB+strings.Repeat(" ", ata.MaxDriveDBSize)), "longer than its size cap"},
		{"past the pattern budget", write("hostile.h", hostile.String()), "the budget for compiled patterns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, obs := observed()
			in := loadDriveDB(logger, t.TempDir(), tc.path, image)
			assert.Equal(t, metadata.AttributeDiskHealthDriveDatabaseSourceImage, in.source)
			warns := obs.FilterLevelExact(zapcore.WarnLevel).All()
			require.Len(t, warns, 1)
			assert.Equal(t, tc.path, warns[0].ContextMap()["path"])
			assert.Contains(t, warns[0].ContextMap()["error"], tc.want)
			assert.Equal(t, smartctlNames, attrNames(t, newSMARTHarness(t, "k6.12", func(c *device.Config) { c.DriveDB = in.db }), "sda"))
		})
	}
	t.Run("malformed host file", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, root, hostDriveDB, "garbage")
		logger, obs := observed()
		in := loadDriveDB(logger, root, "", image)
		assert.Equal(t, metadata.AttributeDiskHealthDriveDatabaseSourceImage, in.source)
		assert.Equal(t, 1, obs.FilterLevelExact(zapcore.WarnLevel).Len())
	})
}

// With no database anywhere the attributes are named from smart.go's built-in table, as smartctl
// falls back to its own: no WARN (nothing is lost), the INFO and the database's point say built_in,
// and the QEMU Seagate's attributes carry smart.go's names, not Unknown_Attribute.
func TestNoDriveDBBuiltIn(t *testing.T) {
	logger, obs := observed()
	in := loadDriveDB(logger, t.TempDir(), "", noImage(t))
	assert.Equal(t, driveDBInUse{source: metadata.AttributeDiskHealthDriveDatabaseSourceBuiltIn}, in)
	assert.Zero(t, obs.FilterLevelExact(zapcore.WarnLevel).Len())
	info := obs.FilterMessage("SMART drive database").All()
	require.Len(t, info, 1)
	assert.Equal(t, "built_in (github.com/anatol/smart.go)", info[0].ContextMap()["source"])
	assert.Len(t, info[0].ContextMap()["tried"], 3)

	m := devicetest.QEMU(t, "k6.12")
	set := scrapertest.NewNopSettings(metadata.Type)
	s := newScraper(set, createDefaultConfig(), device.Config{Timeout: 2 * time.Second, Open: m.Open, Library: m.Library(), Discover: m.Discover}, nil, time.Now)
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
	names := attrNames(t, &smartHarness{s: s, m: m}, "sda")
	assert.Equal(t, map[string]bool{"Raw_Read_Error_Rate": true, "Spin_Up_Time": true, "Start_Stop_Count": true, "Reallocated_Sector_Ct": true,
		"Power_On_Hours": true, "Power_Cycle_Count": true, "Airflow_Temperature_Cel": true}, names)
}

// smart.drivedb goes from the configuration to the scraper the factory makes: a file that is not there
// is the one WARN, at creation.
func TestFactoryReadsConfiguredDriveDB(t *testing.T) {
	testkit.DriveDBH(t) // the image's path holds Debian's drivedb.h here too: the fallback, with no WARN
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.RootPath = t.TempDir()
	cfg.DriveDB = filepath.Join(t.TempDir(), "drivedb.h")
	set := scrapertest.NewNopSettings(metadata.Type)
	logger, obs := observed()
	set.Logger = logger
	_, err := f.CreateMetrics(t.Context(), set, cfg)
	require.NoError(t, err)
	warns := obs.FilterLevelExact(zapcore.WarnLevel).All()
	require.Len(t, warns, 1)
	assert.Equal(t, cfg.DriveDB, warns[0].ContextMap()["path"])

	require.NoError(t, os.WriteFile(cfg.DriveDB, []byte(newerDriveDB), 0o644))
	logger, obs = observed()
	set.Logger = logger
	_, err = f.CreateMetrics(t.Context(), set, cfg)
	require.NoError(t, err)
	assert.Zero(t, obs.FilterLevelExact(zapcore.WarnLevel).Len())
	assert.Equal(t, cfg.DriveDB, obs.FilterMessage("SMART drive database").All()[0].ContextMap()["source"])
}

// The database in use is reported on every read, on a resource without a disk: its entries, where it
// came from and its VERSION entry, as the factory loaded it.
func TestDriveDBReported(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, hostDriveDB)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(newerDriveDB), 0o644))
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.RootPath = root
	s, err := f.CreateMetrics(t.Context(), scrapertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, s.Start(t.Context(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, s.Shutdown(context.Background())) })
	md, err := s.ScrapeMetrics(t.Context())
	require.NoError(t, err)
	var got []map[string]any
	pdatawalk.ForEachMetric(md, func(res pcommon.Resource, m pmetric.Metric) {
		if m.Name() != "disk_health.smart.drive_database.entries" {
			return
		}
		assert.Zero(t, res.Attributes().Len(), "no disk's resource")
		dp := m.Gauge().DataPoints().At(0)
		got = append(got, map[string]any{"entries": dp.IntValue(), "attributes": dp.Attributes().AsRaw()})
	})
	assert.Equal(t, []map[string]any{{"entries": int64(1), "attributes": map[string]any{
		"disk_health.drive_database.source": "host", "disk_health.drive_database.local_additions": false,
		"disk_health.drive_database.version": "7.5 $Id: drivedb.h 5800 2026-11-30 chrfranke $",
	}}}, got)

	// A scraper given no database reports smart.go's built-in names, with 0 entries.
	s2 := newScraper(scrapertest.NewNopSettings(metadata.Type), createDefaultConfig(), device.Config{}, nil, time.Now)
	assert.Equal(t, driveDBInUse{source: metadata.AttributeDiskHealthDriveDatabaseSourceBuiltIn}, s2.drivedb)
}

package smartscraper

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/smartscraper/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
)

// newerDriveDB is a drivedb.h as update-smart-drivedb would bring it: the Seagate QEMU's sda poses as
// names its attribute 4 differently than the built-in database does.
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

// A newer drivedb.h on the host renames an attribute with no rebuild: the host's
// /var/lib/smartmontools/drivedb/drivedb.h (under root_path) replaces the built-in database, as it
// does for smartctl.
func TestDriveDBFromHostRenamesAttribute(t *testing.T) {
	before := attrNames(t, newSMARTHarness(t, "k6.12", nil), "sda")
	require.True(t, before["Start_Stop_Count"], "the built-in name: %v", before)

	root := t.TempDir()
	path := filepath.Join(root, hostDriveDB)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(newerDriveDB), 0o644))
	logger, obs := observed()
	in := loadDriveDB(logger, root, "")
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
	in = loadDriveDB(zap.NewNop(), t.TempDir(), path)
	assert.Equal(t, metadata.AttributeDiskHealthDriveDatabaseSourceConfigured, in.source)
	assert.Equal(t, "Start_Stop_Cycles", in.db.LookupDrive("ST4000DM004-2CV104", "", 7200).Def(4).Name)
}

// /etc/smart_drivedb.h's entries go before the database's, as smartctl reads them.
func TestDriveDBHostAdditions(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, hostDriveDBAdditions)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(`{ "Local", "ST4000DM004-2CV104", "", "", "-v 188,raw48,Local_Timeouts" },`), 0o644))
	logger, obs := observed()
	in := loadDriveDB(logger, root, "")
	assert.Equal(t, driveDBInUse{db: in.db, source: metadata.AttributeDiskHealthDriveDatabaseSourceBuiltIn, additions: true}, in)
	assert.Equal(t, "Local_Timeouts", in.db.LookupDrive("ST4000DM004-2CV104", "", 7200).Def(188).Name)
	assert.Equal(t, ata.Builtin().Len()+1, in.db.Len())
	assert.Equal(t, path+" + built-in", obs.FilterMessage("SMART drive database").All()[0].ContextMap()["source"])
}

// A configured file that is missing, a malformed one, and one that is only additions: each is one
// WARN, and the built-in database names the attributes as before. No file on the host is no WARN.
func TestDriveDBFallback(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	builtin := attrNames(t, newSMARTHarness(t, "k6.12", nil), "sda")
	for _, tc := range []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "absent.h"), "no such file or directory"},
		{"malformed", write("bad.h", newerDriveDB+`{ "F", "M(", "", "", "" },`), `line 10: entry "F": model expression`},
		{"truncated", write("cut.h", newerDriveDB[:200]), "string not closed"},
		{"additions only", write("add.h", `{ "F", "M", "", "", "" }`), "no DEFAULT entry"},
		{"directory", dir, "not a regular file"},
		{"too large", write("big.h", newerDriveDB+strings.Repeat(" ", ata.MaxDriveDBSize)), "longer than its size cap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, obs := observed()
			in := loadDriveDB(logger, t.TempDir(), tc.path)
			assert.Same(t, ata.Builtin(), in.db)
			assert.Equal(t, metadata.AttributeDiskHealthDriveDatabaseSourceBuiltIn, in.source)
			warns := obs.FilterLevelExact(zapcore.WarnLevel).All()
			require.Len(t, warns, 1)
			assert.Equal(t, tc.path, warns[0].ContextMap()["path"])
			assert.Contains(t, warns[0].ContextMap()["error"], tc.want)
			assert.Equal(t, builtin, attrNames(t, newSMARTHarness(t, "k6.12", func(c *device.Config) { c.DriveDB = in.db }), "sda"))
		})
	}
	t.Run("no host file", func(t *testing.T) {
		logger, obs := observed()
		assert.Equal(t, driveDBInUse{db: ata.Builtin(), source: metadata.AttributeDiskHealthDriveDatabaseSourceBuiltIn}, loadDriveDB(logger, t.TempDir(), ""))
		assert.Zero(t, obs.FilterLevelExact(zapcore.WarnLevel).Len())
		assert.Equal(t, "built-in", obs.FilterMessage("SMART drive database").All()[0].ContextMap()["source"])
	})
	t.Run("malformed host file", func(t *testing.T) {
		root := t.TempDir()
		path := filepath.Join(root, hostDriveDB)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte("garbage"), 0o644))
		logger, obs := observed()
		assert.Same(t, ata.Builtin(), loadDriveDB(logger, root, "").db)
		assert.Equal(t, 1, obs.FilterLevelExact(zapcore.WarnLevel).Len())
	})
}

// smart.drivedb goes from the configuration to the scraper the factory makes: a file that is not there
// is the one WARN, at creation.
func TestFactoryReadsConfiguredDriveDB(t *testing.T) {
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

	// A scraper given no database reports the built-in one, by its module version.
	h := newSMARTHarness(t, "k6.12", nil)
	pts := map[string]any{}
	pdatawalk.ForEachMetric(h.scrape(t), func(_ pcommon.Resource, m pmetric.Metric) {
		if m.Name() == "disk_health.smart.drive_database.entries" {
			dp := m.Gauge().DataPoints().At(0)
			pts = dp.Attributes().AsRaw()
			assert.Equal(t, int64(ata.Builtin().Len()), dp.IntValue())
		}
	})
	assert.Equal(t, "built_in", pts["disk_health.drive_database.source"])
	assert.Equal(t, ata.Builtin().Version, pts["disk_health.drive_database.version"])
}

//go:build linux

package diskhealthreceiver

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/scraper"
	"go.opentelemetry.io/collector/scraper/scrapertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/sanitize"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/emit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/tick"
)

// churnBad is how many bad /proc/diskstats lines the churning host has: more than a Reporter logs one by
// one (maxLoggedPerChange), so the rest is said as "more scrape problems appeared".
const churnBad = 12

// churnRoot is a host whose loop devices come and go between any two reads of /proc/diskstats, listed
// before disks whose lines are bad: the bad lines' numbers move at every read.
type churnRoot struct {
	t   *testing.T
	dir string
	n   int // reads so far
}

func (r *churnRoot) write(rel, content string) {
	p := filepath.Join(r.dir, rel)
	require.NoError(r.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(r.t, os.WriteFile(p, []byte(content), 0o644))
}

// churn rewrites /proc/diskstats and sysfs with another set of loop devices.
func (r *churnRoot) churn() {
	r.n++
	require.NoError(r.t, os.RemoveAll(filepath.Join(r.dir, "sys", "class", "block")))
	var sb strings.Builder
	device := func(name string, major, minor int) {
		dev := filepath.Join("sys", "devices", "virtual", "block", name)
		r.write(filepath.Join(dev, "dev"), fmt.Sprintf("%d:%d\n", major, minor))
		r.write(filepath.Join(dev, "size"), "2048\n")
		require.NoError(r.t, os.MkdirAll(filepath.Join(r.dir, "sys", "class", "block"), 0o755))
		require.NoError(r.t, os.Symlink(filepath.Join(r.dir, dev), filepath.Join(r.dir, "sys", "class", "block", name)))
	}
	for i := range (r.n * 7) % 13 {
		name := fmt.Sprintf("loop%d", r.n*13+i)
		device(name, 7, r.n*13+i)
		fmt.Fprintf(&sb, "   7 %7d %s 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", r.n*13+i, name)
	}
	device("sda", 8, 0)
	fmt.Fprintf(&sb, "   8       0 sda %d 0 80 5 20 0 160 9 0 14 14 0 0 0 0 0 0\n", 10*r.n)
	for i := range churnBad {
		fmt.Fprintf(&sb, "   8 %7d sdbad%d 1x 0 80 5 20 0 160 9 0 14 14 0 0 0 0 0 0\n", 16+i, i)
	}
	r.write("proc/diskstats", sb.String())
}

// Bad /proc/diskstats lines on a host whose devices churn are each one problem for the receiver: logged
// once, by the source that owns the input (iostat), however many scrapes and sources read them and however
// their line numbers move; "more scrape problems appeared" is said once, not at every scrape.
func TestChurnLogsOneProblemOnce(t *testing.T) {
	r := &churnRoot{t: t, dir: t.TempDir()}
	r.write("proc/stat", "cpu  1 2 3\nbtime 1795932000\n")
	r.write("proc/pressure/io", "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1\n")
	r.write("sys/fs/cgroup/cgroup.controllers", "io\n")
	r.write("sys/fs/cgroup/a.slice/io.stat", "8:0 rbytes=1 wbytes=1 rios=1 wios=1 dbytes=0 dios=0\n")
	r.write("proc/1/mountinfo", "1 0 8:0 / / rw - ext4 /dev/sda rw\n")
	r.churn()
	cfg := propConfig(r.dir)
	require.NoError(t, cfg.Validate())
	interval := cfg.ControllerConfig.CollectionInterval
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	snaps := tick.New(r.dir, func() time.Time { return clock }, nil)

	core, logs := observer.New(zapcore.InfoLevel)
	scrapers := startReported(t, cfg, snaps, core)
	for range 8 {
		for _, s := range scrapers {
			// Each source reads at its own moment, a device set apart from the others'.
			r.churn()
			clock = clock.Add(interval)
			_, err := s.ScrapeMetrics(t.Context())
			require.NoError(t, err, s.name)
		}
	}
	perDevice := map[string]int{}
	var lines []string
	for _, e := range logs.All() {
		p, _ := e.ContextMap()["problem"].(string)
		if !strings.Contains(p, "sdbad") && !strings.Contains(e.Message, "More scrape problems") {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %s: %s", e.ContextMap()["source"], e.Message, p))
		assert.Equal(t, "iostat", e.ContextMap()["source"], "said by the owner of /proc/diskstats: %s", p)
		for i := range churnBad {
			if strings.Contains(p, fmt.Sprintf("(sdbad%d)", i)) {
				perDevice[fmt.Sprint(i)]++
			}
		}
	}
	for dev, n := range perDevice {
		assert.Equal(t, 1, n, "sdbad%s's line is logged once", dev)
	}
	// 12 bad lines are 11 problems (parseerr keeps 10 lines and says "and 2 more"): 10 logged one by one,
	// in any order, the last counted.
	assert.GreaterOrEqual(t, len(perDevice), 9, "the bad lines one by one")
	assert.Equal(t, 1, logs.FilterMessageSnippet("More scrape problems appeared").Len(), "once:\n%s", strings.Join(lines, "\n"))
}

// reportedSource is a source as the receiver runs it: its scraper, wrapped by reported.
type reportedSource struct {
	name string
	scraper.Metrics
}

// startReported starts every enabled source of cfg as the receiver does (reported, one Problems for them
// all, snaps shared), logging to core with the source's name.
func startReported(t *testing.T, cfg *Config, snaps *tick.Shared, core zapcore.Core) []reportedSource {
	t.Helper()
	var notes sanitize.Notes
	var problems emit.Problems
	var out []reportedSource
	for _, src := range cfg.sources(nil, nil, snaps, nil) {
		if !src.enabled {
			continue
		}
		f := reported(src.factory, component.ID{}, &notes, &problems, cfg.MaxPointsPerScrape, nil)
		set := scrapertest.NewNopSettings(f.Type())
		set.Logger = zap.New(core).With(zap.String("source", src.name))
		s, err := f.CreateMetrics(t.Context(), set, src.cfg)
		require.NoError(t, err)
		require.NoError(t, s.Start(t.Context(), componenttest.NewNopHost()))
		t.Cleanup(func() { require.NoError(t, s.Shutdown(t.Context())) })
		out = append(out, reportedSource{src.name, s})
	}
	return out
}

// A bad mount table line is one problem for the receiver, though the filesystem and the stack sources
// both read the table: they parse it with one parser, so it has the same words in both, and it is logged
// once, however many scrapes.
func TestBadMountinfoLineLoggedOnce(t *testing.T) {
	dir := t.TempDir()
	r := &churnRoot{t: t, dir: dir}
	r.write("proc/stat", "cpu  1 2 3\nbtime 1795932000\n")
	r.write("proc/diskstats", "   8       0 sda 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
	r.write("proc/1/mountinfo", "1 0 8:0 / / rw - ext4 /dev/sda rw\nnot a mount\n")
	cfg := propConfig(dir)
	require.NoError(t, cfg.Validate())
	core, logs := observer.New(zapcore.InfoLevel)
	scrapers := startReported(t, cfg, tick.New(dir, time.Now, nil), core)
	for range 5 {
		for _, s := range scrapers {
			_, err := s.ScrapeMetrics(t.Context())
			require.NoError(t, err, s.name)
		}
	}
	var said []string
	for _, e := range logs.All() {
		if fields := fmt.Sprint(e.ContextMap()); strings.Contains(fields, "mountinfo line 2") {
			said = append(said, fmt.Sprintf("%s: %s", e.Message, fields))
		}
	}
	assert.Len(t, said, 1, "one line for the bad line:\n%s", strings.Join(said, "\n"))
}

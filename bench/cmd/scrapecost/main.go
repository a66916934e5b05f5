// Command scrapecost measures the whole-process CPU per scrape and the resident memory of collectors on
// one synthetic root (bench.Generate): the built otelcol-diskhealth with its default output for disks
// and mounts (the iostat, filesystem and capacity sources, bench.DefaultSources, and the receiver's
// disk_health.source.status) and once more emitting only hostmetrics' metric set (parity: iostat and
// filesystem), and a hostmetrics-only collector (hostmetricsreceiver v0.165.1, disk and filesystem
// scrapers; `make build-hostmetrics`). Each exports to a debug exporter at basic verbosity, which logs
// one line per delivered batch with its data point count. They run at the same time, so that all see
// the same load of a shared machine (a scrape every interval keeps each well under a core); each is
// sampled for -duration after -warmup, and its CPU (every thread's schedstat, see footprint) is divided
// by the scrapes delivered in that window (the exporter's batches) and by the data points the exporter
// saw. RSS is read every second: at 30 s after the start and the most of the run.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/diskhealth/diskhealth/bench"
	"github.com/diskhealth/diskhealth/bench/internal/procstat"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"
)

// diskHealthConfig is the otelcol-diskhealth config with the named sources on, every other one off.
func diskHealthConfig(sources []string) string {
	var off strings.Builder
	for _, name := range diskhealthreceiver.Sources() {
		if !slices.Contains(sources, name) {
			fmt.Fprintf(&off, "    %s: {enabled: false}\n", name)
		}
	}
	return `receivers:
  disk_health:
    root_path: %[1]s
    collection_interval: %[2]s
    metrics: %[3]s
` + off.String() + `exporters:
  debug:
    verbosity: basic
service:
  telemetry:
    logs:
      sampling:
        enabled: false
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [disk_health]
      exporters: [debug]
`
}

const hostMetricsConfig = `receivers:
  hostmetrics:
    root_path: %[1]s
    collection_interval: %[2]s
    scrapers:
      disk:
      filesystem:
exporters:
  debug:
    verbosity: basic
service:
  telemetry:
    logs:
      sampling:
        enabled: false
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [hostmetrics]
      exporters: [debug]
`

func main() {
	diskhealth := flag.String("otelcol", "../_build/otelcol-diskhealth", "the otelcol-diskhealth binary")
	hostmetrics := flag.String("hostmetrics", "../_build-hostmetrics/otelcol-hostmetrics", "the hostmetrics-only collector")
	devices := flag.Int("devices", 1000, "NVMe namespaces in the synthetic root")
	mounts := flag.Int("mounts", 5000, "mounts in the synthetic root")
	interval := flag.Duration("interval", 2*time.Second, "collection_interval of both")
	warmup := flag.Duration("warmup", 10*time.Second, "time before sampling starts")
	duration := flag.Duration("duration", time.Minute, "sampling time of each collector")
	flag.Parse()
	if err := run(*diskhealth, *hostmetrics, *devices, *mounts, *interval, *warmup, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "scrapecost:", err)
		os.Exit(1)
	}
}

type result struct {
	name           string
	cpu            time.Duration // in the window
	scrapes        float64
	points, frames int64
	rss30, rssMax  int64 // bytes: 30 s after the start, the most of the run
	anon30         int64 // bytes of rss30 that are anonymous: without the binary's mapped pages
}

func run(diskhealth, hostmetrics string, devices, mounts int, interval, warmup, duration time.Duration) error {
	dir, err := os.MkdirTemp("", "scrapecost-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if _, err := bench.Generate(dir, devices, mounts); err != nil {
		return err
	}
	parity, err := parityYAML()
	if err != nil {
		return err
	}
	all := append(slices.Clone(bench.DefaultSources[bench.Disk]), bench.DefaultSources[bench.Filesystem]...)
	hm := []string{bench.DefaultSources[bench.Disk][0], bench.DefaultSources[bench.Filesystem][0]}
	// batches is how many exporter batches one scrape delivers: disk_health runs each source in a
	// controller of its own, and disk_health.source.status (on by default, off in the parity set) in
	// one more; hostmetrics runs its two scrapers in one.
	var cs []collector
	for _, c := range []struct {
		name, bin, config, metrics string
		batches                    int
	}{
		{"disk_health (iostat + filesystem + capacity, defaults)", diskhealth, diskHealthConfig(all), "{}", len(all) + 1},
		{"disk_health, hostmetrics' metric set (parity: iostat + filesystem)", diskhealth, diskHealthConfig(hm), parity, len(hm)},
		{"hostmetrics v0.165.1 (disk + filesystem)", hostmetrics, hostMetricsConfig, "", 1},
	} {
		cs = append(cs, collector{name: c.name, bin: c.bin, config: fmt.Sprintf(c.config, dir, interval, c.metrics), batches: c.batches})
	}
	results, err := measure(cs, warmup, duration)
	if err != nil {
		return err
	}
	report(os.Stdout, results, devices, mounts, interval, duration)
	return nil
}

// parityYAML is bench.ParityMetrics as a YAML flow mapping.
func parityYAML() (string, error) {
	m, err := bench.ParityMetrics()
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("{")
	for i, name := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: {enabled: %v}", name, m[name].(map[string]any)["enabled"])
	}
	b.WriteString("}")
	return b.String(), nil
}

// Both configs switch off the collector's log sampling, which passes 10 lines of one message in 10 s and
// every 100th after: with a batch per source every interval it dropped most of disk_health's batches
// (4 a scrape) and none of hostmetrics' (1), so scrapes were undercounted on one side only.

// points matches the debug exporter's basic line: `... Metrics {"resource metrics": 1000, "metrics": …, "data points": 40000}`.
var points = regexp.MustCompile(`"data points": (\d+)`)

// collector is one collector of a run.
type collector struct {
	name, bin, config string
	batches           int // exporter batches per scrape
}

// rssAt is when after its start a collector's RSS is reported: the measure, a few scrapes in.
const rssAt = 30 * time.Second

// counter counts the debug exporter's batches and points in the sampling window.
type counter struct {
	mu             sync.Mutex
	counting       bool
	points, frames int64
}

// measure runs the collectors at once and samples each for duration after warmup.
func measure(cs []collector, warmup, duration time.Duration) ([]result, error) {
	cmds := make([]*exec.Cmd, len(cs))
	counters := make([]*counter, len(cs))
	defer func() {
		for _, cmd := range cmds {
			if cmd != nil {
				stop(cmd)
			}
		}
	}()
	start := time.Now()
	for i, c := range cs {
		cmd := exec.Command(c.bin, "--config", "yaml:"+c.config)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		cmds[i], counters[i] = cmd, &counter{}
		go counters[i].read(stderr)
	}
	results := make([]result, len(cs))
	var c0 []time.Duration
	end := start.Add(warmup + duration)
	for now := time.Now(); now.Before(end); now = time.Now() {
		if c0 == nil && now.Sub(start) >= warmup {
			for i, c := range cs {
				cpu, err := procstat.SchedCPU(cmds[i].Process.Pid)
				if err != nil {
					return nil, fmt.Errorf("%s exited during warm-up: %w", c.name, err)
				}
				c0 = append(c0, cpu)
				counters[i].start()
			}
		}
		for i, c := range cs {
			mem, err := procstat.Memory(cmds[i].Process.Pid)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			results[i].rssMax = max(results[i].rssMax, mem.RSS)
			if results[i].rss30 == 0 && now.Sub(start) >= rssAt {
				results[i].rss30, results[i].anon30 = mem.RSS, mem.Anon
			}
		}
		time.Sleep(time.Second)
	}
	for i, c := range cs {
		c1, err := procstat.SchedCPU(cmds[i].Process.Pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		pts, frames := counters[i].stop()
		// Scrapes are counted as delivered, not assumed from the interval: on a loaded machine a scrape
		// can start late, and dividing by duration/interval would then understate the CPU per scrape.
		if frames < int64(c.batches) {
			return nil, fmt.Errorf("%s: %d batches delivered in %v", c.name, frames, duration)
		}
		r := &results[i]
		r.name, r.cpu, r.points, r.frames = c.name, c1-c0[i], pts, frames
		r.scrapes = float64(frames) / float64(c.batches)
	}
	return results, nil
}

// read counts the batches the debug exporter logs to stderr while counting.
func (c *counter) read(stderr io.Reader) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := points.FindSubmatch(sc.Bytes()); m != nil {
			n, _ := strconv.ParseInt(string(m[1]), 10, 64)
			c.mu.Lock()
			if c.counting {
				c.points += n
				c.frames++
			}
			c.mu.Unlock()
		}
	}
	_, _ = io.Copy(io.Discard, stderr)
}

func (c *counter) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counting = true
}

func (c *counter) stop() (points, frames int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counting = false
	return c.points, c.frames
}

func report(w io.Writer, rs []result, devices, mounts int, interval, duration time.Duration) {
	fmt.Fprintf(w, "\n## Whole process: CPU per scrape (%d devices + %d mounts, interval %v, %v sampled, all running at once, debug exporter)\n\n",
		devices, mounts, interval, duration)
	// Anonymous memory is RSS without the binary's own touched pages, which grow with the components
	// linked into a distribution (disk_health's is 128 MB, hostmetrics' 57 MB), not with the receiver.
	fmt.Fprintln(w, "| collector | CPU/scrape | points/scrape | CPU/point | CPU vs hostmetrics | RSS at 30 s | RSS max | RSS at 30 s vs hostmetrics | anon at 30 s | anon vs hostmetrics |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	// The last collector (hostmetrics) is the reference.
	last := rs[len(rs)-1]
	base := last.cpu.Seconds() / last.scrapes
	for _, r := range rs {
		per := r.cpu.Seconds() / r.scrapes
		pps := float64(r.points) / r.scrapes
		perPoint := "–"
		if r.points > 0 {
			perPoint = fmt.Sprintf("%.2f µs", 1e6*r.cpu.Seconds()/float64(r.points))
		}
		// A run shorter than rssAt has no RSS at 30 s.
		rss30, rssVs, anon30, anonVs := "–", "–", "–", "–"
		if r.rss30 > 0 && last.rss30 > 0 {
			rss30, rssVs = fmt.Sprintf("%.1f MiB", float64(r.rss30)/(1<<20)), fmt.Sprintf("%.2f×", float64(r.rss30)/float64(last.rss30))
		}
		if r.anon30 > 0 && last.anon30 > 0 {
			anon30, anonVs = fmt.Sprintf("%.1f MiB", float64(r.anon30)/(1<<20)), fmt.Sprintf("%.2f×", float64(r.anon30)/float64(last.anon30))
		}
		fmt.Fprintf(w, "| %s | %.1f ms | %.0f | %s | %.2f× | %s | %.1f MiB | %s | %s | %s |\n", r.name, 1e3*per, pps, perPoint, per/base,
			rss30, float64(r.rssMax)/(1<<20), rssVs, anon30, anonVs)
	}
}

func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

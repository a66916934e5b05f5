// Command scrapecost measures the whole-process CPU per scrape of two collectors on one synthetic root
// (bench.Generate): the built otelcol-diskhealth with its iostat and filesystem sources at their
// defaults and once more emitting only hostmetrics' metric set (parity), and a hostmetrics-only collector (hostmetricsreceiver v0.165.1, disk and filesystem
// scrapers; `make build-hostmetrics`). Both export to the same debug exporter at basic verbosity, which
// logs one line per delivered batch with its data point count. They run one after the other, so
// neither competes with the other for the machine's cores; each is sampled for -duration after
// -warmup, and its CPU (every thread's schedstat, see footprint) is divided by the scrapes delivered in
// that window (the exporter's batches) and by the data points the exporter saw.
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

// diskHealthConfig is the otelcol-diskhealth config: iostat and filesystem, every other source off.
func diskHealthConfig() string {
	var off strings.Builder
	for _, name := range diskhealthreceiver.Sources() {
		if name != "iostat" && name != "filesystem" {
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
	var results []result
	// batches is how many exporter batches one scrape delivers: disk_health's two sources run in
	// controllers of their own, hostmetrics' two scrapers in one.
	for _, c := range []struct {
		name, bin, config, metrics string
		batches                    int
	}{
		{"disk_health (iostat + filesystem, defaults)", diskhealth, diskHealthConfig(), "{}", 2},
		{"disk_health, hostmetrics' metric set (parity)", diskhealth, diskHealthConfig(), parity, 2},
		{"hostmetrics v0.165.1 (disk + filesystem)", hostmetrics, hostMetricsConfig, "", 1},
	} {
		cfg := fmt.Sprintf(c.config, dir, interval, c.metrics)
		r, err := measure(c.name, c.bin, cfg, c.batches, warmup, duration)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		results = append(results, r)
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

// points matches the debug exporter's basic line: `... Metrics {"resource metrics": 1000, "metrics": …, "data points": 40000}`.
var points = regexp.MustCompile(`"data points": (\d+)`)

func measure(name, bin, config string, batches int, warmup, duration time.Duration) (result, error) {
	cmd := exec.Command(bin, "--config", "yaml:"+config)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return result{}, err
	}
	cmd.Stdout = nil
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	defer stop(cmd)
	var mu sync.Mutex
	var counting bool
	var pts, frames int64
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if m := points.FindSubmatch(sc.Bytes()); m != nil {
				n, _ := strconv.ParseInt(string(m[1]), 10, 64)
				mu.Lock()
				if counting {
					pts += n
					frames++
				}
				mu.Unlock()
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	time.Sleep(warmup)
	c0, err := procstat.SchedCPU(cmd.Process.Pid)
	if err != nil {
		return result{}, fmt.Errorf("exited during warm-up: %w", err)
	}
	mu.Lock()
	counting = true
	mu.Unlock()
	time.Sleep(duration)
	c1, err := procstat.SchedCPU(cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	// Scrapes are counted as delivered, not assumed from the interval: on a loaded machine a scrape
	// can start late, and dividing by duration/interval would then understate the CPU per scrape.
	if frames < int64(batches) {
		return result{}, fmt.Errorf("%d batches delivered in %v", frames, duration)
	}
	return result{name: name, cpu: c1 - c0, scrapes: float64(frames) / float64(batches), points: pts, frames: frames}, nil
}

func report(w io.Writer, rs []result, devices, mounts int, interval, duration time.Duration) {
	fmt.Fprintf(w, "\n## Whole process: CPU per scrape (%d devices + %d mounts, interval %v, %v sampled each, debug exporter)\n\n",
		devices, mounts, interval, duration)
	fmt.Fprintln(w, "| collector | CPU/scrape | points/scrape | CPU/point | vs hostmetrics |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
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
		fmt.Fprintf(w, "| %s | %.1f ms | %.0f | %s | %.2f× |\n", r.name, 1e3*per, pps, perPoint, per/base)
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

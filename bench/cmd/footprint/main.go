// Command footprint measures the running collector's cost on this host: it starts the distribution
// twice at once, with the disk_health default configuration and with only an otlp receiver (same
// exporters), and samples both processes' CPU time and RSS from /proc/<pid>/stat and status. The
// difference is the receiver's marginal cost; running both together exposes them to the same load.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/diskhealth/diskhealth/bench/internal/procstat"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat; 100 on every Linux ABI Go
// supports.
const clockTicks = 100

// baseline is the comparison distribution's configuration: the default's exporters, no disk_health.
const baseline = `receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
exporters:
  debug:
    verbosity: normal
  prometheus:
    endpoint: 127.0.0.1:%d
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [debug, prometheus]
`

func main() {
	otelcol := flag.String("otelcol", "../_build/otelcol-diskhealth", "the collector binary")
	config := flag.String("config", "../config/default.yaml", "the disk_health configuration")
	warmup := flag.Duration("warmup", 15*time.Second, "time before sampling starts")
	duration := flag.Duration("duration", 3*time.Minute, "sampling time")
	interval := flag.Duration("interval", 0, "disk_health collection_interval instead of the configuration's")
	flag.Parse()
	if err := run(*otelcol, *config, *interval, *warmup, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(1)
	}
}

// sample is one reading of a process.
type sample struct {
	cpu  time.Duration // user+system so far
	rss  int64         // bytes
	anon int64         // of rss: anonymous (the heap, stacks, the runtime)
	file int64         // of rss: the mapped binary's pages
}

type proc struct {
	name    string
	cmd     *exec.Cmd
	first   sample
	at      time.Time
	last    sample
	lastAt  time.Time
	rssSum  int64
	rssMax  int64
	anonSum int64
	fileSum int64
	samples int
}

func run(otelcol, config string, interval, warmup, duration time.Duration) error {
	dir, err := os.MkdirTemp("", "footprint-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	base := filepath.Join(dir, "baseline.yaml")
	if err := os.WriteFile(base, fmt.Appendf(nil, baseline, ports[0], ports[1]), 0o644); err != nil {
		return err
	}
	// The default configuration as shipped, but on a free Prometheus port and without the collector's
	// own telemetry server (both runs drop it, so neither pays for it or collides on its port).
	full := []string{"--config", config,
		"--config", fmt.Sprintf("yaml:exporters::prometheus::endpoint: 127.0.0.1:%d", ports[2]),
		"--config", "yaml:service::telemetry::metrics::level: none"}
	if interval > 0 {
		full = append(full, "--config", "yaml:receivers::disk_health::collection_interval: "+interval.String())
	}
	procs := []*proc{
		{name: "disk_health (config/default.yaml)", cmd: exec.Command(otelcol, full...)},
		{name: "otlp receiver only", cmd: exec.Command(otelcol, "--config", base)},
	}
	for _, p := range procs {
		// The debug exporter's output is part of the cost; where it goes is not.
		p.cmd.Stdout, p.cmd.Stderr = nil, nil
		if err := p.cmd.Start(); err != nil {
			stop(procs)
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	defer stop(procs)
	time.Sleep(warmup)
	for _, p := range procs {
		s, err := read(p.cmd.Process.Pid)
		if err != nil {
			return fmt.Errorf("%s exited during warm-up: %w", p.name, err)
		}
		p.first, p.at = s, time.Now()
	}
	end := time.Now().Add(duration)
	for time.Now().Before(end) {
		time.Sleep(time.Second)
		for _, p := range procs {
			s, err := read(p.cmd.Process.Pid)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			p.last, p.lastAt = s, time.Now()
			p.rssSum += s.rss
			p.anonSum += s.anon
			p.fileSum += s.file
			p.rssMax = max(p.rssMax, s.rss)
			p.samples++
		}
	}
	report(procs, duration)
	return nil
}

func report(procs []*proc, duration time.Duration) {
	fmt.Printf("\n## Collector footprint (%v sampled after warm-up, both running at once)\n\n", duration)
	// RSS is split into anonymous memory (what the process allocated) and file-backed pages (the
	// binary's text, rodata and pclntab that it touched): the second grows with the components linked
	// in, not with anything the configuration runs, and both processes map the same binary.
	fmt.Println("| process | CPU (of one core) | CPU-s/day | RSS mean | RSS max | anon mean | file mean |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	var cpu, rss, anon, file [2]float64
	const mib = 1 << 20
	for i, p := range procs {
		used := p.last.cpu - p.first.cpu
		frac := used.Seconds() / p.lastAt.Sub(p.at).Seconds()
		n := float64(p.samples)
		cpu[i], rss[i] = frac, float64(p.rssSum)/n
		anon[i], file[i] = float64(p.anonSum)/n, float64(p.fileSum)/n
		fmt.Printf("| %s | %.3f%% | %.0f | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB |\n", p.name, 100*frac, frac*86400,
			rss[i]/mib, float64(p.rssMax)/mib, anon[i]/mib, file[i]/mib)
	}
	fmt.Printf("| **marginal (difference)** | %.3f%% | %.0f | %.1f MiB | | %.1f MiB | %.1f MiB |\n", 100*(cpu[0]-cpu[1]),
		(cpu[0]-cpu[1])*86400, (rss[0]-rss[1])/mib, (anon[0]-anon[1])/mib, (file[0]-file[1])/mib)
}

func stop(procs []*proc) {
	for _, p := range procs {
		if p.cmd.Process == nil {
			continue
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	}
}

// read takes CPU time and RSS from /proc/<pid>.
func read(pid int) (sample, error) {
	ticks, err := statCPU(pid)
	if err != nil {
		return sample{}, err
	}
	mem, err := procstat.Memory(pid)
	if err != nil {
		return sample{}, err
	}
	s := sample{cpu: ticks, rss: mem.RSS, anon: mem.Anon, file: mem.File}
	// schedstat counts nanoseconds; stat's 10 ms ticks are too coarse for a process that works a
	// millisecond every few seconds. Use ticks only where schedstat is missing.
	if ns, err := procstat.SchedCPU(pid); err == nil {
		s.cpu = ns
	}
	return s, nil
}

// statCPU is utime+stime from /proc/<pid>/stat (fields 14 and 15); it also tells a zombie.
func statCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after it start past its ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 || f[0] == "Z" {
		return 0, fmt.Errorf("process %d gone", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

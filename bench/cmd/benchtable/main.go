// Command benchtable reads `go test -bench` output on stdin and prints Markdown tables of the medians
// of repeated runs (-count): hostmetrics and disk_health side by side with their ratios, the combined
// scrape, the cost per data point, the diskstats floor and every other benchmark.
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// result is the medians of one benchmark's runs, by unit (ns/op, B/op, allocs/op, cpu-ns/op, ...).
type result map[string]float64

var (
	line   = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)
	metric = regexp.MustCompile(`(-?[0-9.e+]+) (\S+)`)
	side   = regexp.MustCompile(`^Benchmark(Disk|Filesystem)/(devices|mounts)=(\d+)/recv=(\S+)$`)
	floor  = regexp.MustCompile(`^BenchmarkDiskstatsFloor/devices=(\d+)$`)
	// The block latency source's benchmarks (biolat, latencyscraper), in a section of their own.
	latencyBench = regexp.MustCompile(`^Benchmark(BPFRunTimePerIO|FioIOPS|ProbeMemory|Snapshot|LatencyScrape)/`)
	// The file latency source's (filelat), in a section of their own.
	fileBench = regexp.MustCompile(`^Benchmark(BPFRunTimePerOp/|BPFParts/|FileFioIOPS/|FileProbeMemory$)`)
)

func main() {
	results, order, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	print(os.Stdout, results, order)
}

func parse(r io.Reader) (map[string]result, []string, error) {
	runs := map[string]map[string][]float64{}
	var order []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name := m[1]
		if runs[name] == nil {
			runs[name] = map[string][]float64{}
			order = append(order, name)
		}
		for _, kv := range metric.FindAllStringSubmatch(m[2], -1) {
			v, err := strconv.ParseFloat(kv[1], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", sc.Text(), err)
			}
			runs[name][kv[2]] = append(runs[name][kv[2]], v)
		}
	}
	out := map[string]result{}
	for name, units := range runs {
		out[name] = result{}
		for u, vs := range units {
			out[name][u] = median(vs)
		}
	}
	return out, order, sc.Err()
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// receivers are the configurations of the side-by-side suite, in table order.
var receivers = []string{"hostmetrics", "disk_health", "disk_health_parity", "hostmetrics_engine", "disk_health_engine"}

// key is one side-by-side case.
type key struct {
	source string
	size   int
}

func print(w io.Writer, results map[string]result, order []string) {
	cases := map[key]map[string]result{}
	var keys []key
	var floors []int
	var other, lat, files []string
	for _, name := range order {
		if m := side.FindStringSubmatch(name); m != nil {
			n, _ := strconv.Atoi(m[3])
			k := key{m[1], n}
			if cases[k] == nil {
				cases[k] = map[string]result{}
				keys = append(keys, k)
			}
			cases[k][m[4]] = results[name]
			continue
		}
		if m := floor.FindStringSubmatch(name); m != nil {
			n, _ := strconv.Atoi(m[1])
			floors = append(floors, n)
			continue
		}
		if latencyBench.MatchString(name) {
			lat = append(lat, name)
			continue
		}
		if fileBench.MatchString(name) {
			files = append(files, name)
			continue
		}
		other = append(other, name)
	}
	for _, src := range []string{"Disk", "Filesystem"} {
		if !slices.ContainsFunc(keys, func(k key) bool { return k.source == src }) {
			continue // a run of other benchmarks only (make bench-latency)
		}
		unit := map[string]string{"Disk": "devices", "Filesystem": "mounts"}[src]
		fmt.Fprintf(w, "\n## %s scrape, medians per completed scrape\n\n", src)
		fmt.Fprintf(w, "| %s | receiver | wall | CPU | B/op | allocs/op | points | CPU/point | allocs/point | CPU vs hm | allocs vs hm |\n", unit)
		fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, k := range keys {
			if k.source != src {
				continue
			}
			hm := cases[k]["hostmetrics"]
			for _, recv := range receivers {
				r, ok := cases[k][recv]
				if !ok {
					continue
				}
				perPoint, allocsPerPoint := "–", "–"
				if r["points/op"] > 0 {
					perPoint = dur(r["cpu-ns/op"] / r["points/op"])
					allocsPerPoint = fmt.Sprintf("%.1f", r["allocs/op"]/r["points/op"])
				}
				fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %.0f | %s | %s | %s | %s |\n", k.size, recv,
					dur(r["ns/op"]), dur(r["cpu-ns/op"]), size(r["B/op"]), count(r["allocs/op"]), r["points/op"],
					perPoint, allocsPerPoint,
					ratio(r["cpu-ns/op"], hm["cpu-ns/op"]), ratio(r["allocs/op"], hm["allocs/op"]))
			}
		}
	}
	combined(w, cases, 1000, 5000)
	if len(floors) > 0 {
		fmt.Fprintln(w, "\n## Floor: open, read and split /proc/diskstats, nothing else\n\n| devices | wall | B/op | allocs/op |\n|---:|---:|---:|---:|")
		for _, n := range floors {
			r := results[fmt.Sprintf("BenchmarkDiskstatsFloor/devices=%d", n)]
			fmt.Fprintf(w, "| %d | %s | %s | %s |\n", n, dur(r["ns/op"]), size(r["B/op"]), count(r["allocs/op"]))
		}
	}
	latency(w, results, lat)
	fileLatency(w, results, files)
	if len(other) > 0 {
		fmt.Fprintln(w, "\n## The receiver's own benchmarks\n\n| benchmark | time/op | B/op | allocs/op | other |\n|---|---:|---:|---:|---|")
		for _, name := range other {
			r := results[name]
			var extra []string
			for u, v := range r {
				if u != "ns/op" && u != "B/op" && u != "allocs/op" {
					extra = append(extra, fmt.Sprintf("%s %s", strconv.FormatFloat(v, 'g', 4, 64), u))
				}
			}
			slices.Sort(extra)
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", strings.TrimPrefix(name, "Benchmark"), dur(r["ns/op"]), size(r["B/op"]), count(r["allocs/op"]), strings.Join(extra, ", "))
		}
	}
}

// latencyBudget is the BPF run time per I/O budget by probe configuration: issue 12's for the
// per-device path, issue 22's for what the per-cgroup probe adds (its per-cgroup-ns/io).
var latencyBudget = map[string]string{"default": "≤ 400 ns", "device_time": "≤ 1.5 µs", "default+per_cgroup": "per-cgroup ≤ 1 µs added"}

// latency prints the block latency source's tables: BPF run time per I/O (with the peer), fio IOPS
// with and without the probe, memory per device, and the scrape's cost per device.
func latency(w io.Writer, results map[string]result, names []string) {
	if len(names) == 0 {
		return
	}
	group := func(prefix string) []string { return withPrefix(names, prefix) }
	if g := group("BenchmarkBPFRunTimePerIO/"); len(g) > 0 {
		fmt.Fprintln(w, "\n## Block latency: BPF run time per I/O (kernel.bpf_stats_enabled), medians\n\n| probe | per I/O | budget | by program |\n|---|---:|---|---|")
		for _, n := range g {
			r := results[n]
			var progs []string
			for u, v := range r {
				if p, ok := strings.CutSuffix(u, "-ns/io"); ok && p != "bpf" {
					progs = append(progs, fmt.Sprintf("%s %.0f ns", p, v))
				}
			}
			slices.Sort(progs)
			cfg := strings.TrimPrefix(n, "BenchmarkBPFRunTimePerIO/")
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", cfg, dur(r["bpf-ns/io"]), or(latencyBudget[cfg], "peer"), strings.Join(progs, ", "))
		}
	}
	if g := group("BenchmarkFioIOPS/"); len(g) > 0 {
		fmt.Fprintln(w, "\n## Block latency: fio IOPS, qd16 4 KiB random reads on a loop device (medians of 3 A/B pairs)\n\n| B arm | IOPS without | IOPS with | loss | budget |\n|---|---:|---:|---:|---|")
		for _, n := range g {
			r := results[n]
			cfg := strings.TrimPrefix(n, "BenchmarkFioIOPS/")
			budget := "≤ 5 %"
			switch cfg {
			case "control":
				budget = "noise (nothing attached)"
			case "per_cgroup":
				budget = "≤ 3 % on top of default"
			}
			fmt.Fprintf(w, "| %s | %.0f | %.0f | %.1f %% | %s |\n", cfg, r["iops-off"], r["iops-on"], r["loss-%"], budget)
		}
	}
	if g := group("BenchmarkProbeMemory/"); len(g) > 0 {
		fmt.Fprintln(w, "\n## Block latency: memory per device\n\n| probe | BPF maps per device | Go heap per device | BPF maps fixed | BPF maps at max_devices 64 |\n|---|---:|---:|---:|---:|")
		for _, n := range g {
			r := results[n]
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", strings.TrimPrefix(n, "BenchmarkProbeMemory/"),
				size(r["map-B/device"]), size(r["go-heap-B/device"]), size(r["map-B-fixed"]), size(r["map-B@64"]))
		}
	}
	if g := append(group("BenchmarkSnapshot/"), group("BenchmarkLatencyScrape/")...); len(g) > 0 {
		fmt.Fprintln(w, "\n## Block latency: user-space cost per scrape, per device\n\n| step | devices | per device | B/device | allocs/device | heap kept/device |\n|---|---:|---:|---:|---:|---:|")
		for _, n := range g {
			r := results[n]
			step, devs, _ := strings.Cut(strings.TrimPrefix(n, "Benchmark"), "/devices=")
			per := func(u string, f func(float64) string) string {
				if v, ok := r[u]; ok {
					return f(v)
				}
				if d, err := strconv.ParseFloat(devs, 64); err == nil && d > 0 && r[strings.TrimSuffix(u, "/device")+"/op"] > 0 {
					return f(r[strings.TrimSuffix(u, "/device")+"/op"] / d)
				}
				return "–"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", map[string]string{"Snapshot": "biolat Collect (map read)", "LatencyScrape": "scrape (pdata, fake probe)"}[step], devs,
				per("ns/device", dur), per("B/device", size), per("allocs/device", count), per("heap-B/device", size))
		}
	}
}

// fileLatency prints the file latency source's tables against issue 35's targets: BPF run time per
// call, fio IOPS loss from the page cache and from a disk, memory per mount and per cgroup series.
func fileLatency(w io.Writer, results map[string]result, names []string) {
	group := func(prefix string) []string { return withPrefix(names, prefix) }
	met := func(v, limit float64) string {
		if v <= limit {
			return "met"
		}
		return "not met"
	}
	if g := group("BenchmarkBPFRunTimePerOp/"); len(g) > 0 {
		fmt.Fprintln(w, "\n## File latency: BPF run time per call (kernel.bpf_stats_enabled), medians\n\n"+
			"| call | programs | own per call | all runs per call | runs per call | target |\n|---|---|---:|---:|---:|---|")
		for _, n := range g {
			r := results[n]
			call, mode, _ := strings.Cut(strings.TrimPrefix(n, "BenchmarkBPFRunTimePerOp/"), "/")
			target := "–"
			if call != "getppid" && strings.HasPrefix(mode, "probe=on") {
				target = "≤ 300 ns: " + met(r["own-bpf-ns/op"], 300)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %.2f | %s |\n", call, mode, dur(r["own-bpf-ns/op"]), dur(r["bpf-ns/op"]), r["bpf-runs/op"], target)
		}
	}
	if g := group("BenchmarkBPFParts/"); len(g) > 0 {
		fmt.Fprintln(w, "\n## File latency: the price of a program's steps (one-step programs on sys_enter), medians\n\n| step | per run |\n|---|---:|")
		for _, n := range g {
			fmt.Fprintf(w, "| %s | %s |\n", strings.TrimPrefix(n, "BenchmarkBPFParts/"), dur(results[n]["ns/run"]))
		}
	}
	if g := group("BenchmarkFileFioIOPS/"); len(g) > 0 {
		fmt.Fprintln(w, "\n## File latency: fio 4 KiB random reads (psync), probe off and on in alternating rounds (medians)\n\n"+
			"| reads from / B arm | IOPS off | IOPS on | IOPS loss | CPU per read off | on | CPU loss | target |\n|---|---:|---:|---:|---:|---:|---:|---|")
		for _, n := range g {
			r := results[n]
			cfg := strings.TrimPrefix(n, "BenchmarkFileFioIOPS/")
			target := "noise (nothing attached)"
			switch {
			case strings.HasPrefix(cfg, "page_cache/probe=on"):
				target = "≤ 10 %: " + met(r["cpu-loss-%"], 10) + " (CPU loss)"
			case strings.HasPrefix(cfg, "disk/probe=on"):
				target = "≤ 2 %: " + met(r["loss-%"], 2) + " (IOPS loss)"
				if c, ok := results["BenchmarkFileFioIOPS/disk/control"]; ok && math.Abs(c["loss-%"]) >= 2 {
					target = fmt.Sprintf("≤ 2 %%: not resolved (control moved %.1f %%)", c["loss-%"])
				}
			}
			fmt.Fprintf(w, "| %s | %.0f | %.0f | %.1f %% | %s | %s | %.1f %% | %s |\n", cfg, r["iops-off"], r["iops-on"], r["loss-%"],
				dur(r["cpu-ns/read-off"]), dur(r["cpu-ns/read-on"]), r["cpu-loss-%"], target)
		}
	}
	if r, ok := results["BenchmarkFileProbeMemory"]; ok {
		fmt.Fprintf(w, "\n## File latency: memory\n\n| BPF maps per mount | per cgroup series | fixed | at 256 mounts | per-cgroup table at 1024 | Go heap kept per mount | Collect per series |\n"+
			"|---:|---:|---:|---:|---:|---:|---:|\n| %s | %s | %s | %s | %s | %s | %s |\n",
			size(r["map-B/mount"]), size(r["map-B/cgroup-series"]), size(r["map-B-fixed"]), size(r["map-B@256mounts"]),
			size(r["map-B-per-cgroup-table@1024"]), size(r["go-heap-B/mount"]), size(r["collect-B/series"]))
	}
}

// withPrefix is the names that begin with prefix, in their order.
func withPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// combined is the yardstick: a disk scrape of n devices plus a filesystem scrape of m mounts.
func combined(w io.Writer, cases map[key]map[string]result, n, m int) {
	d, f := cases[key{"Disk", n}], cases[key{"Filesystem", m}]
	if d == nil || f == nil {
		return
	}
	fmt.Fprintf(w, "\n## Disk (%d devices) + filesystem (%d mounts)\n\n| receiver | wall | CPU | allocs | points | wall vs hm | CPU vs hm | allocs vs hm |\n|---|---:|---:|---:|---:|---:|---:|---:|\n", n, m)
	sum := func(recv, unit string) float64 { return d[recv][unit] + f[recv][unit] }
	for _, recv := range receivers {
		if d[recv] == nil || f[recv] == nil {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.0f | %s | %s | %s |\n", recv, dur(sum(recv, "ns/op")), dur(sum(recv, "cpu-ns/op")),
			count(sum(recv, "allocs/op")), sum(recv, "points/op"),
			ratio(sum(recv, "ns/op"), sum("hostmetrics", "ns/op")), ratio(sum(recv, "cpu-ns/op"), sum("hostmetrics", "cpu-ns/op")),
			ratio(sum(recv, "allocs/op"), sum("hostmetrics", "allocs/op")))
	}
}

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func dur(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func size(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

func count(n float64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", n/1e3)
	}
	return fmt.Sprintf("%.0f", n)
}

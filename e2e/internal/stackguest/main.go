//go:build linux

// Command stackguest runs inside the QEMU VM of the storage-stack end-to-end test
// (e2e/stack_qemu_test.go): it starts the disk_health receiver with only the stack source, builds an
// md RAID1 over two scsi_debug disks, a dm thin pool over null_blk and a dm-multipath map over two
// null_blk paths, breaks each the way the test asks (mdadm --fail, remove and re-add; filling the pool
// past its threshold and out of space; dmsetup fail_path), and prints what the tools (mdadm --detail,
// /proc/mdstat, dmsetup status) and the receiver's exports said at each step as one JSON line for the
// host test to compare. It is built by that test and means nothing outside the VM.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"
)

const (
	markerBundle = "DISKHEALTH-STACK-BUNDLE "
	interval     = time.Second
	wait         = 60 * time.Second
)

// Check is one comparison: what the tool (or the test's action) says, and what the receiver exported.
type Check struct {
	What string `json:"what"`
	Want string `json:"want"`
	Got  string `json:"got"`
}

// Part is one subtest's observations.
type Part struct {
	Checks []Check            `json:"checks"`
	Tools  map[string]string  `json:"tools"`  // tool outputs by step
	Series map[string]float64 `json:"series"` // numbers worth printing (progress samples ...)
	Logs   []string           `json:"logs"`
	Errors []string           `json:"errors"`
}

// Bundle is what the guest reports.
type Bundle struct {
	Kernel string           `json:"kernel"`
	Parts  map[string]*Part `json:"parts"`
	Errors []string         `json:"errors"`
}

type env struct {
	ms   *consumertest.MetricsSink
	ls   *consumertest.LogsSink
	part *Part
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == argUnprivileged {
		unprivileged()
		return
	}
	b := &Bundle{Parts: map[string]*Part{}}
	if k, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		b.Kernel = strings.TrimSpace(string(k))
	}
	err := run(b)
	if err != nil {
		b.Errors = append(b.Errors, err.Error())
	}
	out, _ := json.Marshal(b)
	fmt.Printf("%s%s\n", markerBundle, out)
	if err != nil {
		os.Exit(1)
	}
}

func run(b *Bundle) error {
	_ = os.MkdirAll("/run", 0o755)
	stop, ms, ls, err := start(zap.NewNop(), false)
	if err != nil {
		return err
	}
	defer stop()
	if err := loadExtraModules(); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		f    func(*env) error
	}{{"md", mdPart}, {"thin", thinPart}, {"multipath", multipathPart}, {"unprivileged", unprivilegedPart}} {
		part := &Part{Tools: map[string]string{}, Series: map[string]float64{}}
		b.Parts[p.name] = part
		if err := p.f(&env{ms: ms, ls: ls, part: part}); err != nil {
			part.Errors = append(part.Errors, err.Error())
		}
	}
	return nil
}

// start runs the receiver with the stack source, and the I/O source if iostat, a scrape each interval.
func start(logger *zap.Logger, iostat bool) (stop func(), ms *consumertest.MetricsSink, ls *consumertest.LogsSink, err error) {
	return guestrx.Start(logger, diskhealthreceiver.Only("stack"), map[string]any{
		"collection_interval": interval.String(),
		"iostat":              map[string]any{"enabled": iostat},
	})
}

// loadExtraModules inserts the harness's extra modules in order: null_blk with four memory-backed
// 1 GiB devices (pages are allocated only when written), md and the dm targets.
func loadExtraModules() error {
	list, err := readFile("/lib/modules/extra/extra.list")
	if err != nil {
		return err
	}
	params := map[string][]string{"null_blk.ko": {"nr_devices=4", "memory_backed=1", "gb=1"}}
	for _, m := range strings.Fields(list) {
		args := append([]string{"/lib/modules/extra/" + m}, params[m]...)
		if out, err := exec.Command("insmod", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("insmod %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return waitFile("/sys/block/nullb3", 10*time.Second)
}

// ---- md ----

func mdPart(e *env) error {
	disks, err := scsiDebugDisks(2)
	if err != nil {
		return err
	}
	a, b := disks[0], disks[1]
	e.part.Logs = append(e.part.Logs, "members "+a+" "+b)
	if _, err := e.sh("mdadm", "--create", "/dev/md0", "--run", "--level=1", "--raid-devices=2", "--metadata=1.2",
		"--assume-clean", "/dev/"+a, "/dev/"+b); err != nil {
		return err
	}
	id, err := md0ID()
	if err != nil {
		return err
	}
	// Healthy.
	md, err := e.export(e.count(), "md0 in an export", func(md pmetric.Metrics) bool { return has(md, "hw.status", id, nil) })
	if err != nil {
		return err
	}
	if err := e.compareMD("clean", md, id, a, b, ""); err != nil {
		return err
	}

	// Fail one member.
	logsFrom := e.ls.LogRecordCount()
	from := e.count()
	if _, err := e.sh("mdadm", "/dev/md0", "--fail", "/dev/"+b); err != nil {
		return err
	}
	md, err = e.export(from, "md0 degraded", func(md pmetric.Metrics) bool { return status(md, id) == "degraded" })
	if err != nil {
		return err
	}
	if err := e.compareMD("failed", md, id, a, b, b); err != nil {
		return err
	}
	parent := attr(md, "hw.logical_disk.md.member.state", id, map[string]string{"md.member": b}, "hw.parent")
	e.check("failed: member "+b+" has a hw.id (hw.parent)", "yes", yes(parent != ""))
	time.Sleep(2 * interval) // later scrapes must not repeat the event
	evs := events(e.ls, logsFrom, id)
	e.part.Logs = append(e.part.Logs, evs...)
	e.check("failed: state-change events of md0", "1", strconv.Itoa(len(evs)))
	if len(evs) > 0 {
		e.check("failed: the event names the member", "yes", yes(strings.Contains(evs[0], b)))
		e.check("failed: the event names the member's hw.id "+parent, "yes", yes(parent != "" && strings.Contains(evs[0], parent)))
	}

	// Remove, throttle the recovery so that scrapes see it run, re-add.
	if _, err := e.sh("mdadm", "/dev/md0", "--remove", "/dev/"+b); err != nil {
		return err
	}
	for f, v := range map[string]string{"sync_speed_min": "64", "sync_speed_max": "512"} {
		if err := os.WriteFile("/sys/block/md0/md/"+f, []byte(v), 0o644); err != nil {
			return fmt.Errorf("md0 %s: %w", f, err)
		}
	}
	from = e.count()
	how := "--re-add"
	if _, err := e.sh("mdadm", "/dev/md0", "--re-add", "/dev/"+b); err != nil {
		// Without a bitmap the kernel refuses a re-add: the member comes back as a new one.
		how = "--zero-superblock, --add"
		if _, err := e.sh("mdadm", "--zero-superblock", "/dev/"+b); err != nil {
			return err
		}
		if _, err := e.sh("mdadm", "/dev/md0", "--add", "/dev/"+b); err != nil {
			return err
		}
	}
	e.part.Logs = append(e.part.Logs, "re-added with "+how)
	var progress []float64
	recovering := false
	deadline := time.Now().Add(3 * time.Minute)
	for {
		md, next, err := e.next(from)
		if err != nil {
			return err
		}
		from = next
		if v, ok := value(md, "hw.logical_disk.md.sync.progress", id, nil); ok {
			progress = append(progress, v)
		}
		if v, _ := value(md, "hw.logical_disk.md.sync_action", id, map[string]string{"md.sync_action": "recover"}); v == 1 {
			recovering = true
			if len(progress) == 1 { // the tools' view of a running recovery, once
				_, _ = e.tool("recovering: mdadm --detail", "mdadm", "--detail", "/dev/md0") // shown, not compared
				_, _ = e.tool("recovering: /proc/mdstat", "cat", "/proc/mdstat")
			}
		}
		if recovering && status(md, id) == "ok" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("md0 not back to ok within 3 minutes (progress %v)", progress)
		}
	}
	for i, p := range progress {
		e.part.Series[fmt.Sprintf("progress[%02d]", i)] = p
	}
	e.check("recovery: progress samples", "≥ 3", ge(len(progress), 3))
	rising := true
	for i := 1; i < len(progress); i++ {
		rising = rising && progress[i] >= progress[i-1]
	}
	e.check("recovery: progress never falls", "yes", yes(rising))
	e.check("recovery: progress rose", "yes", yes(len(progress) > 1 && progress[len(progress)-1] > progress[0]))
	e.check("recovery: sync_action recover seen", "yes", yes(recovering))
	// Back to ok: the export after the one that said so, and the tools.
	md, err = e.export(from, "md0 idle", func(md pmetric.Metrics) bool { return has(md, "hw.status", id, nil) })
	if err != nil {
		return err
	}
	_, hasProgress := value(md, "hw.logical_disk.md.sync.progress", id, nil)
	e.check("recovered: no progress series once done", "no", yes(hasProgress))
	return e.compareMD("recovered", md, id, a, b, "")
}

// md0ID is md0's hw.id: the array's uuid as the kernel shows it (compareMD checks it against mdadm's).
func md0ID() (string, error) {
	b, err := os.ReadFile("/sys/block/md0/md/uuid")
	if err != nil {
		return "", fmt.Errorf("md0's uuid: %w", err)
	}
	return "md:" + strings.TrimSpace(string(b)), nil
}

// compareMD compares an export with mdadm --detail and /proc/mdstat taken right after it.
func (e *env) compareMD(step string, md pmetric.Metrics, id, a, b, faulty string) error {
	detail, err := e.tool(step+": mdadm --detail", "mdadm", "--detail", "/dev/md0")
	if err != nil {
		return err
	}
	mdstat, err := e.tool(step+": /proc/mdstat", "cat", "/proc/mdstat")
	if err != nil {
		return err
	}
	d := detailFields(detail)
	kib, _ := strconv.ParseUint(strings.Fields(d["Array Size"] + " 0")[0], 10, 64)
	raid, _ := strconv.Atoi(d["Raid Devices"])
	active, _ := strconv.Atoi(d["Active Devices"])
	// mdadm writes the same 128 bits as four colon-separated words.
	e.check(step+": hw.id is md: and the array's UUID (mdadm UUID)", "md:"+strings.ReplaceAll(d["UUID"], ":", ""),
		strings.ReplaceAll(attr(md, "hw.logical_disk.limit", id, nil, "hw.id"), "-", ""))
	e.check(step+": level (mdadm Raid Level)", d["Raid Level"], attr(md, "hw.logical_disk.limit", id, nil, "hw.logical_disk.raid_level"))
	e.check(step+": sync action idle", "1", num(md, "hw.logical_disk.md.sync_action", id, map[string]string{"md.sync_action": "idle"}))
	e.check(step+": size bytes (mdadm Array Size KiB × 1024)", strconv.FormatUint(kib*1024, 10), num(md, "hw.logical_disk.limit", id, nil))
	e.check(step+": raid disks (mdadm Raid Devices)", strconv.Itoa(raid), num(md, "hw.logical_disk.md.raid_disks", id, nil))
	e.check(step+": degraded (Raid Devices − Active Devices)", strconv.Itoa(raid-active), num(md, "hw.logical_disk.md.degraded", id, nil))
	m := regexp.MustCompile(`\[(\d+)/(\d+)\] \[([U_]+)\]`).FindStringSubmatch(mdstat)
	if m == nil {
		return fmt.Errorf("no [n/m] [UU] in /proc/mdstat:\n%s", mdstat)
	}
	n, _ := strconv.Atoi(m[1])
	w, _ := strconv.Atoi(m[2])
	e.check(step+": raid disks (/proc/mdstat [n/m] n)", m[1], num(md, "hw.logical_disk.md.raid_disks", id, nil))
	e.check(step+": degraded (/proc/mdstat n − m)", strconv.Itoa(n-w), num(md, "hw.logical_disk.md.degraded", id, nil))
	wantStatus := "ok"
	if n != w {
		wantStatus = "degraded"
	}
	e.check(step+": hw.status", wantStatus, status(md, id))
	for _, mem := range []string{a, b} {
		want := "0"
		if mem == faulty {
			want = "1"
		}
		if strings.Contains(mdstat, mem+"[") { // the member is in the array: mdstat marks a failed one (F)
			if strings.Contains(mdstat, mem+"[0](F)") || strings.Contains(mdstat, mem+"[1](F)") {
				e.check(step+": /proc/mdstat marks "+mem+" (F)", want, "1")
			} else {
				e.check(step+": /proc/mdstat marks "+mem+" (F)", want, "0")
			}
			e.check(step+": "+mem+" faulty series", want, num(md, "hw.logical_disk.md.member.state", id, map[string]string{"md.member": mem, "md.member.state": "faulty"}))
			inSync := "1"
			if mem == faulty {
				inSync = "0"
			}
			e.check(step+": "+mem+" in_sync series", inSync, num(md, "hw.logical_disk.md.member.state", id, map[string]string{"md.member": mem, "md.member.state": "in_sync"}))
		}
	}
	return nil
}

func detailFields(s string) map[string]string {
	f := map[string]string{}
	for line := range strings.Lines(s) {
		if k, v, ok := strings.Cut(line, " : "); ok {
			f[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return f
}

// ---- thin pool ----

const (
	poolSectors  = 131072 // 64 MiB of data
	blockSectors = 128    // 64 KiB data blocks
	thinSectors  = 262144 // a 128 MiB thin volume: more than the pool holds
)

func thinPart(e *env) error {
	meta, data := devNum("nullb0"), devNum("nullb1")
	table := fmt.Sprintf("0 %d thin-pool %s %s %d 0 1 error_if_no_space", poolSectors, meta, data, blockSectors)
	if _, err := e.sh("dmsetup", "create", "pool", "--noudevsync", "--table", table); err != nil {
		return err
	}
	if _, err := e.sh("dmsetup", "message", "pool", "0", "create_thin 0"); err != nil {
		return err
	}
	pool, err := dmDev("pool")
	if err != nil {
		return err
	}
	if _, err := e.sh("dmsetup", "create", "thin", "--noudevsync", "--table", fmt.Sprintf("0 %d thin %s 0", thinSectors, devNum(pool))); err != nil {
		return err
	}
	thin, err := dmDev("thin")
	if err != nil {
		return err
	}
	const id = "dm:pool"
	steps := []struct {
		step   string
		fillTo int // MiB written from the start of the thin volume
		want   string
		mode   string
	}{{"empty", 0, "ok", "rw"}, {"past the threshold", 60, "degraded", "rw"}, {"out of data space", 128, "failed", "out_of_data_space"}}
	for _, s := range steps {
		if s.fillTo > 0 {
			n, werr := fill("/dev/"+thin, s.fillTo)
			e.part.Logs = append(e.part.Logs, fmt.Sprintf("%s: wrote %d MiB of %d (%v)", s.step, n, s.fillTo, werr))
			if werr != nil && s.want != "failed" {
				return werr
			}
		}
		from := e.count()
		md, err := e.export(from, "pool "+s.want, func(md pmetric.Metrics) bool { return status(md, id) == s.want })
		if err != nil {
			e.check(s.step+": hw.status", s.want, "not within a minute")
			return err
		}
		st, err := e.tool(s.step+": dmsetup status pool", "dmsetup", "status", "pool")
		if err != nil {
			return err
		}
		_, _ = e.tool(s.step+": dmsetup status thin", "dmsetup", "status", "thin") // shown, not compared
		// 0 131072 thin-pool <txid> <used meta>/<meta> <used data>/<data> <held root> <mode> ...
		f := strings.Fields(st)
		if len(f) < 8 {
			return fmt.Errorf("dmsetup status pool: %q", st)
		}
		um, tm := frac(f[4])
		ud, td := frac(f[5])
		e.check(s.step+": data used bytes (used data blocks × 64 KiB)", strconv.FormatUint(ud*blockSectors*512, 10), num(md, "hw.logical_disk.usage", id, map[string]string{"hw.logical_disk.state": "used"}))
		e.check(s.step+": data free bytes", strconv.FormatUint((td-ud)*blockSectors*512, 10), num(md, "hw.logical_disk.usage", id, map[string]string{"hw.logical_disk.state": "free"}))
		e.check(s.step+": data size bytes (data blocks × 64 KiB)", strconv.FormatUint(td*blockSectors*512, 10), num(md, "hw.logical_disk.limit", id, nil))
		e.check(s.step+": metadata used bytes (used metadata blocks × 4 KiB)", strconv.FormatUint(um*4096, 10), num(md, "hw.logical_disk.metadata.usage", id, map[string]string{"hw.logical_disk.state": "used"}))
		e.check(s.step+": metadata size bytes (metadata blocks × 4 KiB)", strconv.FormatUint(tm*4096, 10), num(md, "hw.logical_disk.metadata.limit", id, nil))
		ratio := float64(ud) / float64(td)
		e.part.Series[s.step+": data used share"] = ratio
		e.check(s.step+": data utilization", strconv.FormatFloat(ratio, 'f', 4, 64), fnum(md, "hw.logical_disk.utilization", id, map[string]string{"hw.logical_disk.state": "used"}))
		e.check(s.step+": mode (dmsetup status)", s.mode, f[7])
		e.check(s.step+": thin_pool.mode series", "1", num(md, "hw.logical_disk.thin_pool.mode", id, map[string]string{"thin_pool.mode": f[7]}))
		e.check(s.step+": hw.status", s.want, status(md, id))
	}
	return nil
}

// fill writes zeros with direct I/O to the first mib MiB of dev, returning the MiB written.
func fill(dev string, mib int) (int, error) {
	fd, err := unix.Open(dev, unix.O_WRONLY|unix.O_DIRECT, 0)
	if err != nil {
		return 0, err
	}
	defer func() { _ = unix.Close(fd) }() // direct I/O: nothing buffered to lose
	buf, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return 0, err
	}
	defer func() { _ = unix.Munmap(buf) }() // an anonymous mapping of this process
	for i := range mib {
		if _, err := unix.Pwrite(fd, buf, int64(i)<<20); err != nil {
			return i, fmt.Errorf("write %s at %d MiB: %w", dev, i, err)
		}
	}
	return mib, nil
}

func frac(s string) (a, b uint64) {
	x, y, _ := strings.Cut(s, "/")
	a, _ = strconv.ParseUint(x, 10, 64)
	b, _ = strconv.ParseUint(y, 10, 64)
	return a, b
}

// ---- multipath ----

func multipathPart(e *env) error {
	p1, p2 := devNum("nullb2"), devNum("nullb3")
	size, err := readFile("/sys/block/nullb2/size")
	if err != nil {
		return err
	}
	table := fmt.Sprintf("0 %s multipath 0 0 1 1 round-robin 0 2 1 %s 1000 %s 1000", strings.TrimSpace(size), p1, p2)
	if _, err := e.sh("dmsetup", "create", "mpath", "--noudevsync", "--table", table); err != nil {
		return err
	}
	const id = "dm:mpath"
	for _, s := range []struct {
		step   string
		fail   string
		want   string
		active int
	}{{"two paths", "", "ok", 2}, {"one path failed", p2, "degraded", 1}} {
		logsFrom := e.ls.LogRecordCount()
		if s.fail != "" {
			if _, err := e.sh("dmsetup", "message", "mpath", "0", "fail_path "+s.fail); err != nil {
				return err
			}
		}
		md, err := e.export(e.count(), "mpath "+s.want, func(md pmetric.Metrics) bool { return status(md, id) == s.want })
		if err != nil {
			e.check(s.step+": hw.status", s.want, "not within a minute")
			return err
		}
		st, err := e.tool(s.step+": dmsetup status mpath", "dmsetup", "status", "mpath")
		if err != nil {
			return err
		}
		active, failed := 0, 0
		f := strings.Fields(st)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == p1 || f[i] == p2 {
				switch f[i+1] {
				case "A":
					active++
				case "F":
					failed++
				}
			}
		}
		e.check(s.step+": active paths (the action)", strconv.Itoa(s.active), strconv.Itoa(active))
		e.check(s.step+": active paths (dmsetup status A)", strconv.Itoa(active), num(md, "hw.logical_disk.multipath.paths", id, map[string]string{"multipath.path.state": "active"}))
		e.check(s.step+": failed paths (dmsetup status F)", strconv.Itoa(failed), num(md, "hw.logical_disk.multipath.paths", id, map[string]string{"multipath.path.state": "failed"}))
		e.check(s.step+": hw.status", s.want, status(md, id))
		if s.fail != "" {
			time.Sleep(2 * interval)
			evs := events(e.ls, logsFrom, id)
			e.part.Logs = append(e.part.Logs, evs...)
			e.check(s.step+": state-change events of mpath", "1", strconv.Itoa(len(evs)))
		}
	}
	return nil
}

// ---- without CAP_SYS_ADMIN ----

const argUnprivileged = "unprivileged"

// unprivilegedReport is what the unprivileged child prints.
type unprivilegedReport struct {
	UID      int               `json:"uid"`
	Scrapes  int               `json:"scrapes"`  // exports of the stack source
	Status   map[string]string `json:"status"`   // stack.part -> stack.read.status of the last export
	Refused  int               `json:"refused"`  // permission_denied warnings over all scrapes
	Warnings []string          `json:"warnings"` // every warning and error the receiver logged
	MD0      string            `json:"md0"`      // md0's hw.status
	Pool     string            `json:"pool"`     // the thin pool's hw.status (none expected)
	IOStat   int               `json:"iostat"`   // system.disk.* metrics in all exports
	Error    string            `json:"error"`
}

// unprivileged runs the receiver (stack and I/O sources) as nobody, without any capability, for
// four scrapes, and prints what it saw.
func unprivileged() {
	rep := unprivilegedReport{UID: os.Getuid(), Status: map[string]string{}}
	defer func() {
		out, _ := json.Marshal(rep)
		fmt.Printf("%s\n", out)
	}()
	core, logs := observer.New(zapcore.WarnLevel)
	stop, ms, _, err := start(zap.New(core), true)
	if err != nil {
		rep.Error = err.Error()
		return
	}
	// The stack source's exports (the I/O source may export on its own).
	stackExports := func() []pmetric.Metrics {
		var out []pmetric.Metrics
		for _, md := range ms.AllMetrics() {
			if hasMetric(md, "disk_health.stack.read.status") {
				out = append(out, md)
			}
		}
		return out
	}
	deadline := time.Now().Add(wait)
	for len(stackExports()) < 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	all, stacked := ms.AllMetrics(), stackExports()
	rep.Scrapes = len(stacked)
	if len(stacked) == 0 {
		rep.Error = "no export of the stack source"
		return
	}
	last := stacked[len(stacked)-1]
	for _, md := range all {
		forEach(md, func(m pmetric.Metric) {
			if strings.HasPrefix(m.Name(), "system.disk.") {
				rep.IOStat++
			}
		})
	}
	forEach(last, func(m pmetric.Metric) {
		if m.Name() != "disk_health.stack.read.status" {
			return
		}
		dps := m.Sum().DataPoints()
		if m.Type() == pmetric.MetricTypeGauge {
			dps = m.Gauge().DataPoints()
		}
		for i := range dps.Len() {
			if dps.At(i).IntValue() == 1 {
				part, _ := dps.At(i).Attributes().Get("stack.part")
				st, _ := dps.At(i).Attributes().Get("stack.read.status")
				rep.Status[part.AsString()] = st.AsString()
			}
		}
	})
	id, err := md0ID()
	if err != nil {
		rep.Error = err.Error()
	}
	rep.MD0, rep.Pool = status(last, id), status(last, "dm:pool")
	for _, e := range logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		rep.Warnings = append(rep.Warnings, line)
		if st, _ := e.ContextMap()["status"].(string); st == "permission_denied" {
			rep.Refused++
		}
	}
}

// unprivilegedPart runs this program again as nobody (uid and gid 65534: no capabilities) and
// compares what its receiver saw with what root's sees.
func unprivilegedPart(e *env) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, argUnprivileged)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Dir = "/"
	out, err := cmd.Output()
	e.part.Tools["unprivileged child"] = string(out)
	if err != nil {
		return fmt.Errorf("unprivileged child: %w", err)
	}
	var rep unprivilegedReport
	if err := json.Unmarshal(out, &rep); err != nil {
		return fmt.Errorf("unprivileged child: %w: %s", err, out)
	}
	if rep.Error != "" {
		return errors.New("unprivileged child: " + rep.Error)
	}
	e.part.Logs = append(e.part.Logs, rep.Warnings...)
	id, err := md0ID()
	if err != nil {
		return err
	}
	root, err := e.export(e.count(), "an export as root", func(md pmetric.Metrics) bool { return has(md, "hw.status", id, nil) })
	if err != nil {
		return err
	}
	e.part.Series["unprivileged scrapes"] = float64(rep.Scrapes)
	e.check("the child runs as uid", "65534", strconv.Itoa(rep.UID))
	e.check("scrapes", "≥ 4", ge(rep.Scrapes, 4))
	e.check("device_mapper read status", "permission_denied", rep.Status["device_mapper"])
	e.check("permission_denied reported once over the scrapes", "1", strconv.Itoa(rep.Refused))
	e.check("warnings logged in all", "1", strconv.Itoa(len(rep.Warnings)))
	e.check("md read status (sysfs needs no privilege)", "ok", rep.Status["md"])
	e.check("errors read status", "ok", rep.Status["errors"])
	e.check("md0 hw.status (as root's)", status(root, id), rep.MD0)
	e.check("thin pool hw.status (none without the ioctls)", "", rep.Pool)
	e.check("the I/O source unaffected (system.disk.* metrics)", "yes", yes(rep.IOStat > 0))
	return nil
}

func hasMetric(md pmetric.Metrics, name string) bool {
	found := false
	forEach(md, func(m pmetric.Metric) { found = found || m.Name() == name })
	return found
}

func forEach(md pmetric.Metrics, f func(pmetric.Metric)) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				f(ms.At(k))
			}
		}
	}
}

// ---- helpers ----

// count is the number of exports so far.
func (e *env) count() int { return len(e.ms.AllMetrics()) }

func (e *env) check(what, want, got string) {
	e.part.Checks = append(e.part.Checks, Check{What: what, Want: want, Got: got})
}

// sh runs a command, logging it and its output.
func (e *env) sh(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	e.part.Logs = append(e.part.Logs, fmt.Sprintf("$ %s %s\n%s", name, strings.Join(args, " "), out))
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// tool runs a command and keeps its output under step.
func (e *env) tool(step, name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	e.part.Tools[step] = string(out)
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// export returns the first export after index from+1 (a scrape that started after the caller's
// action) that pred accepts.
func (e *env) export(from int, what string, pred func(pmetric.Metrics) bool) (pmetric.Metrics, error) {
	deadline := time.Now().Add(wait)
	from++
	for time.Now().Before(deadline) {
		all := e.ms.AllMetrics()
		for ; from < len(all); from++ {
			if pred(all[from]) {
				return all[from], nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return pmetric.Metrics{}, fmt.Errorf("no export with %s within %v", what, wait)
}

// next returns the export at index from (waiting for it) and the index after it.
func (e *env) next(from int) (pmetric.Metrics, int, error) {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if all := e.ms.AllMetrics(); from < len(all) {
			return all[from], from + 1, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return pmetric.Metrics{}, from, fmt.Errorf("no export within %v", wait)
}

// points calls f for each number point of metric with hw.id id and the attributes want.
func points(md pmetric.Metrics, metric, id string, want map[string]string, f func(v float64, a pcommon.Map)) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				if m.Name() != metric {
					continue
				}
				var dps pmetric.NumberDataPointSlice
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				default:
					continue
				}
			next:
				for l := range dps.Len() {
					dp := dps.At(l)
					a := dp.Attributes()
					if v, ok := a.Get("hw.id"); !ok || v.AsString() != id {
						continue
					}
					for k, w := range want {
						if v, ok := a.Get(k); !ok || v.AsString() != w {
							continue next
						}
					}
					v := dp.DoubleValue()
					if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
						v = float64(dp.IntValue())
					}
					f(v, a)
				}
			}
		}
	}
}

func value(md pmetric.Metrics, metric, id string, want map[string]string) (float64, bool) {
	var got float64
	ok := false
	points(md, metric, id, want, func(v float64, _ pcommon.Map) { got, ok = v, true })
	return got, ok
}

func has(md pmetric.Metrics, metric, id string, want map[string]string) bool {
	_, ok := value(md, metric, id, want)
	return ok
}

func num(md pmetric.Metrics, metric, id string, want map[string]string) string {
	v, ok := value(md, metric, id, want)
	if !ok {
		return "absent"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func fnum(md pmetric.Metrics, metric, id string, want map[string]string) string {
	v, ok := value(md, metric, id, want)
	if !ok {
		return "absent"
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

func attr(md pmetric.Metrics, metric, id string, want map[string]string, key string) string {
	var s string
	points(md, metric, id, want, func(_ float64, a pcommon.Map) {
		if v, ok := a.Get(key); ok {
			s = v.AsString()
		}
	})
	return s
}

// status is the hw.state whose hw.status point is 1.
func status(md pmetric.Metrics, id string) string {
	var s string
	points(md, "hw.status", id, nil, func(v float64, a pcommon.Map) {
		if st, ok := a.Get("hw.state"); ok && v == 1 {
			s = st.AsString()
		}
	})
	return s
}

// events are the bodies of the state-change events of hw.id id from the logs index from on.
func events(ls *consumertest.LogsSink, from int, id string) []string {
	var out []string
	n := 0
	for _, l := range ls.AllLogs() {
		rls := l.ResourceLogs()
		for i := range rls.Len() {
			rl := rls.At(i)
			v, _ := rl.Resource().Attributes().Get("hw.id")
			sls := rl.ScopeLogs()
			for j := range sls.Len() {
				lrs := sls.At(j).LogRecords()
				for k := range lrs.Len() {
					lr := lrs.At(k)
					n++
					if n <= from || v.AsString() != id {
						continue
					}
					if name, _ := lr.Attributes().Get("event.name"); strings.HasSuffix(name.AsString(), "state_change") {
						state, _ := lr.Attributes().Get("hw.state")
						out = append(out, lr.Body().AsString()+" [hw.state="+state.AsString()+"]")
					}
				}
			}
		}
	}
	return out
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func ge(n, min int) string {
	if n >= min {
		return "≥ " + strconv.Itoa(min)
	}
	return strconv.Itoa(n)
}

// scsiDebugDisks returns n scsi_debug disks, adding hosts with their own stores until there are.
func scsiDebugDisks(n int) ([]string, error) {
	list := func() []string {
		var out []string
		ents, _ := os.ReadDir("/sys/block")
		for _, e := range ents {
			if m, err := readFile(filepath.Join("/sys/block", e.Name(), "device", "model")); err == nil && strings.TrimSpace(m) == "scsi_debug" {
				out = append(out, e.Name())
			}
		}
		return out
	}
	const drv = "/sys/bus/pseudo/drivers/scsi_debug/"
	if err := os.WriteFile(drv+"per_host_store", []byte("1"), 0o644); err != nil {
		return nil, fmt.Errorf("scsi_debug per_host_store: %w", err)
	}
	for range n - len(list()) {
		if err := os.WriteFile(drv+"add_host", []byte("1"), 0o644); err != nil {
			return nil, fmt.Errorf("scsi_debug add_host: %w", err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if l := list(); len(l) >= n {
			return l[:n], nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, fmt.Errorf("fewer than %d scsi_debug disks: %v", n, list())
}

// devNum is a block device's major:minor.
func devNum(name string) string {
	s, _ := readFile("/sys/block/" + name + "/dev")
	return strings.TrimSpace(s)
}

// dmDev is the dm-N name of the dm device called name.
func dmDev(name string) (string, error) {
	ents, _ := os.ReadDir("/sys/block")
	for _, e := range ents {
		if n, err := readFile(filepath.Join("/sys/block", e.Name(), "dm", "name")); err == nil && strings.TrimSpace(n) == name {
			return e.Name(), nil
		}
	}
	return "", fmt.Errorf("no dm device is called %s", name)
}

func waitFile(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within %v", path, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

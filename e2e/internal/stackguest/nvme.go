//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap/zapcore"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
	"github.com/diskhealth/diskhealth/internal/testkit/pdatawalk"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"
)

// The nvme part (issue 36): native NVMe multipath over the kernel's own NVMe target. nvmet exports one
// subsystem (namespace 1 on nullb4) on two NVMe/TCP ports of 127.0.0.1 (Debian's 6.1 kernel has no
// nvme-loop), nvme-cli connects to each, so the host has one multipath head with two paths. The receiver
// (stack, I/O and SMART sources) is compared with `nvme list-subsys -o json` with both paths live, after
// the target unlinked the subsystem from port 4421 (the host's controller on it loses its connection and
// stays connecting, retrying each second: one live path of two) and after it was linked again (the
// controller reconnects by itself).

const (
	nvmeNQN     = "nqn.2026-12.io.diskhealth:e2e-mpath"
	nvmeHostNQN = "nqn.2014-08.org.nvmexpress:uuid:5d1f0d6c-3c0e-4f39-9a57-6f1d2b6a3e11"
	nvmetDir    = "/sys/kernel/config/nvmet"
)

// nvmePorts are the target's ports: nvmet's port ID and the TCP port.
var nvmePorts = [][2]string{{"1", "4420"}, {"2", "4421"}}

func nvmePart(e0 *env) error {
	if err := nvmeTarget(e0); err != nil {
		return err
	}
	for _, p := range nvmePorts {
		if err := nvmeConnect(e0, p[1]); err != nil {
			return err
		}
	}
	sub, head, err := nvmeHead()
	if err != nil {
		return err
	}
	e0.part.Logs = append(e0.part.Logs, fmt.Sprintf("subsystem %s, multipath head %s, nvme_core.multipath=%s", sub, head, strings.TrimSpace(must(readFile("/sys/module/nvme_core/parameters/multipath")))))
	// Some reads through the head, for the I/O source's counters.
	if _, err := e0.sh("dd", "if=/dev/"+head, "of=/dev/null", "bs=64k", "count=16", "iflag=direct"); err != nil {
		return err
	}

	// A receiver of its own with the I/O and SMART sources beside the stack source, so that the
	// namespace's series of all three can be joined on hw.id.
	logger, logs := guestrx.Observe(zapcore.WarnLevel)
	defer func() {
		for _, l := range guestrx.Lines(logs) {
			e0.part.Logs = append(e0.part.Logs, "receiver: "+l)
		}
	}()
	stop, ms, ls, err := guestrx.Start(logger, diskhealthreceiver.Only("stack", "iostat", "smart"), map[string]any{
		"collection_interval": interval.String(),
		"smart":               map[string]any{"interval": "3s", "timeout": "20s"},
	})
	if err != nil {
		return err
	}
	defer stop()
	e := &env{ms: ms, ls: ls, part: e0.part}

	// Two paths.
	md, err := e.export(-1, head+" with 2 live paths", func(md pmetric.Metrics) bool { return num(md, mNSLive, nsID(md, head), nil) == "2" })
	if err != nil {
		e.check("two paths: "+mNSLive, "2", "not within a minute")
		return err
	}
	id := nsID(md, head)
	if err := nvmeCompare(e, "two paths", id, head, 2, 2); err != nil {
		return err
	}
	nvmeJoin(e, id, head)

	// The subsystem unlinked from port 4421 on the target: the host's controller there loses its
	// connection and keeps reconnecting.
	lost := nvmeCtrlOn(nvmePorts[1][1])
	e.part.Logs = append(e.part.Logs, "controller on port "+nvmePorts[1][1]+": "+lost)
	link := nvmetDir + "/ports/" + nvmePorts[1][0] + "/subsystems/" + nvmeNQN
	logsFrom := e.ls.LogRecordCount()
	if _, err := e.sh("rm", link); err != nil {
		return err
	}
	if _, err := e.export(e.count(), head+" with 1 live path, 1 connecting", func(md pmetric.Metrics) bool {
		connecting := 0
		for k, v := range subPaths(md) {
			if strings.HasPrefix(k, "connecting/") {
				connecting += v
			}
		}
		return num(md, mNSLive, id, nil) == "1" && connecting == 1
	}); err != nil {
		e.check("port removed: "+mNSLive, "1", "not within a minute")
		return err
	}
	if err := nvmeCompare(e, "port removed", id, head, 1, 2); err != nil {
		return err
	}
	time.Sleep(2 * interval)
	nvmeEvents(e, "port removed", logsFrom, id, "disk_health.nvme.paths_lost", lost)

	// Linked again: the controller reconnects by itself.
	logsFrom = e.ls.LogRecordCount()
	if _, err := e.sh("ln", "-s", nvmetDir+"/subsystems/"+nvmeNQN, link); err != nil {
		return err
	}
	if _, err := e.export(e.count(), head+" with 2 live paths again", func(md pmetric.Metrics) bool { return num(md, mNSLive, id, nil) == "2" }); err != nil {
		e.check("port restored: "+mNSLive, "2", "not within a minute")
		return err
	}
	if err := nvmeCompare(e, "port restored", id, head, 2, 2); err != nil {
		return err
	}
	time.Sleep(2 * interval)
	nvmeEvents(e, "port restored", logsFrom, id, "disk_health.nvme.paths_restored", lost)
	return nil
}

const (
	mSubPaths = "disk_health.nvme.subsystem.paths"
	mNSLive   = "disk_health.nvme.namespace.paths.live"
	mNSOpt    = "disk_health.nvme.namespace.paths.optimized"
	mNSMax    = "disk_health.nvme.namespace.paths.live_max"
)

// nvmeTarget brings up the loopback interface, mounts configfs and makes the subsystem (any host,
// namespace 1 on nullb4) and the TCP ports that export it.
func nvmeTarget(e *env) error {
	if _, err := e.sh("ip", "link", "set", "lo", "up"); err != nil {
		return err
	}
	if _, err := os.Stat(nvmetDir); err != nil {
		if _, err := e.sh("mount", "-t", "configfs", "none", "/sys/kernel/config"); err != nil {
			return err
		}
	}
	s := nvmetDir + "/subsystems/" + nvmeNQN
	steps := [][2]string{{s, ""}, {s + "/attr_allow_any_host", "1"}, {s + "/namespaces/1", ""},
		{s + "/namespaces/1/device_path", "/dev/nullb4"}, {s + "/namespaces/1/enable", "1"}}
	for _, p := range nvmePorts {
		d := nvmetDir + "/ports/" + p[0]
		steps = append(steps, [2]string{d, ""}, [2]string{d + "/addr_trtype", "tcp"}, [2]string{d + "/addr_adrfam", "ipv4"},
			[2]string{d + "/addr_traddr", "127.0.0.1"}, [2]string{d + "/addr_trsvcid", p[1]})
	}
	for _, st := range steps {
		var err error
		if st[1] == "" {
			err = os.Mkdir(st[0], 0o755)
		} else {
			err = os.WriteFile(st[0], []byte(st[1]), 0o644)
		}
		if err != nil {
			return fmt.Errorf("nvmet configfs: %w", err)
		}
	}
	for _, p := range nvmePorts {
		if err := os.Symlink(s, nvmetDir+"/ports/"+p[0]+"/subsystems/"+nvmeNQN); err != nil {
			return fmt.Errorf("nvmet configfs: %w", err)
		}
	}
	// nvme-cli takes the host's NQN from here; both connections are the same host's.
	if err := os.MkdirAll("/etc/nvme", 0o755); err != nil {
		return err
	}
	return os.WriteFile("/etc/nvme/hostnqn", []byte(nvmeHostNQN+"\n"), 0o644)
}

// nvmeConnect connects to the subsystem through TCP port trsvcid (reconnecting each second when the
// connection is lost) and waits for its controller to be live.
func nvmeConnect(e *env, trsvcid string) error {
	if _, err := e.sh("nvme", "connect", "-t", "tcp", "-a", "127.0.0.1", "-s", trsvcid, "-n", nvmeNQN, "-q", nvmeHostNQN, "-c", "1"); err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c := nvmeCtrlOn(trsvcid); c != "" && strings.TrimSpace(must(readFile("/sys/class/nvme/"+c+"/state"))) == "live" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no live controller on TCP port %s within 20s", trsvcid)
}

// nvmeCtrlOn is the host controller of the subsystem connected through TCP port trsvcid ("" if none).
func nvmeCtrlOn(trsvcid string) string {
	ents, _ := os.ReadDir("/sys/class/nvme")
	for _, c := range ents {
		d := "/sys/class/nvme/" + c.Name()
		if strings.TrimSpace(must(readFile(d+"/subsysnqn"))) != nvmeNQN {
			continue
		}
		for _, f := range strings.Split(strings.TrimSpace(must(readFile(d+"/address"))), ",") {
			if f == "trsvcid="+trsvcid {
				return c.Name()
			}
		}
	}
	return ""
}

// nvmeHead is the subsystem with the test's NQN and its multipath head (nvme<S>n1).
func nvmeHead() (sub, head string, err error) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ents, _ := os.ReadDir("/sys/class/nvme-subsystem")
		for _, s := range ents {
			if strings.TrimSpace(must(readFile("/sys/class/nvme-subsystem/"+s.Name()+"/subsysnqn"))) != nvmeNQN {
				continue
			}
			h := "nvme" + strings.TrimPrefix(s.Name(), "nvme-subsys") + "n1"
			if _, err := os.Stat("/sys/block/" + h); err == nil {
				return s.Name(), h, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", "", fmt.Errorf("no multipath head of %s within 20s", nvmeNQN)
}

// cliPath is one path as `nvme list-subsys -o json` shows it.
type cliPath struct {
	Name, Transport, Address, State, ANAState string
}

// nvmeCLI runs `nvme list-subsys -o json` (and with the head, which adds each path's ANA state), keeps
// both under step and returns the paths of the test's subsystem: the ANA state from the second.
func nvmeCLI(e *env, step, head string) ([]cliPath, error) {
	out, err := e.tool(step+": nvme list-subsys -o json", "nvme", "list-subsys", "-o", "json")
	if err != nil {
		return nil, err
	}
	paths, err := cliPaths(out)
	if err != nil {
		return nil, err
	}
	out, err = e.tool(step+": nvme list-subsys -o json /dev/"+head, "nvme", "list-subsys", "-o", "json", "/dev/"+head)
	if err != nil {
		return nil, err
	}
	ana, err := cliPaths(out)
	if err != nil {
		return nil, err
	}
	for i := range paths {
		for _, a := range ana {
			if a.Name == paths[i].Name {
				paths[i].ANAState = a.ANAState
			}
		}
	}
	return paths, nil
}

// cliPaths finds the subsystem with the test's NQN anywhere in nvme-cli's JSON (its nesting of hosts
// and subsystems changed between versions) and returns its paths.
func cliPaths(out string) ([]cliPath, error) {
	var doc any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		return nil, fmt.Errorf("nvme list-subsys: %w", err)
	}
	var found []cliPath
	ok := false
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			if v["NQN"] == nvmeNQN {
				ok = true
				ps, _ := v["Paths"].([]any)
				for _, p := range ps {
					m, _ := p.(map[string]any)
					s := func(k string) string { x, _ := m[k].(string); return x }
					found = append(found, cliPath{s("Name"), s("Transport"), s("Address"), s("State"), s("ANAState")})
				}
				return
			}
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	if !ok {
		return nil, fmt.Errorf("nvme list-subsys shows no subsystem %s", nvmeNQN)
	}
	return found, nil
}

// nvmeCompare compares the receiver's export md with nvme-cli: the subsystem's paths by state, ANA
// state and transport, the namespace's live and optimized paths, and its best (liveMax); live is what
// the test's action leaves.
func nvmeCompare(e *env, step, id, head string, live, liveMax int) error {
	paths, err := nvmeCLI(e, step, head)
	if err != nil {
		return err
	}
	// The receiver's next scrape after nvme-cli's (the states compared are stable by then).
	md, err := e.export(e.count()-1, "a stack scrape", func(md pmetric.Metrics) bool { return len(subPaths(md)) > 0 })
	if err != nil {
		return err
	}
	want := map[string]int{}
	cliLive, cliOpt := 0, 0
	for _, p := range paths {
		ana := strings.ReplaceAll(p.ANAState, "-", "_")
		if ana == "" {
			ana = "none"
		}
		want[p.State+"/"+ana+"/"+p.Transport]++
		if p.State == "live" && (ana == "none" || ana == "optimized" || ana == "non_optimized") {
			cliLive++
			if ana != "non_optimized" {
				cliOpt++
			}
		}
	}
	got := map[string]int{}
	for k, v := range subPaths(md) {
		e.part.Series[step+": "+mSubPaths+"{"+k+"}"] = float64(v)
		if v != 0 {
			got[k] = v
		}
	}
	for _, m := range []string{mNSLive, mNSOpt, mNSMax} {
		if v, ok := value(md, m, id, nil); ok {
			e.part.Series[step+": "+m+"{"+head+"}"] = v
		}
	}
	e.check(step+": live paths in nvme list-subsys (the action)", strconv.Itoa(live), strconv.Itoa(cliLive))
	e.check(step+": "+mSubPaths+" by state/ana/transport (nvme list-subsys)", counts(want), counts(got))
	e.check(step+": "+mNSLive+" (nvme list-subsys live paths)", strconv.Itoa(cliLive), num(md, mNSLive, id, nil))
	e.check(step+": "+mNSOpt+" (nvme list-subsys optimized paths)", strconv.Itoa(cliOpt), num(md, mNSOpt, id, nil))
	e.check(step+": "+mNSMax, strconv.Itoa(liveMax), num(md, mNSMax, id, nil))
	e.check(step+": "+mNSLive+" hw.parent", nvmeNQN, attr(md, mNSLive, id, nil, "hw.parent"))
	return nil
}

// nvmeJoin checks that the namespace's I/O series (the multipath head's /proc/diskstats line) carry the
// hw.id of its path series, and records which SMART series there are.
func nvmeJoin(e *env, id, head string) {
	md, err := e.export(-1, "system.disk.io of "+head, func(md pmetric.Metrics) bool { return deviceID(md, "system.disk.io", head) != "" })
	if err != nil {
		e.check("I/O: system.disk.io of "+head, "present", "not within a minute")
		return
	}
	e.check("I/O: system.disk.io hw.id of "+head+" = the path series' hw.id", id, deviceID(md, "system.disk.io", head))
	// SMART: the smart source reads every NVMe disk through its block device (an admin command on the
	// multipath head goes to one of its live controllers); nvmet answers the SMART / Health log page.
	md, err = e.export(-1, "SMART of "+head, func(md pmetric.Metrics) bool { return smartNames(md)[id] != "" })
	e.check("SMART: a disk_health.physical_disk.smart.read.status series with hw.id of "+head, "yes", yes(err == nil))
	if err != nil {
		var seen []string
		for _, md := range e.ms.AllMetrics() {
			for i, n := range smartNames(md) {
				seen = append(seen, n+"="+i)
			}
		}
		slices.Sort(seen)
		e.part.Logs = append(e.part.Logs, "SMART series seen: "+strings.Join(slices.Compact(seen), ", "))
		return
	}
	name := smartNames(md)[id]
	_, _ = e.tool("nvme smart-log /dev/"+name, "nvme", "smart-log", "/dev/"+name, "-o", "json")
	// nvmet answers the SMART / health log, but leaves its composite temperature at 0 K (it has no
	// sensor: nvmet_execute_get_log_page_smart fills only the data units and commands), which the smart
	// source takes for a page the controller never wrote: its read status is error, not ok (smartctl
	// says PASSED). Recorded, not asserted; the join on hw.id is what this part checks.
	e.part.Logs = append(e.part.Logs, fmt.Sprintf("SMART series of %s: hw.name %s, smart.read.status %s", id, name, smartStatus(md, id)))
	// The subsystem's other controller has no block device of its own (its path, nvme<S>c<C>n1, is
	// hidden): the smart source reads the subsystem once, under the head's hw.id (through the other
	// controller while the first is not live), so no other NVMe series of it should show here (before,
	// the other controller was a disk of its own, named by its model and serial). Recorded, not asserted.
	for i, n := range smartNames(md) {
		if i != id && strings.HasPrefix(n, "nvme") {
			e.part.Logs = append(e.part.Logs, fmt.Sprintf("another NVMe SMART series: hw.name %s hw.id %s, smart.read.status %s", n, i, smartStatus(md, i)))
		}
	}
}

// nvmeEvents checks that the logs from index from on hold exactly one event name for the namespace
// id, naming the controller ctrl.
func nvmeEvents(e *env, step string, from int, id, name, ctrl string) {
	var ctrls []string
	n, matching, other := 0, 0, 0
	for _, l := range e.ls.AllLogs() {
		pdatawalk.ForEachLogRecord(l, func(res pcommon.Resource, lr plog.LogRecord) {
			n++
			if n <= from {
				return
			}
			ev := lr.EventName()
			if !strings.HasPrefix(ev, "disk_health.nvme.") {
				return
			}
			e.part.Logs = append(e.part.Logs, fmt.Sprintf("event %s %s: %s %v", ev, lr.SeverityText(), lr.Body().AsString(), lr.Attributes().AsRaw()))
			if v, _ := res.Attributes().Get("hw.id"); v.AsString() != id || ev != name {
				other++
				return
			}
			matching++
			if c, ok := lr.Attributes().Get("disk_health.nvme.controller.name"); ok {
				for _, v := range c.Slice().AsRaw() {
					ctrls = append(ctrls, fmt.Sprint(v))
				}
			}
		})
	}
	e.check(step+": "+name+" events of "+id, "1", strconv.Itoa(matching))
	e.check(step+": other disk_health.nvme.* events", "0", strconv.Itoa(other))
	e.check(step+": the event's disk_health.nvme.controller.name", ctrl, strings.Join(ctrls, ","))
}

// subPaths is the test subsystem's disk_health.nvme.subsystem.paths by "state/ana/transport".
func subPaths(md pmetric.Metrics) map[string]int {
	out := map[string]int{}
	pdatawalk.ForEachNumberPoint(md, func(res pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		a := dp.Attributes()
		if m.Name() != mSubPaths || str(res, a, "hw.id") != nvmeNQN {
			return
		}
		k := str(res, a, "disk_health.nvme.controller.state") + "/" + str(res, a, "disk_health.nvme.ana.state") + "/" + str(res, a, "disk_health.nvme.transport")
		out[k] += int(dp.IntValue())
	})
	return out
}

// nsID is the hw.id of the namespace head's path series ("" if absent).
func nsID(md pmetric.Metrics, head string) string { return deviceID(md, mNSLive, head) }

// deviceID is the hw.id of metric's point for the device name (system.device or hw.name, on the point
// or its resource).
func deviceID(md pmetric.Metrics, metric, name string) string {
	id := ""
	pdatawalk.ForEachNumberPoint(md, func(res pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		a := dp.Attributes()
		if m.Name() == metric && (str(res, a, "system.device") == name || str(res, a, "hw.name") == name) {
			id = str(res, a, "hw.id")
		}
	})
	return id
}

// smartNames maps the hw.id of each SMART series (the smart.read.status metric) to its hw.name.
func smartNames(md pmetric.Metrics) map[string]string {
	out := map[string]string{}
	pdatawalk.ForEachNumberPoint(md, func(res pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		if m.Name() == "disk_health.physical_disk.smart.read.status" {
			out[str(res, dp.Attributes(), "hw.id")] = str(res, dp.Attributes(), "hw.name")
		}
	})
	return out
}

// smartStatus is the read status whose point is 1 for hw.id id.
func smartStatus(md pmetric.Metrics, id string) string {
	s := ""
	pdatawalk.ForEachNumberPoint(md, func(res pcommon.Resource, m pmetric.Metric, dp pmetric.NumberDataPoint) {
		a := dp.Attributes()
		if m.Name() == "disk_health.physical_disk.smart.read.status" && str(res, a, "hw.id") == id && dp.IntValue() == 1 {
			s = str(res, a, "smart.read.status")
		}
	})
	return s
}

// str is the attribute key of a point, or else of its resource.
func str(res pcommon.Resource, a pcommon.Map, key string) string {
	if v, ok := a.Get(key); ok {
		return v.AsString()
	}
	if v, ok := res.Attributes().Get(key); ok {
		return v.AsString()
	}
	return ""
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		keys = append(keys, k+"="+strconv.Itoa(v))
	}
	slices.Sort(keys)
	return strings.Join(keys, " ")
}

func must(s string, _ error) string { return s }

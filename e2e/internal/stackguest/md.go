//go:build linux

package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// The md part: a RAID1 over two scsi_debug disks, compared with mdadm --detail and /proc/mdstat
// clean, degraded, and through its recovery.

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
	parent := attr(md, "disk_health.logical_disk.md.member.state", id, map[string]string{"md.member": b}, "hw.parent")
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
		if v, ok := value(md, "disk_health.logical_disk.md.sync.progress", id, nil); ok {
			progress = append(progress, v)
		}
		if v, _ := value(md, "disk_health.logical_disk.md.sync_action", id, map[string]string{"md.sync_action": "recover"}); v == 1 {
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
	_, hasProgress := value(md, "disk_health.logical_disk.md.sync.progress", id, nil)
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
	e.check(step+": sync action idle", "1", num(md, "disk_health.logical_disk.md.sync_action", id, map[string]string{"md.sync_action": "idle"}))
	e.check(step+": size bytes (mdadm Array Size KiB × 1024)", strconv.FormatUint(kib*1024, 10), num(md, "hw.logical_disk.limit", id, nil))
	e.check(step+": raid disks (mdadm Raid Devices)", strconv.Itoa(raid), num(md, "disk_health.logical_disk.md.raid_disks", id, nil))
	e.check(step+": degraded (Raid Devices − Active Devices)", strconv.Itoa(raid-active), num(md, "disk_health.logical_disk.md.degraded", id, nil))
	m := regexp.MustCompile(`\[(\d+)/(\d+)\] \[([U_]+)\]`).FindStringSubmatch(mdstat)
	if m == nil {
		return fmt.Errorf("no [n/m] [UU] in /proc/mdstat:\n%s", mdstat)
	}
	n, _ := strconv.Atoi(m[1])
	w, _ := strconv.Atoi(m[2])
	e.check(step+": raid disks (/proc/mdstat [n/m] n)", m[1], num(md, "disk_health.logical_disk.md.raid_disks", id, nil))
	e.check(step+": degraded (/proc/mdstat n − m)", strconv.Itoa(n-w), num(md, "disk_health.logical_disk.md.degraded", id, nil))
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
			e.check(step+": "+mem+" faulty series", want, memberWord(md, id, mem, "faulty"))
			inSync := "1"
			if mem == faulty {
				inSync = "0"
			}
			e.check(step+": "+mem+" in_sync series", inSync, memberWord(md, id, mem, "in_sync"))
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

// memberWord is "1" when the member's state word is set, "0" when not: the receiver sends the words
// set, and a word just cleared once at 0, so an absent word is one not set.
func memberWord(md pmetric.Metrics, id, member, word string) string {
	if num(md, "disk_health.logical_disk.md.member.state", id, map[string]string{"md.member": member, "disk_health.md.member_state": word}) == "1" {
		return "1"
	}
	return "0"
}

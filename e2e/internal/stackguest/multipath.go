//go:build linux

package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// The multipath part: a dm-multipath map over two null_blk paths, one of them failed.

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
		e.check(s.step+": active paths (dmsetup status A)", strconv.Itoa(active), num(md, "disk_health.logical_disk.multipath.paths", id, map[string]string{"multipath.path.state": "active"}))
		e.check(s.step+": failed paths (dmsetup status F)", strconv.Itoa(failed), num(md, "disk_health.logical_disk.multipath.paths", id, map[string]string{"multipath.path.state": "failed"}))
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

//go:build linux

package main

import (
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"golang.org/x/sys/unix"
)

// The thin part: a dmsetup thin pool filled past its threshold and out of data space, compared
// with dmsetup status.

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
		isWant := func(md pmetric.Metrics) bool { return status(md, id) == s.want }
		if _, err := e.export(e.count(), "pool "+s.want, isWant); err != nil {
			e.check(s.step+": hw.status", s.want, "not within a minute")
			return err
		}
		// The pool commits its metadata by itself (each second): its used metadata blocks can move after
		// the writes. An export read between two equal statuses saw that status.
		var md pmetric.Metrics
		var st string
		for try := 0; ; try++ {
			before, err := e.tool(s.step+": dmsetup status pool", "dmsetup", "status", "pool")
			if err != nil {
				return err
			}
			if md, err = e.export(e.count(), "pool "+s.want, isWant); err != nil {
				return err
			}
			if st, err = e.tool(s.step+": dmsetup status pool", "dmsetup", "status", "pool"); err != nil {
				return err
			}
			if st == before || try == 9 {
				break
			}
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
		e.check(s.step+": metadata used bytes (used metadata blocks × 4 KiB)", strconv.FormatUint(um*4096, 10), num(md, "disk_health.logical_disk.metadata.usage", id, map[string]string{"hw.logical_disk.state": "used"}))
		e.check(s.step+": metadata size bytes (metadata blocks × 4 KiB)", strconv.FormatUint(tm*4096, 10), num(md, "disk_health.logical_disk.metadata.limit", id, nil))
		ratio := float64(ud) / float64(td)
		e.part.Series[s.step+": data used share"] = ratio
		e.check(s.step+": data utilization", strconv.FormatFloat(ratio, 'f', 4, 64), fnum(md, "hw.logical_disk.utilization", id, map[string]string{"hw.logical_disk.state": "used"}))
		e.check(s.step+": mode (dmsetup status)", s.mode, f[7])
		e.check(s.step+": thin_pool.mode series", "1", num(md, "disk_health.logical_disk.thin_pool.mode", id, map[string]string{"thin_pool.mode": f[7]}))
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

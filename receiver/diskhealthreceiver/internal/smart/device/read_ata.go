package device

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
)

// readATA reads a SATA/PATA drive: CHECK POWER MODE first (unless the
// policy is never), so a sleeping drive gets no other command, not even
// smart.go's open; then, through smart.go, IDENTIFY (decoded once), SMART data
// and thresholds; then on Conn RETURN STATUS, the logs the drive says it keeps,
// and the device statistics when it has them.
func (r *Reader) readATA(c *Conn, d Disk, st *diskState, deadline time.Time, res *Result) {
	var unknownPower error
	if r.cfg.Standby != StandbyNever {
		mode, err := c.CheckPowerMode()
		switch {
		case errors.Is(err, ErrUnsupported):
			// Some bridges return no registers: like smartctl, read anyway
			// rather than never (the drive cannot say it sleeps).
			unknownPower = fmt.Errorf("%s: power mode unknown, read anyway: %w", d.Name, err)
		case err != nil:
			res.Err = fmt.Errorf("%s: %w", d.Name, err)
			return
		default:
			res.Power, res.HasPower = mode, true
		}
		if res.HasPower && r.cfg.Standby.skip(mode) {
			res.Status = StatusStandbySkipped
			res.Err = fmt.Errorf("%s is in power mode %s: not read (standby: %s)", d.Name, mode, r.cfg.Standby)
			return
		}
	}
	cache := &st.cache
	// smart.go is opened once per disk and kept open: its OpenSata compiles
	// the regular expressions of its whole drive table on every call (10-50 ms
	// of CPU and 5-6 MB of garbage per open, measured), and sends IDENTIFY.
	// A library call that fails closes it; the next read opens it again.
	if cache.ataDev == nil {
		dev, err := openATA(r.cfg.Library, d.Name, d.Node, deadline)
		if err != nil {
			res.Err = fmt.Errorf("%s: %w", d.Name, err)
			return
		}
		cache.ataDev = dev
	}
	dev := cache.ataDev
	failed := func(err error) {
		res.Err = fmt.Errorf("%s: %w", d.Name, err)
		cache.closeATA()
	}
	if cache.ata == nil {
		id, err := dev.Identify(deadline)
		if err != nil {
			failed(err)
			return
		}
		cache.ata = id
	}
	data := &ATAData{Identity: cache.ata}
	snap := &Snapshot{ATA: data}
	if unknownPower != nil {
		snap.Problems = append(snap.Problems, unknownPower)
	}
	res.Snapshot = snap
	switch {
	case !cache.ata.SMARTSupported:
		res.Err = fmt.Errorf("%s: %w: the drive has no SMART feature set", d.Name, ErrUnsupported)
		return
	case !cache.ata.SMARTEnabled:
		res.Err = fmt.Errorf("%s: %w: SMART is disabled on the drive (the receiver never enables it)", d.Name, ErrUnsupported)
		return
	}

	page, preset, err := dev.SMARTData(deadline)
	if err != nil {
		failed(err)
		return
	}
	problem := func(err error) { snap.Problems = append(snap.Problems, fmt.Errorf("%s: %w", d.Name, err)) }

	th, err := dev.Thresholds(deadline)
	if err != nil {
		problem(err)
	}
	if r.cfg.DriveDB != nil {
		preset = r.cfg.DriveDB.LookupDrive(cache.ata.Model, cache.ata.Firmware, cache.ata.RotationRate)
	}
	data.Attributes = preset.Decode(page, th)

	if s, err := c.SMARTReturnStatus(); err != nil {
		problem(err)
	} else {
		data.Status = s
	}
	// Whether the drive keeps these logs is in the SMART data page's
	// capability bytes, which smart.go does not return: each log is asked for
	// until the drive refuses it once (one aborted command per disk), then
	// never again, as the device statistics are.
	data.ErrorLog = readLogUntilRefused(c, &cache.noErrorLog, ata.LogSummaryError, "summary error log", ata.ParseErrorLogSummary, problem)
	data.SelfTests = readLogUntilRefused(c, &cache.noSelfTestLog, ata.LogSelfTest, "self-test log", ata.ParseSelfTestLog, problem)
	if !cache.noDevStats {
		stats, err := readDeviceStatistics(c, cache.ata.GPLSupported)
		switch {
		case errors.Is(err, ErrUnsupported):
			// Asked once: a drive without the log keeps not having it, and
			// every failed command is an entry in its error log.
			cache.noDevStats = true
		case err != nil:
			problem(err)
		default:
			data.Stats = stats
		}
	}
}

// readLogUntilRefused reads one page of a SMART log unless the drive refused
// it before (*refused), and remembers a refusal; any other failure is a
// problem of this read only. The zero T is what was not read.
func readLogUntilRefused[T any](c *Conn, refused *bool, log uint8, what string, parse func([]byte) (T, error), problem func(error)) T {
	var zero T
	if *refused {
		return zero
	}
	b, err := c.SMARTReadLog(log, 1)
	switch {
	case errors.Is(err, ErrUnsupported):
		*refused = true
		return zero
	case err != nil:
		problem(err)
		return zero
	}
	v, err := parse(b)
	if err != nil {
		problem(fmt.Errorf("%s: %w", what, err))
		return zero
	}
	return v
}

// devStatPages are the device statistics pages the receiver decodes.
const maxDevStatPage = 7

// readDeviceStatistics reads log 04h: page 0 lists the supported pages,
// then those are read (page by page with READ LOG EXT, or from the start
// with SMART READ LOG, which cannot address a page).
func readDeviceStatistics(c *Conn, gpl bool) (*ata.DeviceStatistics, error) {
	read := func(page, n uint16) ([]byte, error) {
		if gpl {
			return c.ReadLogExt(ata.LogDeviceStatistics, page, n)
		}
		b, err := c.SMARTReadLog(ata.LogDeviceStatistics, page+n)
		if err != nil {
			return nil, err
		}
		return b[int(page)*ata.PageSize:], nil
	}
	list, err := read(0, 1)
	if err != nil {
		return nil, err
	}
	pages, err := parseSupportedStatPages(list)
	if err != nil {
		return nil, err
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("device statistics: %w: no statistics pages", ErrUnsupported)
	}
	var all []byte
	if gpl {
		for _, p := range pages {
			b, err := read(uint16(p), 1)
			if err != nil {
				return nil, err
			}
			all = append(all, b...)
		}
	} else {
		b, err := c.SMARTReadLog(ata.LogDeviceStatistics, uint16(pages[len(pages)-1])+1)
		if err != nil {
			return nil, err
		}
		all = b[ata.PageSize:]
	}
	stats, err := ata.ParseDeviceStatistics(all)
	if err != nil {
		return nil, fmt.Errorf("device statistics: %w", err)
	}
	return stats, nil
}

// parseSupportedStatPages decodes page 0 of the device statistics log: an
// 8-byte header (page number 0 in byte 2), the entry count in byte 8, then
// the page numbers. Only the pages decoded here (1-7) are returned, sorted.
func parseSupportedStatPages(b []byte) ([]uint8, error) {
	if len(b) < ata.PageSize {
		return nil, fmt.Errorf("device statistics page 0: %d bytes", len(b))
	}
	if b[2] != 0 {
		return nil, fmt.Errorf("device statistics page 0: header names page %d", b[2])
	}
	var pages []uint8
	for _, p := range b[9 : 9+int(b[8])] { // at most 255 entries: always inside the page
		if p >= 1 && p <= maxDevStatPage && !slices.Contains(pages, p) {
			pages = append(pages, p)
		}
	}
	slices.Sort(pages)
	return pages, nil
}

package device

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// hwmonFallback reads the disk's hwmon temperature (nvme driver), which
// needs no privilege: the one value a disk denied SMART can still report.
// It returns nil when there is none.
func hwmonFallback(d Disk) *Snapshot {
	if d.HwmonDir == "" {
		return nil
	}
	t, ok := readHwmon(d.HwmonDir)
	if !ok {
		return nil
	}
	return &Snapshot{Hwmon: t}
}

// readHwmon reads temp1_input and the limits beside it (millidegrees).
func readHwmon(dir string) (*HwmonTemp, bool) {
	cur, ok := milli(filepath.Join(dir, "temp1_input"))
	if !ok {
		return nil, false
	}
	t := &HwmonTemp{Current: cur}
	t.Max, t.HasMax = milli(filepath.Join(dir, "temp1_max"))
	t.Crit, t.HasCrit = milli(filepath.Join(dir, "temp1_crit"))
	return t, true
}

func milli(path string) (float64, bool) {
	b, err := bounded.ReadFile(path, bounded.Attr, nil)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, false
	}
	return float64(v) / 1000, true
}

package device

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

// hwmonFallback reads the disk's hwmon temperature (nvme driver), which
// needs no privilege: the one value a disk denied SMART can still report.
// It returns nil when there is none, and when it cannot be believed: the
// controller is not live (sysfs state connecting, resetting, ...), or the
// sensor says exactly 0 °C. The fallback runs only when the SMART log could
// not be read, so nothing can confirm a 0, and a disconnected NVMe-oF
// controller's sensor reads exactly that; a drive really at 0 °C is rarer
// than a wrong reading.
func hwmonFallback(d Disk) *Snapshot {
	t := hwmonReading(d)
	if t == nil {
		return nil
	}
	return &Snapshot{Hwmon: t}
}

// hwmonReading is hwmonFallback's temperature alone, for a read that already
// has a snapshot.
func hwmonReading(d Disk) *HwmonTemp {
	if d.HwmonDir == "" || !d.Live() {
		return nil
	}
	t, ok := readHwmon(d.HwmonDir)
	if !ok || t.Current == 0 {
		return nil
	}
	return t
}

// Live tells whether the disk can give a reading: any disk but an NVMe
// controller whose sysfs state is known and not "live".
func (d *Disk) Live() bool {
	return d.State == "" || d.State == "live"
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

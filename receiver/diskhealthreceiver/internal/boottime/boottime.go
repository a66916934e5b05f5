// Package boottime reads the host's boot time from /proc/stat: counters that exist when a source
// starts count since boot, so it is their start time.
package boottime // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/boottime"

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/bounded"
)

var errNoBtime = errors.New("no btime line")

// Parse returns the "btime <seconds since epoch>" value of /proc/stat.
func Parse(data []byte) (int64, error) {
	for line := range bytes.Lines(data) {
		rest, ok := bytes.CutPrefix(line, []byte("btime "))
		if !ok {
			continue
		}
		return strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
	}
	return 0, errNoBtime
}

// Read returns the boot time from <procDir>/stat; a boot time after now is an error.
func Read(procDir string, now time.Time) (time.Time, error) {
	path := filepath.Join(procDir, "stat")
	data, err := bounded.ReadFile(path, bounded.ProcStat, nil)
	if err != nil {
		return time.Time{}, fmt.Errorf("boot time: %w", err)
	}
	secs, err := Parse(data)
	if err != nil {
		return time.Time{}, fmt.Errorf("boot time from %s: %w", path, err)
	}
	if b := time.Unix(secs, 0); !b.After(now) {
		return b, nil
	}
	return time.Time{}, fmt.Errorf("boot time from %s lies in the future", path)
}

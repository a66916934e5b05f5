package diskhealthreceiver // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver"

import (
	"bytes"
	"errors"
	"strconv"
)

var errNoBtime = errors.New("no btime line")

// parseBtime returns the "btime <seconds since epoch>" value of /proc/stat.
func parseBtime(data []byte) (int64, error) {
	for line := range bytes.Lines(data) {
		rest, ok := bytes.CutPrefix(line, []byte("btime "))
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
		if err != nil {
			return 0, err
		}
		return v, nil
	}
	return 0, errNoBtime
}

//go:build linux

package stackscraper // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/scraper/stackscraper"

import (
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/blockdev"
)

// statDev lstats p and returns the "major:minor" of the filesystem it is on.
func statDev(p string) (string, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return "", &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	return blockdev.MajorMinor(unix.Major(st.Dev), unix.Minor(st.Dev)), nil
}

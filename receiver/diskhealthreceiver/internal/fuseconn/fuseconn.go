// Package fuseconn names and parses what the kernel's fusectl filesystem shows of a FUSE connection
// (/sys/fs/fuse/connections/<N>/): the directory of a mount's connection and its "waiting" count.
package fuseconn // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fuseconn"

import (
	"bytes"
	"errors"
	"strconv"
)

// Dir is where fusectl is mounted, relative to the root.
const Dir = "sys/fs/fuse/connections"

// Name returns the connection directory of the FUSE mount whose superblock is major:minor (the
// mountinfo field): fusectl names it after the kernel's dev_t, (major << 20) | minor, in decimal, which
// for FUSE's anonymous 0:N devices is N.
func Name(major, minor uint32) string {
	return strconv.FormatUint(uint64(major)<<20|uint64(minor&(1<<20-1)), 10)
}

var errWaiting = errors.New("waiting: not a count")

// ParseWaiting parses a waiting file: a decimal count and a newline.
func ParseWaiting(b []byte) (uint64, error) {
	n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, errWaiting
	}
	return n, nil
}

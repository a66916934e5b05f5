//go:build !linux

package fsusage // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"

import (
	"context"
	"errors"
	"time"
)

// errNeedsLinux: the mount table is Linux's /proc/<pid>/mountinfo, watched with poll(2), and the
// usage is Linux's statfs(2); there is nothing to measure elsewhere.
var errNeedsLinux = errors.New("fsusage: statfs and the mountinfo table need Linux")

// StatfsFunc has no system call to stand in for off Linux; it exists so that ProberConfig compiles.
type StatfsFunc func(path string) error

// Collector cannot be created off Linux.
type Collector struct{}

// NewCollector fails off Linux.
func NewCollector(Config) (*Collector, error) { return nil, errNeedsLinux }

// Collect is never reached: NewCollector returns no Collector.
func (*Collector) Collect(context.Context, time.Time) ([]Result, error) { return nil, errNeedsLinux }

// Close has nothing to close.
func (*Collector) Close() error { return nil }

//go:build !((386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux)

package filelat

import (
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/biolat"
)

// Probe exists here only so that callers compile: Open always fails on this platform.
type Probe struct{}

var errUnsupported = biolat.Unavailable(measure, nil)

// Open reports that file latency needs Linux eBPF on a little-endian CPU.
func Open(Options) (*Probe, error) { return nil, errUnsupported }

func (*Probe) Started() time.Time            { return time.Time{} }
func (*Probe) Collect() (Snapshot, error)    { return Snapshot{}, errUnsupported }
func (*Probe) Forget(...uint32) error        { return errUnsupported }
func (*Probe) ForgetCgroups(...uint64) error { return errUnsupported }
func (*Probe) Close() error                  { return nil }

//go:build !((386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux)

package biolat

import (
	"runtime"
	"time"
)

// Probe exists here only so that callers compile: Open always fails on this platform.
type Probe struct{}

// Open reports that block latency needs Linux eBPF on a little-endian CPU.
func Open(Options) (*Probe, error) {
	return nil, errUnsupported
}

func (*Probe) Hook() string                   { return "" }
func (*Probe) Started() time.Time             { return time.Time{} }
func (*Probe) Collect() (Snapshot, error)     { return Snapshot{}, errUnsupported }
func (*Probe) Forget(Dev) error               { return errUnsupported }
func (*Probe) Stats() ([]ProgramStats, error) { return nil, errUnsupported }
func (*Probe) Close() error                   { return nil }

var errUnsupported = &UnavailableError{Cause: CauseUnsupportedOS, Detail: runtime.GOOS + "/" + runtime.GOARCH}

// CgroupProbe exists here only so that callers compile: OpenCgroups always fails on this platform.
type CgroupProbe struct{}

// OpenCgroups reports that block latency needs Linux eBPF on a little-endian CPU.
func OpenCgroups(CgroupOptions) (*CgroupProbe, error) { return nil, errUnsupported }

func (*CgroupProbe) Hook() string       { return "" }
func (*CgroupProbe) Started() time.Time { return time.Time{} }
func (*CgroupProbe) Collect(func() (map[uint64]string, error)) (CgroupSnapshot, error) {
	return CgroupSnapshot{}, errUnsupported
}
func (*CgroupProbe) Stats() ([]ProgramStats, error) { return nil, errUnsupported }
func (*CgroupProbe) Close() error                   { return nil }

// Unavailable reports that measure needs Linux eBPF on a little-endian CPU.
func Unavailable(measure string, err error) *UnavailableError {
	return &UnavailableError{Measure: measure, Cause: CauseUnsupportedOS, Detail: runtime.GOOS + "/" + runtime.GOARCH, Err: err}
}

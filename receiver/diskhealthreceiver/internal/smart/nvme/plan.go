package nvme

import (
	"encoding/binary"
	"fmt"
)

// SupportedLogsSize is the size of the Supported Log Pages log (00h): one
// 4-byte entry per log identifier.
const SupportedLogsSize = 1024

// SupportedLogs is the Supported Log Pages log: which log identifiers the
// controller keeps (LSUPP, bit 0 of each entry), vendor-specific ones
// included.
type SupportedLogs [256]bool

// ParseSupportedLogs decodes log 00h.
func ParseSupportedLogs(b []byte) (*SupportedLogs, error) {
	if len(b) < SupportedLogsSize {
		return nil, fmt.Errorf("nvme supported log pages: %d bytes, want %d", len(b), SupportedLogsSize)
	}
	var s SupportedLogs
	for i := range s {
		s[i] = binary.LittleEndian.Uint32(b[4*i:])&1 != 0
	}
	if !s[LogSupportedLogs] {
		// The log lists itself; a page that does not is no such log.
		return nil, fmt.Errorf("nvme supported log pages: the page does not list itself")
	}
	return &s, nil
}

// lpaTelemetry is the LPA bit that says the telemetry logs (07h, 08h) exist.
const lpaTelemetry = 1 << 3

// HasSupportedLogs reports whether the controller keeps the Supported Log
// Pages log: mandatory from NVMe 2.0 on, absent before. It is the only
// way to learn about vendor-specific logs short of asking for them, which
// an unsupported log answers with an error the drive counts for life.
func (c *Controller) HasSupportedLogs() bool { return c.Version >= 0x00020000 }

// Plan is which optional logs one controller is asked for. A log not in
// the plan is never requested from that controller.
type Plan struct {
	// ErrorEntries is how many Error Information entries to read: the
	// controller's capacity (ELPE+1).
	ErrorEntries int
	Telemetry    bool
	OCPSMART     bool
	// OCPLatency is read only once C0h has proven the drive OCP (its GUID
	// and a page version of OCP 2.0 or later).
	OCPLatency bool
	Amazon     AmazonKind // 0: not an Amazon controller
}

// PlanLogs decides what a controller is asked for beyond the mandatory
// SMART log, from Identify Controller and, where the controller has it,
// the Supported Log Pages log (sup, nil when absent):
//   - the Error Information log is mandatory: always, ELPE+1 entries;
//   - Telemetry Controller-Initiated (header only): listed in sup, or,
//     without sup, the LPA telemetry bit;
//   - OCP C0h and C3h: only when sup lists them. Vendor logs have no LPA
//     bit, and a drive before NVMe 2.0 cannot say it keeps them;
//   - Amazon D0h: only an Amazon controller (PCI vendor 1D0Fh) whose model
//     is an EBS volume or instance store, the only ones that document it.
func PlanLogs(c *Controller, sup *SupportedLogs) Plan {
	p := Plan{ErrorEntries: c.ErrorLogCapacity}
	if sup != nil {
		p.Telemetry = sup[LogTelemetryController]
		p.OCPSMART = sup[LogOCPSMART]
		p.OCPLatency = p.OCPSMART && sup[LogOCPLatency]
	} else {
		p.Telemetry = c.LPA&lpaTelemetry != 0
	}
	p.Amazon, _ = AmazonKindOf(c)
	return p
}

package nvme

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/ascii"
)

// OCP Datacenter NVMe SSD log pages (vendor-specific LIDs the OCP
// specification assigns). Each ends with a 2-byte version at 494 and a
// 16-byte GUID at 496 that identifies the layout: a vendor log at the same
// LID on a drive that is not OCP carries something else, so nothing is
// decoded without the GUID.
const (
	LogOCPSMART   = 0xC0 // SMART / Health Information Extended
	LogOCPLatency = 0xC3 // Latency Monitor

	OCPLogSize = 512
)

// GUIDs as the bytes appear in the page (the specification writes them as
// one 128-bit little-endian number: AFD514C97C6F4F9CA4F2BFEA2810AFC5h for
// C0h, 85D45E58D4E643709C6C84D08CC07A92h for C3h).
var (
	ocpSMARTGUID   = guidBytes(0xAFD514C97C6F4F9C, 0xA4F2BFEA2810AFC5)
	ocpLatencyGUID = guidBytes(0x85D45E58D4E64370, 0x9C6C84D08CC07A92)
)

func guidBytes(hi, lo uint64) [16]byte {
	var g [16]byte
	binary.LittleEndian.PutUint64(g[0:], lo)
	binary.LittleEndian.PutUint64(g[8:], hi)
	return g
}

// OCP C0h log page versions. The page version, not the drive's claimed
// DSSD version, says which fields exist: 2 is the Cloud SSD 1.0 layout,
// 3 adds the OCP 2.0 fields, 4 the OCP 2.5 ones (command set errata,
// lowest permitted firmware), and 5 the die, erase, power and DSSD
// firmware fields nvme-cli prints from that version on. Fields of a
// later version read as zero on an earlier page, so they are left unset.
const (
	OCPSMARTVersion20  = 3
	OCPSMARTVersion25  = 4
	OCPSMARTVersionDie = 5
)

// NormalizedCount is a raw counter with the drive's normalized value
// (percent remaining, 100 = none used).
type NormalizedCount struct {
	Raw        uint64
	Normalized uint16
}

// OCPSMARTLog is the OCP SMART / Health Information Extended log (C0h).
type OCPSMARTLog struct {
	Version uint16

	// PhysicalMediaWritten/Read are bytes written to and read from the
	// media (NAND), host and internal traffic together: the numerator of
	// write amplification.
	PhysicalMediaWritten Uint128
	PhysicalMediaRead    Uint128
	BadUserNANDBlocks    NormalizedCount
	BadSystemNANDBlocks  NormalizedCount
	XORRecoveries        uint64
	UncorrectableReads   uint64
	SoftECCErrors        uint64
	EndToEndDetected     uint32
	EndToEndCorrected    uint32
	// SystemDataPercentUsed is the percentage of the system area's rated
	// erase cycles used.
	SystemDataPercentUsed uint8
	Refreshes             uint64 // 56 bits
	MaxUserEraseCount     uint32
	MinUserEraseCount     uint32
	ThermalThrottleEvents uint8
	// ThrottleStatus: 0 none, 1 first level, 2 second, 3 third; F0h
	// critical.
	ThrottleStatus        uint8
	PCIeCorrectableErrors uint64
	IncompleteShutdowns   uint32
	PercentFreeBlocks     uint8
	// CapacitorHealth is the power-loss capacitor's health in percent;
	// FFFFh means the drive has no capacitor.
	CapacitorHealth uint16
	UnalignedIO     uint64
	SecurityVersion uint64
	// TotalNUSE is the namespace utilization over all namespaces, blocks.
	TotalNUSE         uint64
	PLPStarts         Uint128
	EnduranceEstimate Uint128 // bytes the drive can be written

	// OCP 2.0 (version ≥ 3).
	DSSDVersion          DSSDVersion
	NVMeBaseErrata       uint8
	PCIeLinkRetrainings  uint64
	PowerStateChanges    uint64
	NVMeCommandSetErrata uint8  // version ≥ 4
	LowestPermittedFWRev uint64 // version ≥ 4

	// Version ≥ 5.
	NVMeOverPCIeErrata    uint8
	NVMeMIErrata          uint8
	TotalMediaDies        uint16
	DieFailureTolerance   uint16
	MediaDiesOffline      uint16
	MaxTemperature        uint8 // °C
	NANDAvgEraseCount     uint64
	CommandTimeouts       uint32
	SysAreaProgramFails   NormalizedCount
	SysAreaUncorrReads    NormalizedCount
	SysAreaEraseFails     NormalizedCount
	MaxPeakPower          uint16 // W
	CurrentMaxAvgPower    uint16 // W
	LifetimePowerConsumed uint64 // Wh, 48 bits
	DSSDFirmwareRevision  string
	DSSDFirmwareBuildUUID [16]byte
	DSSDFirmwareBuildLbl  string
}

// DSSDVersion is the OCP specification version the drive conforms to.
type DSSDVersion struct {
	Major        uint8
	Minor, Point uint16
	Errata       uint8
}

func (v DSSDVersion) String() string {
	return fmt.Sprintf("%d.%d.%d-%d", v.Major, v.Minor, v.Point, v.Errata)
}

// HasCapacitor reports whether CapacitorHealth is a reading.
func (l *OCPSMARTLog) HasCapacitor() bool { return l.CapacitorHealth != 0xFFFF }

// ErrNotOCP is returned for a page whose GUID is not the OCP one.
type ErrNotOCP struct {
	LID  uint8
	GUID [16]byte
}

func (e *ErrNotOCP) Error() string {
	return fmt.Sprintf("log %02Xh is not the OCP layout (GUID %x)", e.LID, e.GUID)
}

func ocpTrailer(b []byte, lid uint8, want [16]byte) (uint16, error) {
	if len(b) < OCPLogSize {
		return 0, fmt.Errorf("ocp log %02Xh: %d bytes, want %d", lid, len(b), OCPLogSize)
	}
	var g [16]byte
	copy(g[:], b[496:512])
	if g != want {
		return 0, &ErrNotOCP{LID: lid, GUID: g}
	}
	return binary.LittleEndian.Uint16(b[494:]), nil
}

func uint48At(b []byte) uint64 {
	return uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint16(b[4:]))<<32
}

func normalizedAt(b []byte, rawLen int) NormalizedCount {
	var raw uint64
	for i := rawLen - 1; i >= 0; i-- {
		raw = raw<<8 | uint64(b[i])
	}
	return NormalizedCount{Raw: raw, Normalized: binary.LittleEndian.Uint16(b[rawLen:])}
}

// ParseOCPSMARTLog decodes log C0h after checking its GUID.
func ParseOCPSMARTLog(b []byte) (*OCPSMARTLog, error) {
	v, err := ocpTrailer(b, LogOCPSMART, ocpSMARTGUID)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	l := &OCPSMARTLog{
		Version:               v,
		PhysicalMediaWritten:  uint128At(b[0:]),
		PhysicalMediaRead:     uint128At(b[16:]),
		BadUserNANDBlocks:     normalizedAt(b[32:], 6),
		BadSystemNANDBlocks:   normalizedAt(b[40:], 6),
		XORRecoveries:         le.Uint64(b[48:]),
		UncorrectableReads:    le.Uint64(b[56:]),
		SoftECCErrors:         le.Uint64(b[64:]),
		EndToEndDetected:      le.Uint32(b[72:]),
		EndToEndCorrected:     le.Uint32(b[76:]),
		SystemDataPercentUsed: b[80],
		Refreshes:             le.Uint64(b[80:]) >> 8,
		MaxUserEraseCount:     le.Uint32(b[88:]),
		MinUserEraseCount:     le.Uint32(b[92:]),
		ThermalThrottleEvents: b[96],
		ThrottleStatus:        b[97],
		PCIeCorrectableErrors: le.Uint64(b[104:]),
		IncompleteShutdowns:   le.Uint32(b[112:]),
		PercentFreeBlocks:     b[120],
		CapacitorHealth:       le.Uint16(b[128:]),
		UnalignedIO:           le.Uint64(b[136:]),
		SecurityVersion:       le.Uint64(b[144:]),
		TotalNUSE:             le.Uint64(b[152:]),
		PLPStarts:             uint128At(b[160:]),
		EnduranceEstimate:     uint128At(b[176:]),
	}
	if v >= OCPSMARTVersion20 {
		l.DSSDVersion = DSSDVersion{Errata: b[98], Point: le.Uint16(b[99:]), Minor: le.Uint16(b[101:]), Major: b[103]}
		l.NVMeBaseErrata = b[130]
		l.PCIeLinkRetrainings = le.Uint64(b[192:])
		l.PowerStateChanges = le.Uint64(b[200:])
	}
	if v >= OCPSMARTVersion25 {
		l.NVMeCommandSetErrata = b[131]
		l.LowestPermittedFWRev = le.Uint64(b[208:])
	}
	if v >= OCPSMARTVersionDie {
		l.NVMeOverPCIeErrata, l.NVMeMIErrata = b[132], b[133]
		l.TotalMediaDies = le.Uint16(b[216:])
		l.DieFailureTolerance = le.Uint16(b[218:])
		l.MediaDiesOffline = le.Uint16(b[220:])
		l.MaxTemperature = b[222]
		l.NANDAvgEraseCount = le.Uint64(b[224:])
		l.CommandTimeouts = le.Uint32(b[232:])
		l.SysAreaProgramFails = NormalizedCount{Raw: uint64(le.Uint32(b[236:])), Normalized: uint16(b[240])}
		l.SysAreaUncorrReads = NormalizedCount{Raw: uint64(le.Uint32(b[244:])), Normalized: uint16(b[248])}
		l.SysAreaEraseFails = NormalizedCount{Raw: uint64(le.Uint32(b[252:])), Normalized: uint16(b[256])}
		l.MaxPeakPower = le.Uint16(b[260:])
		l.CurrentMaxAvgPower = le.Uint16(b[262:])
		l.LifetimePowerConsumed = uint48At(b[264:])
		l.DSSDFirmwareRevision = ascii.Clean(b[270:278])
		copy(l.DSSDFirmwareBuildUUID[:], b[278:294])
		l.DSSDFirmwareBuildLbl = ascii.Clean(b[294:358])
	}
	return l, nil
}

// LatencyOp is an operation the latency monitor counts.
type LatencyOp uint8

// Latency monitor operations, in the order of LatencyBuckets' columns.
const (
	LatencyRead LatencyOp = iota
	LatencyWrite
	LatencyDeallocate
)

// LatencyBuckets are four buckets' command counts per operation.
type LatencyBuckets [4][3]uint32

// OCPLatencyLog is the OCP Latency Monitor log (C3h), reduced to its
// configuration and bucket counters. The per-bucket time stamps and
// measured latencies are not decoded: the public decoders disagree on
// their order, and the counters are what a histogram needs.
type OCPLatencyLog struct {
	Version uint16
	// FeatureStatus bit 0: monitor enabled; 1: active latency
	// configuration supported; 2: active measured latency supported.
	FeatureStatus uint8
	// ActiveBucketTimer and its threshold are in units of 5 minutes.
	ActiveBucketTimer          uint16
	ActiveBucketTimerThreshold uint16
	// Thresholds A-D in units of 5 ms (value+1): the bucket edges.
	Thresholds          [4]uint8
	ActiveLatencyConfig uint16
	MinWindow           uint8 // units of 100 ms
	Active, Static      LatencyBuckets
	ActiveStampUnits    uint16
	StaticStampUnits    uint16
	DebugLogTrigger     uint16
}

// Enabled reports whether the monitor is counting.
func (l *OCPLatencyLog) Enabled() bool { return l.FeatureStatus&1 != 0 }

// ThresholdSeconds returns the edge of threshold i (0 = A … 3 = D).
func (l *OCPLatencyLog) ThresholdSeconds(i int) float64 {
	return float64(int(l.Thresholds[i])+1) * 0.005
}

// The active bucket timer and its threshold count 5-minute steps.
const latencyTimerStep = 5 * time.Minute

// ActiveElapsed is how long the active window has been counting, in whole 5-minute steps (the
// timer's resolution); ActiveLength is how long a window counts before the drive copies the active
// counters to the static ones and starts the next window from zero (0: the host set no length).
func (l *OCPLatencyLog) ActiveElapsed() time.Duration {
	return time.Duration(l.ActiveBucketTimer) * latencyTimerStep
}

// ActiveLength is the length of the active window the host set (see ActiveElapsed).
func (l *OCPLatencyLog) ActiveLength() time.Duration {
	return time.Duration(l.ActiveBucketTimerThreshold) * latencyTimerStep
}

// CheckThresholds rejects an enabled monitor whose thresholds do not rise (A < B < C < D): its
// buckets are then no ranges of latency, and no histogram can be told from them.
func (l *OCPLatencyLog) CheckThresholds() error {
	if !l.Enabled() {
		return nil
	}
	for i := 1; i < len(l.Thresholds); i++ {
		if l.Thresholds[i] <= l.Thresholds[i-1] {
			return fmt.Errorf("ocp log C3h: latency monitor thresholds %v do not rise (A < B < C < D)", l.Thresholds)
		}
	}
	return nil
}

// LatencyHistogram is one operation's counters of a latency monitor window as histogram buckets, in
// seconds. Bounds are thresholds A-D; Counts has one more entry: Counts[0] is the commands faster than
// A, always 0 because the monitor counts none of them (bucket 0 holds [A, B), 1 [B, C), 2 [C, D) and
// 3 everything from D on, the OCP specification's buckets); the total is the number of slow commands.
type LatencyHistogram struct {
	Bounds []float64
	Counts []uint64
	Total  uint64
}

// ActiveHistogram is op's active window as a histogram; ok is false while the monitor is disabled or
// its thresholds do not rise (CheckThresholds).
func (l *OCPLatencyLog) ActiveHistogram(op LatencyOp) (LatencyHistogram, bool) {
	if !l.Enabled() || l.CheckThresholds() != nil {
		return LatencyHistogram{}, false
	}
	h := LatencyHistogram{Bounds: make([]float64, len(l.Thresholds)), Counts: make([]uint64, 1, len(l.Thresholds)+1)}
	for i := range l.Thresholds {
		h.Bounds[i] = l.ThresholdSeconds(i)
		c := uint64(l.Active[i][op])
		h.Counts = append(h.Counts, c)
		h.Total += c
	}
	return h, true
}

// SameActiveWindow reports whether cur, read dt after prev, still counts in prev's active window.
// A new window began when the thresholds changed (the buckets mean something else), the timer went
// back, a counter went back (the drive zeroes them when a window ends, and when the host reconfigures
// the monitor), or more time passed than the window has left, with one timer step of slack for the
// timer's resolution (a read interval longer than the window cannot see its end otherwise).
func SameActiveWindow(prev, cur *OCPLatencyLog, dt time.Duration) bool {
	if prev == nil || cur == nil || !prev.Enabled() || !cur.Enabled() || dt < 0 ||
		prev.Thresholds != cur.Thresholds || cur.ActiveBucketTimer < prev.ActiveBucketTimer {
		return false
	}
	for i := range cur.Active {
		for j := range cur.Active[i] {
			if cur.Active[i][j] < prev.Active[i][j] {
				return false
			}
		}
	}
	// A timer already past the length (the host shortened the window) leaves the timer and counters
	// to tell.
	if n := cur.ActiveLength(); n > prev.ActiveElapsed() && prev.ActiveElapsed()+dt >= n+latencyTimerStep {
		return false
	}
	return true
}

// bucketsAt reads four 16-byte bucket counter groups. Within a group the
// dwords are reserved, deallocate, write, read (nvme-cli's layout).
func bucketsAt(b []byte) LatencyBuckets {
	var out LatencyBuckets
	for i := range out {
		g := b[16*i:]
		out[i][LatencyRead] = binary.LittleEndian.Uint32(g[12:])
		out[i][LatencyWrite] = binary.LittleEndian.Uint32(g[8:])
		out[i][LatencyDeallocate] = binary.LittleEndian.Uint32(g[4:])
	}
	return out
}

// ParseOCPLatencyLog decodes log C3h after checking its GUID.
func ParseOCPLatencyLog(b []byte) (*OCPLatencyLog, error) {
	v, err := ocpTrailer(b, LogOCPLatency, ocpLatencyGUID)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	return &OCPLatencyLog{
		Version:                    v,
		FeatureStatus:              b[0],
		ActiveBucketTimer:          le.Uint16(b[2:]),
		ActiveBucketTimerThreshold: le.Uint16(b[4:]),
		Thresholds:                 [4]uint8{b[6], b[7], b[8], b[9]},
		ActiveLatencyConfig:        le.Uint16(b[10:]),
		MinWindow:                  b[12],
		Active:                     bucketsAt(b[32:]),
		ActiveStampUnits:           le.Uint16(b[216:]),
		Static:                     bucketsAt(b[240:]),
		StaticStampUnits:           le.Uint16(b[424:]),
		DebugLogTrigger:            le.Uint16(b[448:]),
	}, nil
}

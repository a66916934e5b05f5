package nvme

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOCPSMARTLogEveryField(t *testing.T) {
	l, err := ParseOCPSMARTLog(buildPage(t, OCPLogSize, ocpSMARTFields(5)...))
	require.NoError(t, err)
	assert.Equal(t, wantOCPSMART(), *l)
	assert.Equal(t, "2.5.3-1", l.DSSDVersion.String())
	assert.True(t, l.HasCapacitor())
}

// A page's version says which fields exist: the same bytes at an earlier
// version leave the later fields unset (reserved on such a drive).
func TestOCPSMARTLogVersions(t *testing.T) {
	for _, tc := range []struct {
		version uint64
		clear   func(*OCPSMARTLog)
	}{
		{OCPSMARTVersion25, func(l *OCPSMARTLog) { clearDie(l) }},
		{OCPSMARTVersion20, func(l *OCPSMARTLog) {
			clearDie(l)
			l.NVMeCommandSetErrata, l.LowestPermittedFWRev = 0, 0
		}},
		{2, func(l *OCPSMARTLog) {
			clearDie(l)
			l.NVMeCommandSetErrata, l.LowestPermittedFWRev = 0, 0
			l.DSSDVersion, l.NVMeBaseErrata, l.PCIeLinkRetrainings, l.PowerStateChanges = DSSDVersion{}, 0, 0, 0
		}},
	} {
		l, err := ParseOCPSMARTLog(buildPage(t, OCPLogSize, ocpSMARTFields(tc.version)...))
		require.NoError(t, err)
		want := wantOCPSMART()
		want.Version = uint16(tc.version)
		tc.clear(&want)
		assert.Equal(t, want, *l, "version %d", tc.version)
	}
}

func clearDie(l *OCPSMARTLog) {
	*l = OCPSMARTLog{
		Version: l.Version, PhysicalMediaWritten: l.PhysicalMediaWritten, PhysicalMediaRead: l.PhysicalMediaRead,
		BadUserNANDBlocks: l.BadUserNANDBlocks, BadSystemNANDBlocks: l.BadSystemNANDBlocks, XORRecoveries: l.XORRecoveries,
		UncorrectableReads: l.UncorrectableReads, SoftECCErrors: l.SoftECCErrors, EndToEndDetected: l.EndToEndDetected,
		EndToEndCorrected: l.EndToEndCorrected, SystemDataPercentUsed: l.SystemDataPercentUsed, Refreshes: l.Refreshes,
		MaxUserEraseCount: l.MaxUserEraseCount, MinUserEraseCount: l.MinUserEraseCount, ThermalThrottleEvents: l.ThermalThrottleEvents,
		ThrottleStatus: l.ThrottleStatus, PCIeCorrectableErrors: l.PCIeCorrectableErrors, IncompleteShutdowns: l.IncompleteShutdowns,
		PercentFreeBlocks: l.PercentFreeBlocks, CapacitorHealth: l.CapacitorHealth, UnalignedIO: l.UnalignedIO,
		SecurityVersion: l.SecurityVersion, TotalNUSE: l.TotalNUSE, PLPStarts: l.PLPStarts, EnduranceEstimate: l.EnduranceEstimate,
		DSSDVersion: l.DSSDVersion, NVMeBaseErrata: l.NVMeBaseErrata, PCIeLinkRetrainings: l.PCIeLinkRetrainings,
		PowerStateChanges: l.PowerStateChanges, NVMeCommandSetErrata: l.NVMeCommandSetErrata, LowestPermittedFWRev: l.LowestPermittedFWRev,
	}
}

func TestOCPLogsCheckTheGUID(t *testing.T) {
	b := buildPage(t, OCPLogSize, ocpSMARTFields(5)...)
	b[511] ^= 0xFF
	_, err := ParseOCPSMARTLog(b)
	var notOCP *ErrNotOCP
	require.ErrorAs(t, err, &notOCP)
	assert.Equal(t, uint8(LogOCPSMART), notOCP.LID)

	// The latency monitor's GUID is not the SMART log's.
	_, err = ParseOCPLatencyLog(buildPage(t, OCPLogSize, ocpSMARTFields(5)...))
	require.ErrorAs(t, err, &notOCP)
	_, err = ParseOCPSMARTLog(buildPage(t, OCPLogSize, ocpLatencyFields()...))
	require.ErrorAs(t, err, &notOCP)

	_, err = ParseOCPSMARTLog(make([]byte, 511))
	require.ErrorContains(t, err, "511 bytes")

	b = buildPage(t, OCPLogSize, field{128, 2, u(0xFFFF)}, field{494, 2, u(3)}, ocpSMARTGUIDField)
	l, err := ParseOCPSMARTLog(b)
	require.NoError(t, err)
	assert.False(t, l.HasCapacitor(), "FFFFh: no capacitor")
}

func TestOCPLatencyLogEveryField(t *testing.T) {
	l, err := ParseOCPLatencyLog(buildPage(t, OCPLogSize, ocpLatencyFields()...))
	require.NoError(t, err)
	want := OCPLatencyLog{
		Version: 4, FeatureStatus: 7, ActiveBucketTimer: 288, ActiveBucketTimerThreshold: 2016,
		Thresholds: [4]uint8{0, 3, 19, 199}, ActiveLatencyConfig: 0x0FFF, MinWindow: 10,
		ActiveStampUnits: 1, StaticStampUnits: 2, DebugLogTrigger: 0x0A5A,
	}
	for i := range 4 {
		for j := range 3 {
			want.Active[i][j] = uint32(1000*(i+1) + 10*(j+1))
			want.Static[i][j] = want.Active[i][j] + 5
		}
	}
	assert.Equal(t, want, *l)
	assert.True(t, l.Enabled())
	assert.Equal(t, uint32(1010), l.Active[0][LatencyRead])
	assert.Equal(t, uint32(4030), l.Active[3][LatencyDeallocate])
	assert.InDelta(t, 0.005, l.ThresholdSeconds(0), 1e-12)
	assert.InDelta(t, 1.0, l.ThresholdSeconds(3), 1e-12)
}

func TestAmazonEBSEveryField(t *testing.T) {
	s, err := ParseAmazonStats(buildPage(t, AmazonLogSize, amazonEBSFields(64, 3)...))
	require.NoError(t, err)
	assert.Equal(t, AmazonEBS, s.Kind)
	c := func(i int) uint64 { return uint64(1_000_003 * (i + 1)) }
	assert.Equal(t, []uint64{c(0), c(1), c(2), c(3)}, []uint64{s.ReadOps, s.WriteOps, s.ReadBytes, s.WriteBytes})
	assert.Equal(t, time.Duration(c(4))*time.Microsecond, s.ReadTime)
	assert.Equal(t, time.Duration(c(5))*time.Microsecond, s.WriteTime)
	assert.Equal(t, time.Duration(c(6))*time.Microsecond, s.VolumeIOPSExceeded)
	assert.Equal(t, time.Duration(c(7))*time.Microsecond, s.VolumeThroughputExceeded)
	assert.Equal(t, time.Duration(c(8))*time.Microsecond, s.InstanceIOPSExceeded)
	assert.Equal(t, time.Duration(c(9))*time.Microsecond, s.InstanceThroughputExceeded)
	assert.Equal(t, c(10), s.QueueLength)
	require.Len(t, s.ReadLatency, 64, "all 64 bins")
	require.Len(t, s.WriteLatency, 3)
	assert.Equal(t, LatencyBin{Lower: 0, Upper: 1, Count: 100}, s.ReadLatency[0])
	assert.Equal(t, LatencyBin{Lower: 1 << 62, Upper: 1 << 63, Count: 163}, s.ReadLatency[63])
	assert.Equal(t, LatencyBin{Lower: 2, Upper: 4, Count: 202}, s.WriteLatency[2])
}

func TestAmazonInstanceStoreEveryField(t *testing.T) {
	s, err := ParseAmazonStats(buildPage(t, AmazonLogSize, amazonInstanceStoreFields(5, 32)...))
	require.NoError(t, err)
	assert.Equal(t, AmazonInstanceStore, s.Kind)
	c := func(i int) uint64 { return uint64(7_000_001 * (i + 1)) }
	assert.Equal(t, []uint64{c(0), c(1), c(2), c(3), c(10)}, []uint64{s.ReadOps, s.WriteOps, s.ReadBytes, s.WriteBytes, s.QueueLength})
	assert.Equal(t, time.Duration(c(4))*time.Microsecond, s.ReadTime)
	assert.Equal(t, time.Duration(c(5))*time.Microsecond, s.WriteTime)
	assert.Zero(t, s.VolumeIOPSExceeded, "no volume limits on instance store")
	assert.Zero(t, s.VolumeThroughputExceeded)
	assert.Equal(t, time.Duration(c(8))*time.Microsecond, s.InstanceIOPSExceeded)
	assert.Equal(t, time.Duration(c(9))*time.Microsecond, s.InstanceThroughputExceeded)
	require.Len(t, s.ReadLatency, 32)
	// Summed over the five size ranges: Σh (10h+i+1) and Σh (1000h+i+2).
	for i, bin := range s.ReadLatency {
		assert.Equal(t, uint64(100+5*(i+1)), bin.Count, "read bin %d", i)
		assert.Equal(t, uint64(10000+5*(i+2)), s.WriteLatency[i].Count, "write bin %d", i)
		assert.Equal(t, uint64(1)<<i, bin.Upper)
		assert.Equal(t, bin.Upper, s.WriteLatency[i].Upper)
	}
}

func TestAmazonRejects(t *testing.T) {
	_, err := ParseAmazonStats(buildPage(t, AmazonLogSize, field{0, 4, u(0x12345678)}))
	require.ErrorContains(t, err, "magic 0x12345678")
	_, err = ParseAmazonStats(make([]byte, 512))
	require.ErrorContains(t, err, "512 bytes")
	_, err = ParseAmazonStats(buildPage(t, AmazonLogSize, field{0, 4, u(AmazonMagicEBS)}, field{512, 8, u(65)}))
	require.ErrorContains(t, err, "65 bins")
	// Bins out of order would make a wrong histogram.
	b := buildPage(t, AmazonLogSize, amazonEBSFields(3, 0)...)
	binary.LittleEndian.PutUint64(b[512+8+24:], 0) // bin 1 lower bound below bin 0's upper
	_, err = ParseAmazonStats(b)
	require.ErrorContains(t, err, "bin 1")
	_, err = ParseAmazonStats(buildPage(t, AmazonLogSize, field{0, 4, u(AmazonMagicInstanceStore)}, field{96, 4, u(6)}))
	require.ErrorContains(t, err, "6 histograms")
}

func TestAmazonKindOf(t *testing.T) {
	for _, tc := range []struct {
		vid   uint16
		model string
		kind  AmazonKind
		ok    bool
	}{
		{VendorAmazon, AmazonModelEBS, AmazonEBS, true},
		{VendorAmazon, AmazonModelInstanceStore, AmazonInstanceStore, true},
		{VendorAmazon, "Amazon EC2 NVMe Something New", 0, false},
		{0x144D, AmazonModelEBS, 0, false},
	} {
		k, ok := AmazonKindOf(&Controller{VendorID: tc.vid, Model: tc.model})
		assert.Equal(t, tc.kind, k, tc.model)
		assert.Equal(t, tc.ok, ok, tc.model)
	}
	assert.Equal(t, "ebs", AmazonEBS.String())
	assert.Equal(t, "instance_store", AmazonInstanceStore.String())
}

func TestErrorLogEveryField(t *testing.T) {
	// Newest first, an empty slot at index 1, then an older entry.
	fields := append(errorEntryFields(0, 901), errorEntryFields(2, 899)...)
	entries, err := ParseErrorLog(buildPage(t, 4*ErrorEntrySize, fields...))
	require.NoError(t, err)
	require.Len(t, entries, 2, "the empty entry is dropped")
	assert.Equal(t, ErrorEntry{
		Count: 901, SQID: 1, CID: 0x1234, Status: 0x4005, Phase: true, ParamLocation: 0x0304,
		LBA: 0xABCDEF012345 + 901, NSID: 1, VendorLogPage: 0xC0, TransportType: 3,
		CommandInfo: 0x5555AAAA0000 + 901, TransportInfo: 0x0102,
	}, entries[0])
	assert.Equal(t, uint64(899), entries[1].Count)
	assert.Equal(t, uint16(3), entries[1].SQID)
	assert.Equal(t, uint8(0x05), entries[0].StatusCode())
	assert.Equal(t, uint8(0), entries[0].StatusCodeType())
	assert.True(t, entries[0].DoNotRetry())
	assert.Equal(t, "0/05h", entries[0].StatusString())

	_, err = ParseErrorLog(make([]byte, 100))
	require.ErrorContains(t, err, "100 bytes")
}

func TestNewErrorsOncePerEntry(t *testing.T) {
	page := buildPage(t, 4*ErrorEntrySize, append(append(errorEntryFields(0, 12), errorEntryFields(1, 11)...), errorEntryFields(2, 10)...)...)
	entries, err := ParseErrorLog(page)
	require.NoError(t, err)
	fresh, high := NewErrors(entries, 0)
	assert.Equal(t, []uint64{10, 11, 12}, counts(fresh), "oldest first")
	assert.Equal(t, uint64(12), high)
	fresh, high = NewErrors(entries, high)
	assert.Empty(t, fresh, "nothing twice")
	assert.Equal(t, uint64(12), high)
	fresh, _ = NewErrors(entries, 10)
	assert.Equal(t, []uint64{11, 12}, counts(fresh))
}

func counts(es []ErrorEntry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Count
	}
	return out
}

func TestTelemetryHeader(t *testing.T) {
	h, err := ParseTelemetryHeader(buildPage(t, TelemetryHeaderSize, field{0, 1, u(LogTelemetryController)}, field{382, 1, u(1)}, field{383, 1, u(7)}))
	require.NoError(t, err)
	assert.Equal(t, TelemetryHeader{Available: true, Generation: 7}, *h)
	h, err = ParseTelemetryHeader(buildPage(t, TelemetryHeaderSize, field{0, 1, u(LogTelemetryController)}, field{382, 1, u(0xFE)}))
	require.NoError(t, err)
	assert.False(t, h.Available, "only bit 0 says so")
	_, err = ParseTelemetryHeader(buildPage(t, TelemetryHeaderSize, field{0, 1, u(0x07)}))
	require.ErrorContains(t, err, "07h")
	_, err = ParseTelemetryHeader(make([]byte, 10))
	require.ErrorContains(t, err, "10 bytes")
}

func supportedPage(t *testing.T, lids ...uint8) []byte {
	var f []field
	for _, l := range lids {
		f = append(f, field{4 * int(l), 4, u(0x00010001)})
	}
	return buildPage(t, SupportedLogsSize, f...)
}

func TestSupportedLogsAndPlan(t *testing.T) {
	sup, err := ParseSupportedLogs(supportedPage(t, 0x00, 0x01, 0x02, 0x08, LogOCPSMART, LogOCPLatency))
	require.NoError(t, err)
	assert.True(t, sup[LogOCPSMART])
	assert.False(t, sup[LogAmazon])
	_, err = ParseSupportedLogs(supportedPage(t, 0x01, 0x02))
	require.ErrorContains(t, err, "does not list itself")
	_, err = ParseSupportedLogs(make([]byte, 4))
	require.ErrorContains(t, err, "4 bytes")

	v20 := &Controller{Version: 0x00020000, ErrorLogCapacity: 64}
	assert.True(t, v20.HasSupportedLogs())
	assert.False(t, (&Controller{Version: 0x00010400}).HasSupportedLogs())
	assert.Equal(t, Plan{ErrorEntries: 64, Telemetry: true, OCPSMART: true, OCPLatency: true}, PlanLogs(v20, sup))

	onlyC0, err := ParseSupportedLogs(supportedPage(t, 0x00, LogOCPSMART))
	require.NoError(t, err)
	assert.Equal(t, Plan{ErrorEntries: 64, OCPSMART: true}, PlanLogs(v20, onlyC0))
	onlyC3, err := ParseSupportedLogs(supportedPage(t, 0x00, LogOCPLatency))
	require.NoError(t, err)
	assert.Equal(t, Plan{ErrorEntries: 64}, PlanLogs(v20, onlyC3), "C3h only on a drive that also keeps C0h")

	// Without the list: LPA's telemetry bit, never a vendor log.
	old := &Controller{Version: 0x00010400, LPA: lpaTelemetry, ErrorLogCapacity: 16}
	assert.Equal(t, Plan{ErrorEntries: 16, Telemetry: true}, PlanLogs(old, nil))
	ebs := &Controller{VendorID: VendorAmazon, Model: AmazonModelEBS, ErrorLogCapacity: 256}
	assert.Equal(t, Plan{ErrorEntries: 256, Amazon: AmazonEBS}, PlanLogs(ebs, nil))
}

// WAF over one interval, exact on a synthetic pair: 25 data units of media
// writes (12.8 MB) for 10 host data units (5.12 MB) is 2.5.
func TestWriteAmplification(t *testing.T) {
	prevMedia, prevHost := Uint128{Lo: 7_000_000_000}, Uint128{Lo: 1_000}
	curMedia := Uint128{Lo: 7_000_000_000 + 25*dataUnitBytes}
	curHost := Uint128{Lo: 1_010}
	w, ok := WriteAmplification(prevMedia, curMedia, prevHost, curHost)
	require.True(t, ok)
	assert.Equal(t, 2.5, w)

	// Across the 64-bit boundary of the media counter.
	w, ok = WriteAmplification(Uint128{Lo: 1<<64 - 512000}, Uint128{Hi: 1, Lo: 512000}, Uint128{Lo: 5}, Uint128{Lo: 6})
	require.True(t, ok)
	assert.Equal(t, 2.0, w)

	_, ok = WriteAmplification(prevMedia, curMedia, prevHost, prevHost)
	assert.False(t, ok, "no host writes: no ratio")
	_, ok = WriteAmplification(curMedia, prevMedia, prevHost, curHost)
	assert.False(t, ok, "media counter went back")
	_, ok = WriteAmplification(prevMedia, curMedia, curHost, prevHost)
	assert.False(t, ok, "host counter went back")
}

func TestThrottlingBetween(t *testing.T) {
	prev := &AmazonStats{Kind: AmazonEBS, VolumeIOPSExceeded: time.Second, InstanceThroughputExceeded: 5 * time.Second}
	cur := &AmazonStats{Kind: AmazonEBS, VolumeIOPSExceeded: 16 * time.Second, VolumeThroughputExceeded: 90 * time.Second,
		InstanceThroughputExceeded: 5 * time.Second}
	th, ok := ThrottlingBetween(prev, cur, time.Minute)
	require.True(t, ok)
	assert.Equal(t, Throttling{VolumeIOPS: 0.25, VolumeThroughput: 1}, th, "15 s of 60 s; 90 s capped at the whole interval")

	_, ok = ThrottlingBetween(cur, prev, time.Minute)
	assert.False(t, ok, "counters went back: reattached")
	_, ok = ThrottlingBetween(prev, cur, 0)
	assert.False(t, ok)
	_, ok = ThrottlingBetween(nil, cur, time.Minute)
	assert.False(t, ok)
	_, ok = ThrottlingBetween(&AmazonStats{Kind: AmazonInstanceStore}, cur, time.Minute)
	assert.False(t, ok)
}

// The active window's counters per operation become a histogram whose bounds are the thresholds the
// page gives (5, 20, 100, 1000 ms) and whose first bucket, below A, is empty: the monitor counts only
// commands of at least A.
func TestOCPLatencyActiveHistogram(t *testing.T) {
	l, err := ParseOCPLatencyLog(buildPage(t, OCPLogSize, ocpLatencyFields()...))
	require.NoError(t, err)
	require.NoError(t, l.CheckThresholds())
	for _, tc := range []struct {
		op   LatencyOp
		want []uint64
	}{
		{LatencyRead, []uint64{0, 1010, 2010, 3010, 4010}},
		{LatencyWrite, []uint64{0, 1020, 2020, 3020, 4020}},
		{LatencyDeallocate, []uint64{0, 1030, 2030, 3030, 4030}},
	} {
		h, ok := l.ActiveHistogram(tc.op)
		require.True(t, ok)
		assert.InDeltaSlice(t, []float64{0.005, 0.020, 0.100, 1.000}, h.Bounds, 1e-12)
		assert.Equal(t, tc.want, h.Counts, "op %d", tc.op)
		assert.Equal(t, tc.want[1]+tc.want[2]+tc.want[3]+tc.want[4], h.Total)
	}
	assert.Equal(t, 288*5*time.Minute, l.ActiveElapsed())
	assert.Equal(t, 7*24*time.Hour, l.ActiveLength(), "2016 steps: the 7 days nvme-cli sets")

	off := *l
	off.FeatureStatus = 0
	_, ok := off.ActiveHistogram(LatencyRead)
	assert.False(t, ok, "a disabled monitor counts nothing")
	require.NoError(t, off.CheckThresholds(), "its thresholds are not used")

	flat := *l
	flat.Thresholds = [4]uint8{3, 3, 19, 199}
	require.ErrorContains(t, flat.CheckThresholds(), "do not rise")
	_, ok = flat.ActiveHistogram(LatencyRead)
	assert.False(t, ok)
}

// A window continues while its timer and counters only grow and no more time passed than it has
// left; anything else is a new window (a new start time for the cumulative histogram).
func TestSameActiveWindow(t *testing.T) {
	prev, err := ParseOCPLatencyLog(buildPage(t, OCPLogSize, ocpLatencyFields()...))
	require.NoError(t, err)
	grown := *prev
	grown.ActiveBucketTimer++
	grown.Active[2][LatencyWrite] += 7
	assert.True(t, SameActiveWindow(prev, &grown, 5*time.Minute))
	assert.True(t, SameActiveWindow(prev, prev, time.Minute), "nothing new")
	assert.False(t, SameActiveWindow(nil, prev, time.Minute), "first read")

	rolled := *prev
	rolled.ActiveBucketTimer = 0
	assert.False(t, SameActiveWindow(prev, &rolled, 5*time.Minute), "the timer went back")
	zeroed := grown
	zeroed.Active[0][LatencyRead] = 0
	assert.False(t, SameActiveWindow(prev, &zeroed, 5*time.Minute), "a counter went back")
	retuned := grown
	retuned.Thresholds[3] = 200
	assert.False(t, SameActiveWindow(prev, &retuned, 5*time.Minute), "other buckets")
	// 288 steps of 2016 ran: 1728 steps (6 days) are left; 6 days and a step later it must have ended,
	// even when the new window's timer and counters have passed the old ones.
	later := grown
	later.ActiveBucketTimer = 2000
	assert.True(t, SameActiveWindow(prev, &later, 6*24*time.Hour))
	assert.False(t, SameActiveWindow(prev, &later, 6*24*time.Hour+5*time.Minute))
	unbounded := later
	unbounded.ActiveBucketTimerThreshold = 0
	assert.True(t, SameActiveWindow(prev, &unbounded, 30*24*time.Hour), "no length set: only the timer and counters tell")
	shortened := later
	shortened.ActiveBucketTimerThreshold = 100
	assert.True(t, SameActiveWindow(prev, &shortened, 30*24*time.Hour), "a timer past the length: the same")
}

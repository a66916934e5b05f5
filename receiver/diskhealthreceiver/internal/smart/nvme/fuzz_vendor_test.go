package nvme

import (
	"testing"
)

// Seeds are the field-table pages of the layout tests; the properties hold
// for any bytes: no panic, a full-size page with the right GUID or magic
// decodes, and what decodes is consistent.

func FuzzParseOCPSMARTLog(f *testing.F) {
	for _, v := range []uint64{2, OCPSMARTVersion20, OCPSMARTVersion25, OCPSMARTVersionDie} {
		f.Add(buildPage(f, OCPLogSize, ocpSMARTFields(v)...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseOCPSMARTLog(b)
		if err != nil {
			if len(b) >= OCPLogSize && [16]byte(b[496:512]) == ocpSMARTGUID {
				t.Fatalf("OCP page rejected: %v", err)
			}
			return
		}
		if l.Version < OCPSMARTVersionDie && (l.TotalMediaDies != 0 || l.DSSDFirmwareRevision != "") {
			t.Fatalf("version %d page with version 5 fields", l.Version)
		}
		if l.Refreshes >= 1<<56 || l.BadUserNANDBlocks.Raw >= 1<<48 || l.LifetimePowerConsumed >= 1<<48 {
			t.Fatalf("a counter wider than its field: %+v", l)
		}
		for _, s := range []string{l.DSSDFirmwareRevision, l.DSSDFirmwareBuildLbl} {
			for i := 0; i < len(s); i++ {
				if s[i] < 0x20 || s[i] > 0x7e {
					t.Fatalf("non-printable %q", s)
				}
			}
		}
	})
}

func FuzzParseOCPLatencyLog(f *testing.F) {
	f.Add(buildPage(f, OCPLogSize, ocpLatencyFields()...))
	// A monitor whose thresholds do not rise, and one that is disabled.
	for _, set := range [][2]int{{7, 0}, {0, 0x06}} {
		b := buildPage(f, OCPLogSize, ocpLatencyFields()...)
		b[set[0]] = byte(set[1])
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseOCPLatencyLog(b)
		if err != nil {
			if len(b) >= OCPLogSize && [16]byte(b[496:512]) == ocpLatencyGUID {
				t.Fatalf("OCP page rejected: %v", err)
			}
			return
		}
		for i := range 4 {
			if s := l.ThresholdSeconds(i); s < 0.005 || s > 1.28 {
				t.Fatalf("threshold %d: %g s", i, s)
			}
		}
		h, ok := l.ActiveHistogram(LatencyRead)
		if ok != (l.Enabled() && l.CheckThresholds() == nil) {
			t.Fatalf("histogram %v for enabled=%v thresholds %v", ok, l.Enabled(), l.Thresholds)
		}
		if ok {
			if len(h.Counts) != len(h.Bounds)+1 || h.Counts[0] != 0 {
				t.Fatalf("buckets %v for bounds %v", h.Counts, h.Bounds)
			}
			var sum uint64
			for i, c := range h.Counts {
				sum += c
				if i > 0 && i < len(h.Bounds) && h.Bounds[i] <= h.Bounds[i-1] {
					t.Fatalf("bounds %v do not rise", h.Bounds)
				}
			}
			if sum != h.Total {
				t.Fatalf("total %d, buckets add up to %d", h.Total, sum)
			}
		}
		if !SameActiveWindow(l, l, 0) && l.Enabled() {
			t.Fatal("a page is not in its own window")
		}
	})
}

func FuzzParseAmazonStats(f *testing.F) {
	f.Add(buildPage(f, AmazonLogSize, amazonEBSFields(64, 3)...))
	f.Add(buildPage(f, AmazonLogSize, amazonInstanceStoreFields(5, 32)...))
	f.Add(buildPage(f, AmazonLogSize, amazonInstanceStoreFields(1, 0)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseAmazonStats(b)
		if err != nil {
			return
		}
		if len(b) < AmazonLogSize || (s.Kind != AmazonEBS && s.Kind != AmazonInstanceStore) {
			t.Fatalf("decoded %d bytes as %v", len(b), s.Kind)
		}
		for _, h := range [][]LatencyBin{s.ReadLatency, s.WriteLatency} {
			if len(h) > amazonMaxBins || checkBins(h) != nil {
				t.Fatalf("bad histogram %v", h)
			}
		}
		if s.ReadTime < 0 || s.WriteTime < 0 || s.InstanceIOPSExceeded < 0 || s.VolumeThroughputExceeded < 0 {
			t.Fatal("negative duration")
		}
	})
}

func FuzzParseErrorLog(f *testing.F) {
	f.Add(buildPage(f, 4*ErrorEntrySize, append(errorEntryFields(0, 901), errorEntryFields(2, 899)...)...))
	f.Add(make([]byte, 64*ErrorEntrySize))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := ParseErrorLog(b)
		if err != nil {
			if len(b)%ErrorEntrySize == 0 {
				t.Fatalf("whole entries rejected: %v", err)
			}
			return
		}
		fresh, high := NewErrors(entries, 0)
		for i, e := range fresh {
			if e.Count == 0 || e.Count > high || (i > 0 && e.Count < fresh[i-1].Count) || e.Status >= 1<<15 {
				t.Fatalf("entry %d: %+v (high %d)", i, e, high)
			}
		}
		if again, h2 := NewErrors(entries, high); len(again) != 0 || h2 != high {
			t.Fatalf("%d entries reported twice", len(again))
		}
	})
}

func FuzzParseTelemetryHeader(f *testing.F) {
	f.Add(buildPage(f, TelemetryHeaderSize, field{0, 1, u(LogTelemetryController)}, field{382, 1, u(1)}, field{383, 1, u(7)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseTelemetryHeader(b)
		if err != nil {
			return
		}
		if h.Available != (b[382]&1 == 1) || h.Generation != b[383] {
			t.Fatalf("%+v from %x %x", h, b[382], b[383])
		}
	})
}

func FuzzParseSupportedLogs(f *testing.F) {
	page := make([]byte, SupportedLogsSize)
	for _, l := range []int{0, 1, 2, 8, LogOCPSMART, LogOCPLatency} {
		page[4*l] = 1
	}
	f.Add(page)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSupportedLogs(b)
		if err != nil {
			return
		}
		p := PlanLogs(&Controller{Version: 0x00020000, ErrorLogCapacity: 1}, s)
		if p.OCPLatency && !p.OCPSMART {
			t.Fatal("C3h planned without C0h")
		}
		if p.OCPSMART != s[LogOCPSMART] || p.Telemetry != s[LogTelemetryController] || p.Amazon != 0 {
			t.Fatalf("plan %+v does not follow the list", p)
		}
	})
}

package ata

import (
	"bytes"
	"errors"
	"testing"
)

// Most random bytes fail the checksum, so each page fuzzer also runs on a
// sealed copy (checksum fixed up) to reach the decoding behind it.
func sealed(b []byte) []byte {
	if len(b) != PageSize {
		return nil
	}
	return sealPage(append([]byte(nil), b...))
}

func FuzzParseSMARTData(f *testing.F) {
	for _, s := range seeds(f, "smart_read_data") {
		f.Add(s)
	}
	f.Add(dataPage(RawAttribute{ID: 194, Flags: 0x22, Value: 34, Worst: 46, RawBytes: raw48(0x001300000022)}, RawAttribute{ID: 188, RawBytes: raw48(4295032833)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkSMARTData(t, b)
		if s := sealed(b); s != nil {
			if _, err := ParseSMARTData(s); err != nil {
				t.Fatalf("sealed 512-byte page rejected: %v", err)
			}
			checkSMARTData(t, s)
		}
	})
}

func checkSMARTData(t *testing.T, b []byte) {
	d, err := ParseSMARTData(b)
	if err != nil {
		return
	}
	if len(b) != PageSize || byteSum(b) != 0 {
		t.Fatalf("accepted a page with length %d / sum %#x", len(b), byteSum(b))
	}
	if len(d.Attributes) > attrSlots {
		t.Fatalf("%d attributes", len(d.Attributes))
	}
	seen := map[uint8]bool{}
	for _, a := range d.Attributes {
		if a.ID == 0 || seen[a.ID] {
			t.Fatalf("attribute id %d empty or repeated", a.ID)
		}
		seen[a.ID] = true
	}
	// Every decoded attribute is a verbatim slot of the page.
	for _, a := range d.Attributes {
		found := false
		for i := range attrSlots {
			if bytes.Equal(b[2+i*attrSlotSize:][:attrSlotSize], dataPage(a)[2:2+attrSlotSize]) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("attribute %+v is not a slot of the page", a)
		}
	}
	for _, model := range []string{"QEMU HARDDISK", "ST4000DM004-2CV104", "INTEL SSDSC2KB480G8"} {
		for _, a := range lookup(t, model).Decode(d, nil) {
			checkRaw(t, a.Raw)
		}
	}
	// The checksum is really checked: break it and the page is refused.
	broken := append([]byte(nil), b...)
	broken[PageSize-1]++
	if _, err := ParseSMARTData(broken); !errors.Is(err, ErrChecksum) {
		t.Fatalf("broken checksum accepted: %v", err)
	}
}

func checkRaw(t *testing.T, r RawValue) {
	if r.String() == "" {
		t.Fatalf("empty rendering of %+v", r)
	}
	if r.HasMinMax && (r.Min > int(r.Value) || int(r.Value) > r.Max || r.Min < -60 || r.Max > 120) {
		t.Fatalf("min/max %d/%d do not bracket %d", r.Min, r.Max, r.Value)
	}
	if r.Duration < 0 || (!r.Format.Temperature() && r.Value < 0) || r.Aux < 0 {
		t.Fatalf("negative count or span: %+v", r)
	}
	if r.Format.Duration() && r.Duration == 0 && r.Value != 0 {
		t.Fatalf("hours without a span: %+v", r)
	}
}

func FuzzDecodeRaw(f *testing.F) {
	f.Add([]byte{0x1f, 0, 0x1f, 0x1f, 0, 0}, byte(0), byte(0), byte(0), uint8(FormatTempMinMax), "")
	f.Add([]byte{0xf8, 0x21, 0, 0, 0xb9, 0x80}, byte(0x20), byte(100), byte(100), uint8(FormatMsec24Hour32), "")
	f.Add([]byte{1, 0, 1, 0, 1, 0}, byte(0), byte(100), byte(100), uint8(FormatRaw16), "")
	f.Add([]byte{0x28, 0, 0x14, 0x37, 0x02, 0x01}, byte(0), byte(100), byte(100), uint8(FormatTempMinMax), "")
	f.Add([]byte{1, 2, 3, 4, 5, 6}, byte(7), byte(8), byte(9), uint8(FormatHex64), "wv543210")
	f.Fuzz(func(t *testing.T, raw []byte, reserved, value, worst, format byte, order string) {
		var a RawAttribute
		copy(a.RawBytes[:], raw)
		a.Reserved, a.Value, a.Worst = reserved, value, worst
		r := DecodeRaw(a, Format(format), order)
		checkRaw(t, r)
		if Format(format) < numFormats && r.Format != Format(format) {
			t.Fatalf("format %v became %v", Format(format), r.Format)
		}
		if validByteOrder(order) && len(order) <= 6 && r.Bits>>(8*len(order)) != 0 {
			t.Fatalf("%d-byte order produced %#x", len(order), r.Bits)
		}
	})
}

func FuzzParseThresholds(f *testing.F) {
	for _, s := range seeds(f, "smart_read_thresholds") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range [][]byte{b, sealed(b)} {
			th, err := ParseThresholds(p)
			if err != nil {
				if len(p) == PageSize && byteSum(p) == 0 {
					t.Fatalf("valid page rejected: %v", err)
				}
				continue
			}
			// Each threshold reported is the first slot with that id.
			for id := 1; id < 256; id++ {
				v, ok := th.Lookup(uint8(id))
				first := -1
				for i := range attrSlots {
					if p[2+i*attrSlotSize] == byte(id) {
						first = i
						break
					}
				}
				if ok != (first >= 0) || (ok && v != p[3+first*attrSlotSize]) {
					t.Fatalf("id %d: lookup (%d,%v), first slot %d", id, v, ok, first)
				}
			}
			if _, ok := th.Lookup(0); ok {
				t.Fatal("id 0 is an empty slot, not an attribute")
			}
		}
	})
}

func FuzzParseIdentify(f *testing.F) {
	for _, s := range seeds(f, "ata_identify") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := ParseIdentify(b)
		if err != nil {
			return
		}
		if len(b) != PageSize || (b[510] == 0xA5 && byteSum(b) != 0) {
			t.Fatal("accepted a short page or a bad signed checksum")
		}
		for _, s := range []string{id.Model, id.Serial, id.Firmware} {
			if len(s) > 40 || (s != "" && (s[0] == ' ' || s[len(s)-1] == ' ')) {
				t.Fatalf("bad string %q", s)
			}
			for i := 0; i < len(s); i++ {
				if s[i] < 0x20 || s[i] > 0x7e {
					t.Fatalf("non-printable string %q", s)
				}
			}
		}
		if id.LogicalSectorSize < 512 || id.PhysicalSectorSize < id.LogicalSectorSize {
			t.Fatalf("sector sizes %d/%d", id.LogicalSectorSize, id.PhysicalSectorSize)
		}
		if id.Sectors != 0 && id.Capacity() < id.Sectors {
			t.Fatalf("capacity %d below sector count %d", id.Capacity(), id.Sectors)
		}
		if naa, oui, vid := id.WWNParts(); uint64(naa)<<60|uint64(oui)<<36|vid != id.WWN {
			t.Fatalf("WWN parts do not rebuild %#x", id.WWN)
		}
	})
}

func FuzzParseSelfTestLog(f *testing.F) {
	for _, s := range seeds(f, "smart_read_log06") {
		f.Add(s)
	}
	f.Add(selfTestPage(2, SelfTestEntry{Test: 2, Status: SelfTestFailedRead, LifetimeHours: 5, FailingLBA: 1234}, SelfTestEntry{Test: 1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range [][]byte{b, sealed(b)} {
			l, err := ParseSelfTestLog(p)
			if err != nil {
				continue
			}
			if len(l.Entries) > selfTestEntries || (p[508] == 0 && len(l.Entries) != 0) {
				t.Fatalf("%d entries with index %d", len(l.Entries), p[508])
			}
			for _, e := range l.Entries {
				if e.RemainingPercent > 150 || e.Status > 15 {
					t.Fatalf("entry %+v", e)
				}
			}
			if e, ok := l.UnresolvedFailure(); ok != (e.Status.Failed()) {
				t.Fatalf("unresolved failure %+v, %v", e, ok)
			}
		}
	})
}

func FuzzParseErrorLogSummary(f *testing.F) {
	for _, s := range seeds(f, "smart_read_log01") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range [][]byte{b, sealed(b)} {
			l, err := ParseErrorLogSummary(p)
			if err != nil {
				continue
			}
			if len(l.Entries) > errorLogEntries || (p[1] == 0 && len(l.Entries) != 0) {
				t.Fatalf("%d entries with index %d", len(l.Entries), p[1])
			}
			for _, e := range l.Entries {
				if e.LBA >= 1<<28 {
					t.Fatalf("LBA %#x wider than 28 bits", e.LBA)
				}
			}
		}
	})
}

func FuzzParseDeviceStatistics(f *testing.F) {
	f.Add(statPage(5, statEntry{0x08, 0xD8, statSupported | statValid}))
	f.Add(append(statPage(1, statEntry{0x10, 7, statSupported | statValid}), statPage(7, statEntry{0x08, 100, statSupported | statValid})...))
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := ParseDeviceStatistics(b)
		if err != nil {
			return
		}
		for s, v := range ds.values {
			if v >= 1<<48 || s.Page == 0 || s.Offset%8 != 0 || s.Offset == 0 {
				t.Fatalf("stat %+v = %#x", s, v)
			}
			if temp, ok := ds.Temperature(s); ok && (temp < -128 || temp > 127) {
				t.Fatalf("temperature %d", temp)
			}
		}
	})
}

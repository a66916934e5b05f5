package scsi

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func logPageSeeds(f *testing.F) {
	f.Add(debugTemperature)
	f.Add(debugIE)
	f.Add([]byte{0x00, 0x00, 0x00, 0x03, 0x00, 0x0d, 0x2f, 0x00}) // probe: supported pages
	f.Add([]byte{0x0d, 0x00, 0x00, 0x0c, 0x00, 0x00, 0x03, 0x02}) // probe: truncated page
	f.Add(page(PageReadErrors, 0, param(0, 1), param(6, 0, 0, 0, 0, 0, 0, 0, 0, 9)))
	f.Add(page(PageSelfTest, 0, selfTest(1, 6, 7, 10, 99, 3, 0x11, 0)))
	f.Add(page(PageStartStop, 0, param(1, '2', '0', '2', '4', '0', '1'), param(4, 0, 0, 1, 0)))
}

// Round trip: re-encoding the parameters reproduces the page body, and
// every value lies inside the input.
func FuzzParseLogPage(f *testing.F) {
	logPageSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseLogPage(b)
		if err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(b[2:]))
		re := page(p.Code, 0, p.Params...)
		if !bytes.Equal(re[4:], b[4:4+n]) {
			t.Fatalf("parameters do not re-encode to the page body")
		}
		if p.Code != b[0]&0x3F || p.Subpage != b[1] {
			t.Fatalf("header %x misread as %#x/%#x", b[:2], p.Code, p.Subpage)
		}
		// The typed decoders never panic and agree with the walker.
		if _, err := ParseTemperaturePage(b); (err == nil) != (p.Code == PageTemperature) {
			t.Fatalf("temperature page decoder disagrees: %v", err)
		}
		if c, err := ParseErrorCounters(b); err == nil && c.TotalUncorrected.Valid {
			if _, ok := p.Param(6); !ok {
				t.Fatal("uncorrected counter without its parameter")
			}
		}
		if _, err := ParseInformationalExceptions(b); err == nil && p.Code != PageInformationalExceptions {
			t.Fatal("IE decoder accepted another page")
		}
		if s, err := ParseStartStop(b); err == nil && len(s.ManufactureDate) > 6 {
			t.Fatalf("date %q", s.ManufactureDate)
		}
		if rs, err := ParseSelfTestResults(b); err == nil {
			for _, r := range rs {
				if r.Number == 0 || r.Number > 20 || r.Result > 15 || r.Code > 7 {
					t.Fatalf("result %+v", r)
				}
			}
			if r, ok := UnresolvedSelfTestFailure(rs); ok && !r.Failed() {
				t.Fatalf("unresolved failure %+v did not fail", r)
			}
		}
	})
}

func FuzzParseSupportedPages(f *testing.F) {
	logPageSeeds(f)
	f.Add([]byte{0x40, 0xFF, 0, 4, 0x00, 0x00, 0x0D, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		refs, err := ParseSupportedPages(b)
		if err != nil {
			return
		}
		if n := int(binary.BigEndian.Uint16(b[2:])); len(refs) != n && 2*len(refs) != n {
			t.Fatalf("%d pages from a %d-byte list", len(refs), n)
		}
		for _, r := range refs {
			if r.Code > 0x3F {
				t.Fatalf("page code %#x", r.Code)
			}
		}
	})
}

func FuzzParseSense(f *testing.F) {
	f.Add(unhexString("7201001d0000000e090c00000000000000004f00c2a050"))
	f.Add(unhexString("f0000b0441a0010a80040000000000000000"))
	f.Add(unhexString("700005000000000a00000000200000000000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSense(b)
		if err != nil {
			return
		}
		if s.Key > 15 || s.String() == "" {
			t.Fatalf("%+v", s)
		}
		if regs, ok := s.ATA(); ok {
			if !s.Descriptor && (regs.LBA >= 1<<24 || !s.Valid) {
				t.Fatalf("fixed-format registers %+v", regs)
			}
		}
	})
}

func FuzzParseInquiry(f *testing.F) {
	f.Add(inquiryData("QEMU", "QEMU HARDDISK", "2.5+"))
	f.Add(inquiryData("ATA", "ST4000DM004-2CV1", "0001"))
	f.Fuzz(func(t *testing.T, b []byte) {
		inq, err := ParseInquiry(b)
		if err != nil {
			return
		}
		if len(inq.Vendor) > 8 || len(inq.Product) > 16 || len(inq.Revision) > 4 || inq.DeviceType > 31 {
			t.Fatalf("%+v", inq)
		}
	})
}

func FuzzParseVPD(f *testing.F) {
	f.Add([]byte{0, 0x80, 0, 5, 'S', 'C', 'S', 'I', 'T'})
	f.Add([]byte{0, 0x83, 0, 12, 0x01, 0x03, 0, 8, 0x33, 0x33, 0x33, 0x30, 0, 0, 0x4e, 0x20})
	f.Add([]byte{0, 0xB1, 0, 4, 0x1c, 0x20, 0, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := ParseUnitSerialNumber(b); err == nil && len(s) > len(b) {
			t.Fatalf("serial %q longer than the page", s)
		}
		if ds, err := ParseDeviceIdentification(b); err == nil {
			total := 0
			for _, d := range ds {
				total += 4 + len(d.Value)
				if d.Association > 3 || d.Type > 15 || d.CodeSet > 15 {
					t.Fatalf("%+v", d)
				}
			}
			if total != int(binary.BigEndian.Uint16(b[2:])) {
				t.Fatalf("descriptors cover %d of %d bytes", total, binary.BigEndian.Uint16(b[2:]))
			}
			LogicalUnitID(ds)
		}
		if c, err := ParseBlockDeviceCharacteristics(b); err == nil && c.FormFactor > 15 {
			t.Fatalf("%+v", c)
		}
	})
}

func FuzzParseReadCapacity16(f *testing.F) {
	rc := make([]byte, 32)
	binary.BigEndian.PutUint64(rc, 16383)
	binary.BigEndian.PutUint32(rc[8:], 512)
	f.Add(rc)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseReadCapacity16(b)
		if err != nil {
			return
		}
		if c.Bytes() < c.Blocks() || c.BlockSize == 0 || c.PhysicalExponent > 15 || c.LowestAlignedLBA >= 1<<14 {
			t.Fatalf("%+v", c)
		}
	})
}

func unhexString(s string) []byte {
	b := make([]byte, len(s)/2)
	for i := range b {
		hi, lo := s[2*i], s[2*i+1]
		b[i] = hexNibble(hi)<<4 | hexNibble(lo)
	}
	return b
}

func hexNibble(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}

package nvme

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// field is one field of a published layout: where it sits, how wide it is
// and the value the test gives it. Values are chosen per field, distinct,
// and wide enough to fill their field, so a decoder reading the wrong
// offset or width gets a different number.
type field struct {
	off, size int
	val       any // uint64, Uint128, string or []byte
}

// buildPage lays the fields into a page of size bytes and fails on
// overlapping fields (a layout typo in the test itself).
func buildPage(t testing.TB, size int, fields ...field) []byte {
	t.Helper()
	b := make([]byte, size)
	used := make([]bool, size)
	for _, f := range fields {
		for i := f.off; i < f.off+f.size; i++ {
			if used[i] {
				t.Fatalf("field at %d overlaps byte %d", f.off, i)
			}
			used[i] = true
		}
		dst := b[f.off : f.off+f.size]
		switch v := f.val.(type) {
		case uint64:
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], v)
			if f.size < 8 && v>>(8*f.size) != 0 {
				t.Fatalf("value %#x does not fit %d bytes at %d", v, f.size, f.off)
			}
			copy(dst, w[:min(f.size, 8)])
		case Uint128:
			binary.LittleEndian.PutUint64(dst, v.Lo)
			binary.LittleEndian.PutUint64(dst[8:], v.Hi)
		case string:
			copy(dst, v)
		case []byte:
			copy(dst, v)
		default:
			panic(fmt.Sprintf("field value %T", v))
		}
	}
	return b
}

func u(v uint64) any { return v }

var (
	ocpSMARTGUIDField   = field{496, 16, ocpSMARTGUID[:]}
	ocpLatencyGUIDField = field{496, 16, ocpLatencyGUID[:]}
)

// ocpSMARTFields is the C0h layout of the OCP Datacenter NVMe SSD
// specification with a distinct value per field, at page version v.
func ocpSMARTFields(v uint64) []field {
	return []field{
		{0, 16, Uint128{Lo: 0x0102030405060708, Hi: 0x11}},
		{16, 16, Uint128{Lo: 0x1112131415161718, Hi: 0x22}},
		{32, 6, u(0x0000A1A2A3A4A5)}, {38, 2, u(97)},
		{40, 6, u(0x0000B1B2B3B4B5)}, {46, 2, u(96)},
		{48, 8, u(0xC1C2C3C4C5C6C7)},
		{56, 8, u(0xD1D2D3D4D5D6)},
		{64, 8, u(0xE1E2E3E4E5)},
		{72, 4, u(0x0F1F2F3F)}, {76, 4, u(0x0E1E2E3E)},
		{80, 1, u(7)},
		{81, 7, u(0x00616263646566)},
		{88, 4, u(0x7172)}, {92, 4, u(0x0373)},
		{96, 1, u(9)}, {97, 1, u(2)},
		{98, 1, u(1)}, {99, 2, u(3)}, {101, 2, u(5)}, {103, 1, u(2)},
		{104, 8, u(0x8182838485)},
		{112, 4, u(0x919293)},
		{120, 1, u(42)},
		{128, 2, u(87)},
		{130, 1, u(4)}, {131, 1, u(6)}, {132, 1, u(8)}, {133, 1, u(10)},
		{136, 8, u(0xA0A1A2A3)},
		{144, 8, u(0x0000000B)},
		{152, 8, u(0xC0C1C2C3C4)},
		{160, 16, Uint128{Lo: 123456}},
		{176, 16, Uint128{Lo: 0x0DE0B6B3A7640000, Hi: 0x3}},
		{192, 8, u(321)}, {200, 8, u(4321)}, {208, 8, u(0x3130302E32)},
		{216, 2, u(256)}, {218, 2, u(4)}, {220, 2, u(3)}, {222, 1, u(71)},
		{224, 8, u(1500)}, {232, 4, u(12)},
		{236, 4, u(13)}, {240, 1, u(99)},
		{244, 4, u(14)}, {248, 1, u(98)},
		{252, 4, u(15)}, {256, 1, u(94)},
		{260, 2, u(25)}, {262, 2, u(18)}, {264, 6, u(0x0000123456789A)},
		{270, 8, "FW25.0.1"},
		{278, 16, []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{294, 64, "build-2026-11-30 release"},
		{494, 2, u(v)},
		ocpSMARTGUIDField,
	}
}

// wantOCPSMART is what ocpSMARTFields decodes to at version 5.
func wantOCPSMART() OCPSMARTLog {
	return OCPSMARTLog{
		Version:               5,
		PhysicalMediaWritten:  Uint128{Lo: 0x0102030405060708, Hi: 0x11},
		PhysicalMediaRead:     Uint128{Lo: 0x1112131415161718, Hi: 0x22},
		BadUserNANDBlocks:     NormalizedCount{Raw: 0xA1A2A3A4A5, Normalized: 97},
		BadSystemNANDBlocks:   NormalizedCount{Raw: 0xB1B2B3B4B5, Normalized: 96},
		XORRecoveries:         0xC1C2C3C4C5C6C7,
		UncorrectableReads:    0xD1D2D3D4D5D6,
		SoftECCErrors:         0xE1E2E3E4E5,
		EndToEndDetected:      0x0F1F2F3F,
		EndToEndCorrected:     0x0E1E2E3E,
		SystemDataPercentUsed: 7,
		Refreshes:             0x616263646566,
		MaxUserEraseCount:     0x7172,
		MinUserEraseCount:     0x0373,
		ThermalThrottleEvents: 9,
		ThrottleStatus:        2,
		DSSDVersion:           DSSDVersion{Major: 2, Minor: 5, Point: 3, Errata: 1},
		PCIeCorrectableErrors: 0x8182838485,
		IncompleteShutdowns:   0x919293,
		PercentFreeBlocks:     42,
		CapacitorHealth:       87,
		NVMeBaseErrata:        4,
		NVMeCommandSetErrata:  6,
		NVMeOverPCIeErrata:    8,
		NVMeMIErrata:          10,
		UnalignedIO:           0xA0A1A2A3,
		SecurityVersion:       0x0B,
		TotalNUSE:             0xC0C1C2C3C4,
		PLPStarts:             Uint128{Lo: 123456},
		EnduranceEstimate:     Uint128{Lo: 0x0DE0B6B3A7640000, Hi: 0x3},
		PCIeLinkRetrainings:   321,
		PowerStateChanges:     4321,
		LowestPermittedFWRev:  0x3130302E32,
		TotalMediaDies:        256,
		DieFailureTolerance:   4,
		MediaDiesOffline:      3,
		MaxTemperature:        71,
		NANDAvgEraseCount:     1500,
		CommandTimeouts:       12,
		SysAreaProgramFails:   NormalizedCount{Raw: 13, Normalized: 99},
		SysAreaUncorrReads:    NormalizedCount{Raw: 14, Normalized: 98},
		SysAreaEraseFails:     NormalizedCount{Raw: 15, Normalized: 94},
		MaxPeakPower:          25,
		CurrentMaxAvgPower:    18,
		LifetimePowerConsumed: 0x123456789A,
		DSSDFirmwareRevision:  "FW25.0.1",
		DSSDFirmwareBuildUUID: [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
		DSSDFirmwareBuildLbl:  "build-2026-11-30 release",
	}
}

// ocpLatencyFields is the C3h layout with a distinct value per field. Each
// bucket's counter group is reserved, deallocate, write, read.
func ocpLatencyFields() []field {
	f := []field{
		{0, 1, u(0x07)}, {2, 2, u(288)}, {4, 2, u(2016)},
		{6, 1, u(0)}, {7, 1, u(3)}, {8, 1, u(19)}, {9, 1, u(199)},
		{10, 2, u(0x0FFF)}, {12, 1, u(10)},
		{216, 2, u(1)}, {424, 2, u(2)}, {448, 2, u(0x0A5A)},
		{494, 2, u(4)}, ocpLatencyGUIDField,
	}
	for i := range 4 {
		for j := range 3 {
			n := uint64(1000*(i+1) + 10*(j+1))
			// active at 32, static at 240; dwords 1..3 = dealloc, write, read
			f = append(f, field{32 + 16*i + 4*(3-j), 4, u(n)}, field{240 + 16*i + 4*(3-j), 4, u(n + 5)})
		}
	}
	return f
}

// amazonEBSFields: the EBS D0h layout (counters at 8, read histogram at
// 512, write histogram at 2056, each a bin count and 64 bins of lower,
// upper, count, reserved).
func amazonEBSFields(readBins, writeBins int) []field {
	f := []field{{0, 4, u(AmazonMagicEBS)}}
	for i := range 11 {
		f = append(f, field{8 + 8*i, 8, u(uint64(1_000_003 * (i + 1)))})
	}
	for h, n := range []int{readBins, writeBins} {
		base := 512 + 1544*h
		f = append(f, field{base, 8, u(uint64(n))})
		for i := range n {
			e := base + 8 + 24*i
			f = append(f, field{e, 8, u(uint64(1) << i >> 1)}, field{e + 8, 8, u(uint64(1) << i)},
				field{e + 16, 4, u(uint64(100*(h+1) + i))})
		}
	}
	return f
}

// amazonInstanceStoreFields: the instance store D0h layout (histogram and
// bin counts at 96/100, size ranges at 104, bounds at 136, per size range
// 32 read then 32 write counts from 648).
func amazonInstanceStoreFields(hists, bins int) []field {
	f := []field{{0, 4, u(AmazonMagicInstanceStore)}, {96, 4, u(uint64(hists))}, {100, 4, u(uint64(bins))}}
	for i := range 11 {
		f = append(f, field{8 + 8*i, 8, u(uint64(7_000_001 * (i + 1)))})
	}
	for i := range 8 {
		f = append(f, field{104 + 4*i, 4, u(uint64(4096) << i)})
	}
	for i := range bins {
		f = append(f, field{136 + 16*i, 8, u(uint64(1) << i >> 1)}, field{144 + 16*i, 8, u(uint64(1) << i)})
	}
	for h := range hists {
		for i := range bins {
			f = append(f, field{648 + 512*h + 8*i, 8, u(uint64(10*h + i + 1))},
				field{648 + 512*h + 256 + 8*i, 8, u(uint64(1000*h + i + 2))})
		}
	}
	return f
}

// errorEntryFields is one Error Information entry at index i of a page.
func errorEntryFields(i int, count uint64) []field {
	o := 64 * i
	return []field{
		{o, 8, u(count)}, {o + 8, 2, u(uint64(i + 1))}, {o + 10, 2, u(0x1234 + uint64(i))},
		{o + 12, 2, u(0x4005<<1 | 1)}, {o + 14, 2, u(0x0304)},
		{o + 16, 8, u(0xABCDEF012345 + count)}, {o + 24, 4, u(uint64(i) + 1)},
		{o + 28, 1, u(0xC0)}, {o + 29, 1, u(3)},
		{o + 32, 8, u(0x5555AAAA0000 + count)}, {o + 40, 2, u(0x0102)},
	}
}

package nvme

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
)

func addSeeds(f *testing.F, glob string) {
	matches, err := filepath.Glob(fixture.Path("qemu", "*", glob))
	if err != nil || len(matches) == 0 {
		f.Fatalf("no seeds for %s: %v", glob, err)
	}
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// encodeSMARTLog is the inverse of ParseSMARTLog over the fields it decodes.
func encodeSMARTLog(l *SMARTLog) []byte {
	b := make([]byte, SMARTLogSize)
	b[0] = byte(l.CriticalWarning)
	binary.LittleEndian.PutUint16(b[1:], uint16(l.Temperature))
	b[3], b[4], b[5], b[6] = l.AvailableSpare, l.SpareThreshold, l.PercentageUsed, l.EnduranceGroupWarningSummary
	for i, v := range []Uint128{l.DataUnitsRead, l.DataUnitsWritten, l.HostReadCommands, l.HostWriteCommands,
		l.ControllerBusyMinutes, l.PowerCycles, l.PowerOnHours, l.UnsafeShutdowns, l.MediaErrors, l.ErrorLogEntries} {
		putUint128(b[32+16*i:], v)
	}
	binary.LittleEndian.PutUint32(b[192:], l.WarningTempMinutes)
	binary.LittleEndian.PutUint32(b[196:], l.CriticalTempMinutes)
	for i, k := range l.TempSensors {
		binary.LittleEndian.PutUint16(b[200+2*i:], uint16(k))
	}
	for i := range 2 {
		binary.LittleEndian.PutUint32(b[216+4*i:], l.ThermalTransitions[i])
		binary.LittleEndian.PutUint32(b[224+4*i:], l.ThermalSeconds[i])
	}
	return b
}

// Round trip: every byte the decoder reads comes back unchanged.
func FuzzParseSMARTLog(f *testing.F) {
	addSeeds(f, "*.log02_smart_log.bin")
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseSMARTLog(b)
		if err != nil {
			if len(b) >= SMARTLogSize {
				t.Fatalf("full-size log rejected: %v", err)
			}
			return
		}
		got := encodeSMARTLog(l)
		for _, r := range [][2]int{{0, 7}, {32, 232}} {
			if !bytes.Equal(got[r[0]:r[1]], b[r[0]:r[1]]) {
				t.Fatalf("bytes %d..%d do not round-trip", r[0], r[1])
			}
		}
		if c, ok := l.Temperature.Celsius(); ok != (l.Temperature != 0) || (ok && c < -273) {
			t.Fatalf("temperature %d K -> %d °C, %v", l.Temperature, c, ok)
		}
		if l.BytesWritten().Cmp(l.DataUnitsWritten) < 0 {
			t.Fatal("bytes written below data units written")
		}
	})
}

func FuzzUint128(f *testing.F) {
	f.Add(uint64(math.MaxUint64), uint64(0), uint64(dataUnitBytes), uint64(1), uint64(0))
	f.Add(uint64(5), uint64(1), uint64(2), uint64(math.MaxUint64), uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, lo, hi, m, lo2, hi2 uint64) {
		u, v := Uint128{Lo: lo, Hi: hi}, Uint128{Lo: lo2, Hi: hi2}
		bu, bv := toBig(u), toBig(v)
		if u.String() != bu.String() {
			t.Fatalf("String %s, want %s", u.String(), bu.String())
		}
		if u.Cmp(v) != bu.Cmp(bv) {
			t.Fatalf("Cmp(%v, %v) = %d", u, v, u.Cmp(v))
		}
		want := new(big.Int).Mul(bu, new(big.Int).SetUint64(m))
		if limit := toBig(Uint128{Lo: math.MaxUint64, Hi: math.MaxUint64}); want.Cmp(limit) > 0 {
			want = limit
		}
		if got := toBig(u.MulUint64(m)); got.Cmp(want) != 0 {
			t.Fatalf("%v × %d = %v, want %v", bu, m, got, want)
		}
		if n, ok := u.Uint64(); ok != (hi == 0) || (ok && n != lo) || (!ok && n != math.MaxUint64) {
			t.Fatalf("Uint64 of %v = %d, %v", bu, n, ok)
		}
		bf, _ := new(big.Float).SetInt(bu).Float64()
		if got := u.Float64(); math.Abs(got-bf) > bf*0x1p-52 {
			t.Fatalf("Float64 of %v = %g, want %g", bu, got, bf)
		}
	})
}

func toBig(u Uint128) *big.Int {
	v := new(big.Int).SetUint64(u.Hi)
	v.Lsh(v, 64)
	return v.Or(v, new(big.Int).SetUint64(u.Lo))
}

func FuzzParseIdentifyController(f *testing.F) {
	addSeeds(f, "*.identify_ctrl.bin")
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseIdentifyController(b)
		if err != nil {
			return
		}
		for _, s := range []string{c.Serial, c.Model, c.Firmware, c.SubNQN} {
			for i := 0; i < len(s); i++ {
				if s[i] < 0x20 || s[i] > 0x7e {
					t.Fatalf("non-printable %q", s)
				}
			}
		}
		if len(c.Serial) > 20 || len(c.Model) > 40 || len(c.Firmware) > 8 || len(c.SubNQN) > 256 {
			t.Fatalf("field longer than its slot: %+v", c)
		}
		if c.ErrorLogCapacity < 1 || c.ErrorLogCapacity > 256 || c.IEEEOUI >= 1<<24 {
			t.Fatalf("%+v", c)
		}
		if !c.SupportsLog(LogSMART) || c.SupportsLog(0xFF) {
			t.Fatal("log support must follow the spec's mandatory set")
		}
	})
}

func FuzzParseIdentifyNamespace(f *testing.F) {
	addSeeds(f, "*.identify_ns1.bin")
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseIdentifyNamespace(b)
		if err != nil {
			return
		}
		if n.Size == 0 {
			if n.LBASize != 0 {
				t.Fatal("inactive namespace with a block size")
			}
			return
		}
		if n.LBASize < 512 || n.LBASize&(n.LBASize-1) != 0 {
			t.Fatalf("block size %d", n.LBASize)
		}
		if n.SizeBytes() < n.Size {
			t.Fatalf("size %d bytes below %d blocks", n.SizeBytes(), n.Size)
		}
	})
}

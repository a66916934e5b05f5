package ata

import (
	"testing"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
)

// One SMART poll of a SATA disk: both pages decoded and every attribute
// named and decoded under its drive preset.
func BenchmarkDecodeSMART(b *testing.B) {
	data := fixture.Read(b, "qemu", "k6.12", "sda.smart_read_data.bin")
	th := fixture.Read(b, "qemu", "k6.12", "sda.smart_read_thresholds.bin")
	preset := lookup(b, "ST4000DM004-2CV104")
	b.ReportAllocs()
	for b.Loop() {
		d, err := ParseSMARTData(data)
		if err != nil {
			b.Fatal(err)
		}
		t, err := ParseThresholds(th)
		if err != nil {
			b.Fatal(err)
		}
		if len(preset.Decode(d, t)) != 7 {
			b.Fatal("attributes lost")
		}
	}
}

// The drive database is consulted once per disk at discovery.
func BenchmarkLookup(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !lookup(b, "WDC WD40EFRX-68N32N0").Known {
			b.Fatal("a Western Digital Red not recognised")
		}
	}
}

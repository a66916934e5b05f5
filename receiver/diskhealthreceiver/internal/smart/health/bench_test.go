package health

import (
	"testing"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
)

func BenchmarkEvaluate(b *testing.B) {
	snap := Snapshot{ATA: &ATA{Status: ata.SMARTStatusPassed, Attributes: attrs(b, "ST4000DM004-2CV104", map[uint8]uint8{1: 6, 5: 36},
		raw(1, ata.FlagPreFail, 83, 64, 197586811), raw(5, ata.FlagPreFail, 100, 100, 0), raw(9, 0, 91, 91, 8696),
		raw(187, 0, 100, 100, 0), raw(188, 0, 100, 100, 0), raw(194, 0, 34, 46, 34), raw(197, 0, 100, 100, 0),
		raw(198, 0, 100, 100, 0), raw(199, 0, 200, 200, 0))}}
	_, h := Evaluate(History{}, snap)
	b.ReportAllocs()
	for b.Loop() {
		v, _ := Evaluate(h, snap)
		if v.State != OK {
			b.Fatal(v.Reasons)
		}
	}
}

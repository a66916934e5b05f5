package stackscraper

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/internal/testkit"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/dm"
)

// manyDMDevices is a host with n thin pools, each with two thin volumes, and n/2 multipath maps,
// made of the dm library's recorded lines.
func manyDMDevices(b testing.TB, n int) []dm.Device {
	l := recordedLines(b)
	var out []dm.Device
	for i := range n {
		out = append(out,
			dm.Device{Name: fmt.Sprintf("vg%d-pool-tpool", i), UUID: fmt.Sprintf("LVM-vg%dpool-tpool", i), Major: 253, Minor: uint32(len(out)),
				Targets: []dm.Target{{Length: 1 << 30, Type: "thin-pool", Status: l["pool-ok"], Table: l["pool-ok-table"]}}},
			dm.Device{Name: fmt.Sprintf("vg%d-a", i), UUID: fmt.Sprintf("LVM-vg%da", i), Major: 253, Minor: uint32(len(out) + 1),
				Targets: []dm.Target{{Length: 4194304, Type: "thin", Status: l["thin-ok"], Table: l["thin-table"]}}},
			dm.Device{Name: fmt.Sprintf("vg%d-b", i), UUID: fmt.Sprintf("LVM-vg%db", i), Major: 253, Minor: uint32(len(out) + 2),
				Targets: []dm.Target{{Length: 4194304, Type: "thin", Status: l["thin-empty"], Table: l["thin-table"]}}})
		if i%2 == 0 {
			out = append(out, dm.Device{Name: fmt.Sprintf("mpath%d", i), UUID: fmt.Sprintf("mpath-3600%d", i), Major: 253, Minor: uint32(len(out)),
				Targets: []dm.Target{{Length: 2097152, Type: "multipath", Status: l["mpath-one-failed"]}}})
		}
	}
	return out
}

// BenchmarkScrapeManyDMDevices: one scrape of 200 thin pools, 400 thin volumes and 100 multipath maps
// (700 dm devices: parse, verdicts, record, emit) — the part of a scrape after the ioctls, which the
// dm library's own tests bound.
func BenchmarkScrapeManyDMDevices(b *testing.B) {
	devices := manyDMDevices(b, 200)
	rig := newRig(&testing.T{}, readers{dm: &fakeDM{devices: devices}}, nil)
	rig.s.now = time.Now
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rig.s.scrape(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(devices)), "devices")
}

// TestManyDMDevicesCostAFewMilliseconds keeps the benchmark's promise in `make test`: 700 dm devices
// cost a few milliseconds of CPU per scrape. CPU time of the scraping thread (the fake dm reader runs on
// it), not wall time, so a loaded machine does not fail it; the bound is ~10× what it measures.
func TestManyDMDevicesCostAFewMilliseconds(t *testing.T) {
	devices := manyDMDevices(t, 200)
	rig := newRig(t, readers{dm: &fakeDM{devices: devices}}, nil)
	const scrapes = 5
	cpu := testkit.ThreadCPU(t, func() {
		for range scrapes {
			md, err := rig.s.scrape(context.Background())
			require.NoError(t, err)
			require.Positive(t, md.DataPointCount())
		}
	})
	per := cpu / scrapes
	t.Logf("%d dm devices: %v CPU per scrape", len(devices), per)
	require.Less(t, per, testkit.RaceSlowdown*50*time.Millisecond)
}

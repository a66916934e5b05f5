package diskhealthreceiver

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/metadata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device/devicetest"
)

// BenchmarkSMARTScrape measures one SMART scrape of n simulated disks (a quarter each of the QEMU
// SATA, IDE, NVMe and SAS disks): goroutines, decoding, health rules and pdata, without the ioctls.
func BenchmarkSMARTScrape(b *testing.B) {
	for _, n := range []int{4, 100, 1000} {
		b.Run(fmt.Sprintf("disks=%d", n), func(b *testing.B) {
			models := devicetest.QEMU(b, "k6.12")
			proto := []string{"sda", "sdb", "nvme0", "sdc"}
			m := &devicetest.Machine{}
			for i := range n {
				src := models.Disk(proto[i%len(proto)])
				info := src.Info
				info.Name = fmt.Sprintf("%s-%d", info.Name, i)
				info.Node = "/dev/" + info.Name
				info.ID = fmt.Sprintf("%s-%d", info.ID, i)
				m.Add(&devicetest.Disk{Info: info, Pages: maps.Clone(src.Pages), Power: src.Power})
			}
			s := newSMARTScraperWith(receivertest.NewNopSettings(metadata.Type), createDefaultConfig().(*Config), nil,
				device.Config{Timeout: time.Minute, Open: m.Open, Discover: m.Discover})
			b.Cleanup(func() { require.NoError(b, s.shutdown(b.Context())) })
			b.ReportAllocs()
			for b.Loop() {
				md, err := s.scrape(b.Context())
				require.NoError(b, err)
				require.Equal(b, n, md.ResourceMetrics().Len())
			}
		})
	}
}

//go:build linux

package device_test

import (
	"testing"

	smartgo "github.com/anatol/smart.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/device/devicetest"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/internal/fixture"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// FuzzLibraryAnswers feeds garbage and truncated drive answers through the seam: the fake library
// decodes them with smart.go's own structs, the device layer converts and decodes what smart.go
// returns (with smart.go's names, typed as the input says, so every raw format is decoded), and
// smart.go's own decoders (ParseAsTemperature, ParseAsDuration) run on every attribute. Nothing
// panics out of the layer; a bad answer costs only its own disk (the untouched disk reads ok), and
// the same answer fails the same way twice, so the source logs it once.
func FuzzLibraryAnswers(f *testing.F) {
	identify := fixture.Read(f, "qemu", "k6.12", "sda.ata_identify.bin")
	data := fixture.Read(f, "qemu", "k6.12", "sda.smart_read_data.bin")
	thresholds := fixture.Read(f, "qemu", "k6.12", "sda.smart_read_thresholds.bin")
	log := fixture.Read(f, "qemu", "k6.12", "nvme0.log02_smart_log.bin")
	f.Add(identify, data, thresholds, log, uint8(0))
	for typ := range uint8(smartgo.AtaDeviceAttributeTypeTemp10X + 2) {
		f.Add(identify, data, thresholds, log, typ)
	}
	for _, n := range []int{0, 1, 2, 361, 362, 511} {
		f.Add(identify[:n], data[:n], thresholds[:n], log[:n], uint8(smartgo.AtaDeviceAttributeTypeTempMinMax))
		f.Add(identify, data[:n], thresholds, log[:n], uint8(smartgo.AtaDeviceAttributeTypeMsec24Hour32))
	}
	ff := make([]byte, 512)
	for i := range ff {
		ff[i] = 0xFF
	}
	f.Add(ff, ff, ff, ff, uint8(smartgo.AtaDeviceAttributeTypeTempMinMax))
	f.Add(make([]byte, 512), ff, make([]byte, 512), make([]byte, 512), uint8(smartgo.AtaDeviceAttributeTypeRaw64))

	f.Fuzz(func(t *testing.T, identify, data, thresholds, log []byte, typ uint8) {
		m := devicetest.QEMU(t, "k6.12")
		sda := m.Disk("sda")
		sda.Pages[devicetest.ATAIdentify] = identify
		sda.Pages[devicetest.ATASMARTData] = data
		sda.Pages[devicetest.ATAThresholds] = thresholds
		for id, a := range sda.SmartGoAttrs {
			a.Type = int(typ)
			sda.SmartGoAttrs[id] = a
		}
		m.Disk("nvme0").Pages[devicetest.NVMeLog(nvme.LogSMART)] = log
		r := newReader(t, m, func(c *device.Config) { c.DriveDB = nil })

		var errs [2]map[string]string
		for i := range errs {
			res, err := r.Collect(t.Context())
			require.NoError(t, err)
			got := byName(t, res)
			assert.Equal(t, device.StatusOK, got["sdb"].Status, "another disk's answer costs this one nothing")
			assert.Equal(t, device.StatusOK, got["sdc"].Status)
			errs[i] = map[string]string{}
			for _, n := range []string{"sda", "nvme0"} {
				d := got[n]
				if d.Status != device.StatusOK {
					require.Error(t, d.Err, n)
					errs[i][n] = d.Err.Error()
				}
				if d.Snapshot != nil && d.Snapshot.ATA != nil {
					for _, a := range d.Snapshot.ATA.Attributes {
						_ = a.Raw.String()
					}
				}
			}
		}
		assert.Equal(t, errs[0], errs[1], "the same answer fails the same way: logged once")

		// smart.go's own decoders on every attribute the page holds, typed as the input says.
		var page smartgo.AtaSmartPageRaw
		raw := make([]byte, max(362, len(data)))
		copy(raw, data)
		for i := range page.Attrs {
			e := raw[2+12*i:]
			a := smartgo.AtaSmartAttr{Id: e[0], Type: int(typ), VendorBytes: [6]byte(e[5:11]),
				ValueRaw: uint64(e[5]) | uint64(e[6])<<8 | uint64(e[7])<<16 | uint64(e[8])<<24 | uint64(e[9])<<32 | uint64(e[10])<<40 | uint64(e[11])<<48}
			_, _, _, _, _ = a.ParseAsTemperature()
			_, _ = a.ParseAsDuration()
		}
	})
}
